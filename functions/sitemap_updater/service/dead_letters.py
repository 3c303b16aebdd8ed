"""Never a dead letter without its reason: a message failing on its queue's last allowed receive is sent to the
dead-letter queue by its consumer, with the error as the ``reason`` message attribute, and reported handled,
instead of being moved there by SQS's redrive with no reason at all."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sitemap_updater.ports import Queue

REASON_LIMIT = 1000  # characters of the reason kept in the message attribute
# The error of a message its function could not read at all (a rebuild request, a change record): its body is
# the fault, so no number of receives can help.
UNREADABLE = "unreadable"
_FAILED = re.compile(r"failed on all (\d+) receives: (.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class DeadLetters:
    """A queue's dead-letter queue as its consumer sees it. ``max_receive_count`` is the queue's
    ``maxReceiveCount`` (its RedrivePolicy); 0, or no queue, leaves failures to SQS."""

    queue: Queue | None
    max_receive_count: int

    def is_last(self, receive_count: int) -> bool:
        """Whether a message received this many times fails for good if it fails now."""
        return self.queue is not None and 0 < self.max_receive_count <= receive_count


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message sent to its dead-letter queue with its reason."""

    message_id: str
    reason: str


@dataclass(slots=True)
class Settled:
    """What became of a batch's failed messages: retried by SQS, or dead-lettered with their reason."""

    failures: list[str] = field(default_factory=list)  # message IDs SQS delivers again
    dead_lettered: list[DeadLetter] = field(default_factory=list)  # reported handled
    # Messages on their last receive whose dead-letter send failed (message ID -> the send's error): they are
    # among the failures, so SQS's redrive moves them (without a reason; the error is logged).
    unsent: dict[str, str] = field(default_factory=dict)


def failure_reason(error: str, receive_count: int) -> str:
    """The reason of a message that failed on every receive (``error``: the exception's type and message)."""
    return f"failed on all {receive_count} receives: {error}"


class DeadLetterKind(StrEnum):
    """What a dead letter's attributes say about sending it again (``classify``)."""

    # failed on every receive (a throttle, an outage, a bug, a format this version does not read): another try, or
    # one by the version that reads it, may succeed
    FAILED = "failed"
    REJECTED = "rejected"  # refused as it is (invalid input, an unreadable body): the same bytes fail again
    UNEXPLAINED = "unexplained"  # no reason: SQS's redrive moved it (its consumer's dead-letter send failed too)


def classify(attributes: Mapping[str, str]) -> DeadLetterKind:
    """The kind of a dead letter from its message attributes, as ``dead_letter`` wrote them: a failure carries
    ``receive_count`` and a reason made by ``failure_reason``; a rejection (ingest's validation, a bootstrap's
    export line) carries a reason only."""
    reason = attributes.get("reason")
    if not reason:
        return DeadLetterKind.UNEXPLAINED
    failed = _FAILED.fullmatch(reason)
    if failed is None or "receive_count" not in attributes:
        return DeadLetterKind.REJECTED
    if failed.group(2).startswith(UNREADABLE):
        return DeadLetterKind.REJECTED
    return DeadLetterKind.FAILED


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def dead_letter(
    queue: Queue,
    body: str,
    reason: str,
    message_id: str,
    receive_count: int | None = None,
    group: str | None = None,
) -> None:
    """Send ``body`` as it is to a dead-letter queue, with ``reason`` and the source message's ID (and how many
    times it was received) as message attributes. On a FIFO queue it keeps its message group (``group``, else
    its message ID) and is deduplicated by its message ID, so a retried send is one message."""
    attributes = {"reason": reason[:REASON_LIMIT], "source_message_id": message_id}
    if receive_count is not None:
        attributes["receive_count"] = str(receive_count)
    if queue.fifo:
        queue.send_raw_grouped(body, attributes, group or message_id, message_id)
    else:
        queue.send_raw(body, attributes)


def receive_count(record: Mapping[str, Any]) -> int:
    """How many times SQS has delivered this record (its ``ApproximateReceiveCount``; 1 if absent)."""
    return int((record.get("attributes") or {}).get("ApproximateReceiveCount") or 1)


def message_group(record: Mapping[str, Any]) -> str | None:
    """The record's FIFO message group, if it has one."""
    group = (record.get("attributes") or {}).get("MessageGroupId")
    return str(group) if group else None


def settle(
    records: Iterable[Mapping[str, Any]],
    errors: Mapping[str, str],
    dead_letters: DeadLetters,
    default_group: str | None = None,
) -> Settled:
    """Settle the failed records of a batch (``errors``: message ID -> the error that failed it). A record on
    its last allowed receive is dead-lettered with its error and reported handled; every other failed record
    (and one whose dead-letter send fails) is given back to SQS, in batch order."""
    settled = Settled()
    for record in records:
        message_id = str(record["messageId"])
        error = errors.get(message_id)
        if error is None:
            continue
        count = receive_count(record)
        if dead_letters.queue is None or not dead_letters.is_last(count):
            settled.failures.append(message_id)
            continue
        reason = failure_reason(error, count)
        group = message_group(record) or default_group
        try:
            dead_letter(dead_letters.queue, str(record.get("body", "")), reason, message_id, count, group)
        except Exception as exc:  # SQS will move it without a reason; say why in the log
            settled.failures.append(message_id)
            settled.unsent[message_id] = error_text(exc)
            continue
        settled.dead_lettered.append(DeadLetter(message_id, reason))
    return settled
