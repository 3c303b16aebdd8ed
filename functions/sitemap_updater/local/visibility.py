"""Virtual time for a local run: a message given back to its queue comes back when AWS would bring it back.

On AWS a message whose invocation failed (raised, or reported it in ``batchItemFailures``) is visible again once its
queue's ``VisibilityTimeout`` has passed since it was received; a message a function gave back itself with
ChangeMessageVisibility (the rebuild's wait for the rest of a burst) once the seconds it chose have passed since that
call. Meanwhile a FIFO message blocks its group. A local run does not sleep for that: it keeps each such message
invisible on the local queue (a FIFO group stays blocked, as on AWS), notes when it is due in the run's virtual time
(:class:`VirtualClock`), and when no queue has a visible message moves its clock on to the next due time and makes
the messages due by then visible again.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sitemap_updater.service.pipeline import utc_now

MAX_VISIBILITY_S = 43_200  # SQS: no message stays invisible longer than 12 hours
_MARGIN_S = 60
_PARAMS = "sitemap_updater_visibility"


class VirtualClock:
    """A local run's clock: ``base`` (the real clock unless a caller gives one) plus every wait the run skipped
    instead of sleeping. The functions read it as the pipeline's clock."""

    def __init__(self, base: Callable[[], datetime] | None = None) -> None:
        self._base = base or utc_now
        self.skipped = 0.0  # seconds of waiting skipped so far

    def __call__(self) -> datetime:
        return self._base() + timedelta(seconds=self.skipped)

    def seconds(self) -> float:
        """Now, in POSIX seconds."""
        return self().timestamp()

    def skip_to(self, moment: float) -> float:
        """Move on to ``moment`` (POSIX seconds) if it is later than now; returns the seconds skipped."""
        ahead = max(0.0, moment - self.seconds())
        self.skipped += ahead
        return ahead


@dataclass(frozen=True, slots=True)
class Redelivery:
    """Messages of one invocation given back to their queue, and when they were visible again (POSIX seconds)."""

    function: str
    queue: str
    messages: int
    why: str  # "failed": after the queue's VisibilityTimeout; "deferred": after the visibility the function chose
    received_at: float
    visibility_s: int
    visible_again_at: float

    def as_dict(self, start: float) -> dict[str, Any]:
        """As the report shows it: times in seconds since the wave began (``start``)."""
        return {
            "function": self.function,
            "queue": self.queue,
            "messages": self.messages,
            "why": self.why,
            "received_s": round(self.received_at - start, 3),
            "visibility_s": self.visibility_s,
            "visible_again_s": round(self.visible_again_at - start, 3),
        }


@dataclass(slots=True)
class _Held:
    url: str
    receipt: str
    due: float


@dataclass
class Visibility:
    """The messages a local run keeps invisible until they are due, and the visibility the functions chose."""

    clock: VirtualClock
    sqs: Any  # the runner's own SQS client (not watched)
    redeliveries: list[Redelivery] = field(default_factory=list)
    _held: list[_Held] = field(default_factory=list)
    _chosen: dict[str, tuple[float, int]] = field(default_factory=dict)  # receipt -> (due, seconds)
    _timeouts: dict[str, int] = field(default_factory=dict)  # queue URL -> its VisibilityTimeout

    # --- what the functions do ------------------------------------------------------------------------
    def watch(self, client: Any) -> Any:
        """Note the visibility a function gives its messages through ``client`` (a botocore SQS client)."""
        if client.meta.service_model.service_name == "sqs":
            events = client.meta.events
            for operation in ("ChangeMessageVisibility", "ChangeMessageVisibilityBatch"):
                events.register(f"before-parameter-build.sqs.{operation}", _remember)
                events.register(f"after-call.sqs.{operation}", self._changed)
        return client

    def _changed(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_kwargs: Any) -> None:
        params = context.get(_PARAMS, {})
        now = self.clock.seconds()
        if model.name == "ChangeMessageVisibility":
            entries = [params] if "Error" not in parsed else []
        else:
            done = {entry["Id"] for entry in parsed.get("Successful", [])}
            entries = [entry for entry in params.get("Entries", []) if entry.get("Id") in done]
        for entry in entries:
            seconds = int(entry["VisibilityTimeout"])
            self._chosen[str(entry["ReceiptHandle"])] = (now + seconds, seconds)

    # --- the runner's side ----------------------------------------------------------------------------
    def give_back(self, function: str, queue: str, url: str, failed: list[Any], received_at: float) -> None:
        """``failed`` (received at ``received_at``) go back to the queue: each due after the visibility its function
        chose, else after the queue's VisibilityTimeout since it was received. Each stays invisible until then."""
        chosen, self._chosen = self._chosen, {}
        if not failed:
            return
        timeout = self._timeout(url)
        batches: dict[tuple[str, int, float], int] = {}
        for message in self._hold(url, failed):  # none that SQS no longer has in flight (deleted meanwhile)
            receipt = str(message["ReceiptHandle"])
            due, seconds = chosen.get(receipt, (received_at + timeout, timeout))
            why = "deferred" if receipt in chosen else "failed"
            batches[why, seconds, due] = batches.get((why, seconds, due), 0) + 1
            self._held.append(_Held(url, receipt, due))
        for (why, seconds, due), count in batches.items():
            self.redeliveries.append(Redelivery(function, queue, count, why, received_at, seconds, due))

    def _hold(self, url: str, messages: list[Any]) -> list[Any]:
        """Keep ``messages`` invisible on the local queue (as long as SQS allows) until the run releases them;
        returns those held."""
        now_ms = time.time() * 1000
        held: list[Any] = []
        for start in range(0, len(messages), 10):
            batch = messages[start : start + 10]
            entries = []
            for i, message in enumerate(batch):
                sent_ms = float(message.get("Attributes", {}).get("SentTimestamp", now_ms))
                age = math.ceil(max(0.0, now_ms - sent_ms) / 1000)
                hold = max(1, MAX_VISIBILITY_S - age - _MARGIN_S)
                entries.append({"Id": str(i), "ReceiptHandle": message["ReceiptHandle"], "VisibilityTimeout": hold})
            answer = self.sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)
            held += [batch[int(entry["Id"])] for entry in answer.get("Successful", [])]
        return held

    def release_due(self) -> None:
        """Make every held message that is due by now visible again."""
        now = self.clock.seconds()
        due = [h for h in self._held if h.due <= now]
        if not due:
            return
        self._held = [h for h in self._held if h.due > now]
        for url in dict.fromkeys(h.url for h in due):
            receipts = [h.receipt for h in due if h.url == url]
            for start in range(0, len(receipts), 10):
                entries = [
                    {"Id": str(i), "ReceiptHandle": receipt, "VisibilityTimeout": 0}
                    for i, receipt in enumerate(receipts[start : start + 10])
                ]
                answer = self.sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)
                if answer.get("Failed"):  # it would stay invisible for hours: the run could not drain
                    raise RuntimeError(f"SQS did not make a held message visible again: {answer['Failed'][0]}")

    def next_due(self) -> float | None:
        """When the next held message is due (None: none is held)."""
        return min((h.due for h in self._held), default=None)

    def _timeout(self, url: str) -> int:
        if url not in self._timeouts:
            attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
            self._timeouts[url] = int(attributes["Attributes"]["VisibilityTimeout"])
        return self._timeouts[url]


def _remember(params: dict[str, Any], context: dict[str, Any], **_kwargs: Any) -> None:
    context[_PARAMS] = params
