"""How a bootstrap's hold on the import ends, whatever ends its execution, and only once no worker it started can
still write.

``Begin`` holds the import for its execution (the ``import`` item names the execution's ARN): rebuild requests are
parked meanwhile. The hold is released (``release``: the item deleted if, and only if, that execution still holds
it; the parked requests sent to the rebuild queue again; the index asked for) by

- the state machine itself, after ``Finish`` or after a failure a ``Catch`` sees, each time behind a Wait of
  ``RELEASE_AFTER_S``: a Distributed Map that fails stops its child executions, but not the Lambda invocations they
  made, which run to their end (at most the worker's timeout, 900 s); a retried item's earlier invocation may do the
  same when only its answer was lost;
- ``check``, which the worker runs every ``CHECK_EVERY_S`` on a schedule, for the endings no ``Catch`` sees
  (``States.Runtime``, ``States.DataLimitExceeded``, the execution's timeout, an operator's StopExecution): once
  DescribeExecution says the holder stopped at least ``RELEASE_AFTER_S`` ago (or no longer exists), it releases
  the hold as the state machine would have. It also sends again requests still parked when nothing holds the
  import (a release that died half way), and reports how long the import has been held and how old the oldest
  parked request is: the two alarms of the template watch those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sitemap_updater.core.messages import bootstrap_index_request
from sitemap_updater.core.moments import to_micros
from sitemap_updater.ports import Executions
from sitemap_updater.service.parked import replay_parked
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import index_window

WORKER_TIMEOUT_S = 900  # BootstrapFunction's Timeout: no invocation of the worker runs longer
RELEASE_AFTER_S = WORKER_TIMEOUT_S + 60  # a minute for clocks and for Step Functions to record the stop
CHECK_EVERY_S = 300  # the worker's schedule, rate(5 minutes)
EXECUTION_TIMEOUT_S = 48 * 3600  # the state machine's TimeoutSeconds
# The alarms' bound: the longest a bootstrap may hold the import (its timeout, the wait, two checks), rounded up.
HELD_ALARM_S = 48 * 3600 + 30 * 60
STOPPED = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})  # RUNNING and PENDING_REDRIVE may still write


def release(pipeline: Pipeline, run: str, execution: str) -> dict[str, Any]:
    """End ``execution``'s hold on the import: the rebuild function works again, the requests it parked are sent
    again and the index function names every file published. Idempotent, and a no-op for the parked requests
    while another execution (or an import) holds the import: they wait for that one's end."""
    ended = pipeline.store.end_import(execution)
    replayed = 0
    if not pipeline.store.import_running():
        replayed = replay_parked(pipeline)
        # The index function names the ranges' files (their records are pending for it), as after any rebuild.
        pipeline.index_queue.send(*bootstrap_index_request(run, *index_window(pipeline)))
    return {"ended": ended, "replayed": replayed}


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one scheduled check saw and did."""

    held_s: int  # how long the import has been held (0: not held)
    holder: str  # the execution holding it ("" when none, or an import from the command line)
    holder_status: str  # as DescribeExecution says ("" when not asked; "GONE" when it no longer exists)
    released: bool
    replayed: int
    oldest_parked_s: int  # the age of the oldest parked request (0: none)

    def as_dict(self) -> dict[str, Any]:
        return {"held_s": self.held_s, "holder": self.holder, "holder_status": self.holder_status,
                "released": self.released, "replayed": self.replayed,
                "oldest_parked_s": self.oldest_parked_s}  # fmt: skip


def check(pipeline: Pipeline, executions: Executions) -> CheckResult:
    """Release a hold whose execution stopped ``RELEASE_AFTER_S`` ago or more (see the module's note)."""
    now = to_micros(pipeline.clock())
    hold = pipeline.store.import_hold()
    status, released, replayed = "", False, 0
    if hold is not None and hold.execution:
        state = executions.describe(hold.execution)
        status = "GONE" if state is None else state.status
        if state is None or (state.status in STOPPED and now - state.stopped_us >= RELEASE_AFTER_S * 1_000_000):
            outcome = release(pipeline, hold.run, hold.execution)
            released, replayed = bool(outcome["ended"]), int(outcome["replayed"])
            hold = pipeline.store.import_hold()
    if hold is None and not released and pipeline.store.oldest_parked_us() is not None:
        replayed += replay_parked(pipeline)  # nothing holds the import: a release that died half way
    oldest = pipeline.store.oldest_parked_us()
    return CheckResult(
        held_s=max(0, (now - hold.began_us) // 1_000_000) if hold is not None and hold.began_us else 0,
        holder=hold.execution if hold is not None else "",
        holder_status=status,
        released=released,
        replayed=replayed,
        oldest_parked_s=max(0, (now - oldest) // 1_000_000) if oldest is not None else 0,
    )
