"""Every way a bootstrap execution ends, through the state machine's harness on a local stack: the hold on the
import is released, the rebuild requests parked meanwhile are published, rebuilds work again, and nothing is
released before the last worker the execution started has answered; the alarms' metrics say how long it held."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.core.sharding import Limits
from sitemap_updater.local.bootstrap import (
    DATA_LIMIT,
    RUNTIME,
    Clock,
    Execution,
    LocalStateMachine,
    StatesError,
    StillRunning,
)
from sitemap_updater.local.runner import LocalRun
from sitemap_updater.ports import ImportHold
from sitemap_updater.service.bootstrap_release import RELEASE_AFTER_S
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import FIXED_NOW, LocalRunFactory, bodies
from tests.integration.test_iam import _published_urls

MAX_URLS = 10
PAGES = 100  # a section: two ranges of 50 URLs (core/bootstrap_plan.py cuts at four files' worth)
LIVE = f"{BASE}/docs/live-during-the-bootstrap"
AFTER = f"{BASE}/news/after-the-bootstrap"


def _pages(count: int) -> list[dict[str, Any]]:
    return [event(f"{BASE}/{s}/p{i}", version=1, lastmod="2026-11-11") for s in ("blog", "docs") for i in range(count)]


def _start(local_run: LocalRunFactory, run: str, parts: int = 2) -> tuple[LocalRun, LocalStateMachine, Clock]:
    """A local stack whose clock is the harness's, and an export of 200 pages in ``parts`` chunks."""
    clock = Clock(FIXED_NOW)
    stack = local_run(MAX_URLS, clock=clock.now)
    machine = LocalStateMachine(stack, clock=clock)
    lines = bodies(_pages(PAGES))
    machine.upload(run, [("\n".join(lines[i::parts]) + "\n").encode() for i in range(parts)])
    return stack, machine, clock


def _change_while_held(stack: LocalRun) -> Any:
    """A change sent while the bootstrap holds the import: recorded, its rebuild request parked."""

    def before(state: str) -> None:
        if state == "LoadChunks":
            stack.send_wave(bodies([event(LIVE, version=1, lastmod="2026-11-20")]))
            assert stack.pipeline.store.oldest_parked_us() is not None  # parked, not rebuilt

    return before


def _metrics(stack: LocalRun) -> list[tuple[int, int]]:
    """(ImportHeldSeconds, OldestParkedSeconds) of every check so far that reported either, from the worker's metric
    logs (a check reports each only above 0)."""
    found = []
    for line in stack.logs:
        if line.startswith("{") and ('"ImportHeldSeconds"' in line or '"OldestParkedSeconds"' in line):
            data = json.loads(line)  # EMF: each metric's values in a list (one a check)
            found.append((int(*data.get("ImportHeldSeconds", [0])), int(*data.get("OldestParkedSeconds", [0]))))
    return found


def _released_after_the_last_worker(machine: LocalStateMachine, execution: Execution) -> float:
    """When the hold was released (the call that ended it), checked to be after every worker's answer."""
    workers = [c for c in machine.calls if c.execution == execution.arn and c.step not in ("release", "check")]
    releases = [c for c in machine.calls if c.answer and (c.answer.get("ended") or c.answer.get("released"))]
    assert len(releases) == 1, releases
    assert releases[0].started_s >= max(c.ended_s for c in workers)
    return releases[0].started_s


def _operator_sees_it_ended(stack: LocalRun) -> None:
    """The import item is gone, the parked change is published, and a change sent now is published at once."""
    store = stack.pipeline.store
    assert store.import_hold() is None and store.parked() == []
    stack.drain()
    stack.send_wave(bodies([event(AFTER, version=1, lastmod="2026-11-21")]))
    assert {LIVE, AFTER} <= _published_urls(stack)
    assert store.parked() == []


def test_success_releases_after_the_wait_and_publishes_the_parked_change(local_run: LocalRunFactory) -> None:
    stack, machine, _ = _start(local_run, "fine")
    execution = machine.execute("fine", before=_change_while_held(stack))
    assert execution.status == "SUCCEEDED"
    assert execution.states[-3:] == ["Finish", "WaitForLastWorkers", "Release"]
    assert execution.output["release"]["replayed"] == 1
    released = _released_after_the_last_worker(machine, execution)
    finished = max(c.ended_s for c in machine.calls if c.step == "finish")
    assert released - finished >= RELEASE_AFTER_S  # a retried item's first invocation may still have run
    _operator_sees_it_ended(stack)
    assert reference_site(_pages(PAGES), Limits(max_urls=MAX_URLS)).all_bytes().keys() <= stack.published().keys()


def test_a_failed_map_releases_only_after_its_workers_still_running_have_written(local_run: LocalRunFactory) -> None:
    # Given a bootstrap whose first range's worker runs on for 800 s while the second fails on every attempt
    stack, machine, _ = _start(local_run, "failing")

    def inject(state: str, payload: dict[str, Any], attempt: int) -> None:
        if state == "RenderRange" and payload["section"] == "blog":
            if payload["start"].startswith("0"):
                raise StillRunning(800)
            raise RuntimeError("the worker died")

    execution = machine.execute("failing", inject=inject, before=_change_while_held(stack))
    # Then the execution fails with the worker's error, after releasing the hold
    assert execution.status == "FAILED" and execution.error is not None
    assert execution.error["Error"] == "States.ExceedToleratedFailureThreshold"
    assert "the worker died" in execution.error["Cause"]
    assert execution.states[-3:] == ["WaitAfterFailure", "ReleaseAfterFailure", "Failed"]
    # And the worker still running answered 800 s after the failure, before the release (the old immediate
    # release replayed the parked requests while it was still writing)
    late = [c for c in machine.calls if c.step == "render" and c.payload["start"].startswith("0")]
    assert [c.payload["section"] for c in late] == ["blog"] and late[0].answer is not None
    failed_at = max(c.ended_s for c in machine.calls if c.execution == execution.arn and c.step == "plan")
    assert late[0].ended_s >= failed_at + 800
    _released_after_the_last_worker(machine, execution)
    _operator_sees_it_ended(stack)


@pytest.mark.parametrize(("state", "error"), [("Plan", RUNTIME), ("RenderRange", DATA_LIMIT)])
def test_an_error_no_catch_sees_is_released_by_the_scheduled_check(
    local_run: LocalRunFactory, state: str, error: str
) -> None:
    # Given a bootstrap that fails with an error States.ALL neither retries nor catches
    stack, machine, clock = _start(local_run, "uncaught")

    def inject(name: str, payload: dict[str, Any], attempt: int) -> None:
        if name == state:
            raise StatesError(error, "injected")

    execution = machine.execute("uncaught", inject=inject, before=_change_while_held(stack))
    assert execution.status == "FAILED" and execution.error == {"Error": error, "Cause": "injected"}
    assert "WaitAfterFailure" not in execution.states  # no Catch ran: the import is still held
    store = stack.pipeline.store
    assert store.import_hold() is not None
    # When the scheduled check runs before the release wait is over, it leaves the hold and reports its age
    clock.advance(RELEASE_AFTER_S - 10)
    first = machine.check()
    assert (first["holder_status"], first["released"]) == ("FAILED", False)
    assert first["held_s"] >= RELEASE_AFTER_S - 10 and first["oldest_parked_s"] > 0
    # And the next one, five minutes later, releases it and sends the parked request again
    clock.advance(300)
    second = machine.check()
    assert (second["released"], second["replayed"], second["held_s"], second["oldest_parked_s"]) == (True, 1, 0, 0)
    assert _metrics(stack) == [(first["held_s"], first["oldest_parked_s"])]  # nothing held or parked: no metric
    _released_after_the_last_worker(machine, execution)
    _operator_sees_it_ended(stack)


def test_a_timed_out_execution_is_released_once_its_last_worker_cannot_write(local_run: LocalRunFactory) -> None:
    # Given a bootstrap whose second chunk's worker is still writing 300 s after the execution's timeout
    stack, machine, clock = _start(local_run, "slow")
    timeout = float(machine.definition["TimeoutSeconds"])

    def inject(state: str, payload: dict[str, Any], attempt: int) -> None:
        if state == "LoadChunk" and payload["key"].endswith("part-00001.jsonl"):
            clock.advance(timeout + 300 - clock.seconds)

    execution = machine.execute("slow", inject=inject, before=_change_while_held(stack))
    assert execution.status == "TIMED_OUT" and execution.stopped_s == timeout
    assert [c.ended_s for c in machine.calls if c.step == "chunk"][-1] == timeout + 300
    # When the check runs 700 s after the timeout, the hold stays; at 1,000 s it is released
    clock.advance(400)
    assert machine.check()["released"] is False
    clock.advance(300)
    assert machine.check()["released"] is True
    _released_after_the_last_worker(machine, execution)
    _operator_sees_it_ended(stack)


def test_an_operator_stop_mid_map_is_released_after_the_running_worker_and_a_new_run_resumes(
    local_run: LocalRunFactory,
) -> None:
    # Given a bootstrap stopped by its operator while a range's worker runs, which answers 600 s later
    stack, machine, clock = _start(local_run, "stopped")
    ranges: list[str] = []

    def inject(state: str, payload: dict[str, Any], attempt: int) -> None:
        if state == "RenderRange":
            ranges.append(payload["start"])
            if len(ranges) == 2:
                machine.stop()
                clock.advance(600)

    execution = machine.execute("stopped", inject=inject, before=_change_while_held(stack))
    assert execution.status == "ABORTED" and len(ranges) == 2  # no range started after the stop
    stopped_at = execution.stopped_s
    assert stopped_at is not None
    # When a new execution starts while the stopped one holds the import, its Begin refuses
    refused = machine.execute("stopped")
    assert refused.status == "FAILED" and refused.states == ["Begin"]
    assert assert_refusal(refused, execution.arn)
    # And the scheduled check leaves the hold until no worker of the stopped execution can write, then releases
    assert machine.check()["released"] is False  # 600 s after the stop
    clock.advance(RELEASE_AFTER_S - 600 - 1)
    assert machine.check()["released"] is False
    clock.advance(1)
    assert machine.check()["released"] is True
    _released_after_the_last_worker(machine, execution)
    _operator_sees_it_ended(stack)
    # Then the same run started again completes the site
    again = machine.execute("stopped")
    stack.drain()
    assert again.status == "SUCCEEDED"
    expected = [
        *_pages(PAGES),
        event(LIVE, version=1, lastmod="2026-11-20"),
        event(AFTER, version=1, lastmod="2026-11-21"),
    ]
    assert stack.published() == reference_site(expected, Limits(max_urls=MAX_URLS)).all_bytes()


def assert_refusal(execution: Execution, holder: str) -> bool:
    assert execution.error is not None and execution.error["Error"] == "BootstrapError"
    return holder in execution.error["Cause"] and "holds the import" in execution.error["Cause"]


def test_the_import_item_is_taken_and_deleted_only_by_its_own_execution_on_dynamodb(
    local_run: LocalRunFactory,
) -> None:
    store = local_run(MAX_URLS).pipeline.store
    mine, other = (
        "arn:aws:states:us-east-1:1:execution:s-bootstrap:a",
        "arn:aws:states:us-east-1:1:execution:s-bootstrap:b",
    )
    assert store.begin_import(ImportHold(mine, "run", 5)) and store.begin_import(ImportHold(mine, "run", 9))
    assert not store.begin_import(ImportHold(other, "run", 7))
    assert store.import_hold() == ImportHold(mine, "run", 5) and store.import_running()
    assert store.oldest_parked_us() is None
    assert store.park(f"{12:016x}#m-2", [("blog", "b")]) and store.park(f"{11:016x}#m-1", [("docs", "a")])
    assert store.oldest_parked_us() == 11
    assert not store.end_import(other) and store.import_hold() is not None
    assert store.end_import(mine) and store.import_hold() is None and not store.end_import(mine)
