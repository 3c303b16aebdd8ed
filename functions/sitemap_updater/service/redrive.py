"""Redrive: send dead letters back to the queue they died on, only those another try can help.

A dead letter carries its reason (``service/dead_letters.py``). One that failed on every receive (a throttle, an
outage, a bug since fixed) is sent again to its queue, exactly as it was received, in its FIFO group and under a
deduplication ID of its own; one that was refused as it is (an invalid event, an unreadable message) stays where
it is, since the same bytes would be refused again; one without a reason (SQS's own redrive moved it) is sent
again only when asked.

Each dead letter is deleted only after its copy was sent, so a run that stops anywhere loses nothing: at worst a
message is in both queues. Sending it again then is harmless: on a FIFO queue SQS drops a copy with the same
deduplication ID within five minutes (and the run holds a message for less than that, so one that reappears after
a crash is sent again inside the window), and on the ingest queue a second copy of an event is a duplicate, which
the rank rules make a no-op. Every other message the run receives is held (invisible to other readers) until the
run ends, then released, so that a run reads each message once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from sitemap_updater.ports import MessageSource, Queue, QueuedMessage
from sitemap_updater.service.dead_letters import DeadLetterKind, classify

# How long a received dead letter stays invisible to other readers: shorter than the five minutes of FIFO
# deduplication, so that after a crash between a send and its delete the message reappears, and is sent again by
# the next run, while SQS still drops the copy.
HOLD_S = 120
WAIT_S = 1  # a long poll: a short poll of a standard queue may answer nothing while messages wait
DEFAULT_MAX = 100


class Action(StrEnum):
    REDRIVE = "redrive"  # sent to the queue again, then deleted here
    KEEP = "keep"  # left in the dead-letter queue
    DISCARD = "discard"  # deleted: refused as it is, and the operator asked for it


@dataclass(frozen=True, slots=True)
class RedriveOptions:
    limit: int = DEFAULT_MAX  # dead letters read at most
    dry_run: bool = False  # decide and report, change nothing
    matching: str | None = None  # redrive only the failures whose reason holds this text (any case)
    include_unexplained: bool = False  # also redrive dead letters without a reason
    discard_rejected: bool = False  # delete the rejected ones (after reporting them)


@dataclass(frozen=True, slots=True)
class Decision:
    """What a run does (or, in a dry run, would do) with one dead letter, and why."""

    message: QueuedMessage
    kind: DeadLetterKind
    action: Action

    @property
    def reason(self) -> str:
        return self.message.attributes.get("reason", "")


@dataclass(slots=True)
class RedriveResult:
    read: int = 0
    actions: dict[Action, int] = field(default_factory=lambda: dict.fromkeys(Action, 0))


def decide(message: QueuedMessage, options: RedriveOptions) -> Decision:
    """The action for one dead letter: a failure is redriven (when its reason matches ``matching``), a dead letter
    without a reason only when asked, and a rejected one never (deleted when asked)."""
    kind = classify(message.attributes)
    action = Action.KEEP
    if kind is DeadLetterKind.FAILED:
        wanted = options.matching is None or options.matching.casefold() in message.attributes["reason"].casefold()
        action = Action.REDRIVE if wanted else Action.KEEP
    elif kind is DeadLetterKind.UNEXPLAINED and options.include_unexplained:
        action = Action.REDRIVE
    elif kind is DeadLetterKind.REJECTED and options.discard_rejected:
        action = Action.DISCARD
    return Decision(message, kind, action)


class RedriveFailed(RuntimeError):
    """A send or a delete failed; the decision it stopped at says which message."""

    def __init__(self, decision: Decision, sent: bool, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.decision = decision
        self.sent = sent  # the copy was sent and the dead letter is still there: a later run sends it again


def redrive(
    dead_letters: MessageSource,
    queue: Queue,
    options: RedriveOptions,
    report: Callable[[Decision], None] = lambda _decision: None,
) -> RedriveResult:
    """Read up to ``options.limit`` dead letters and act on each (``decide``), reporting each decision once it is
    carried out. Raises :class:`RedriveFailed` at the first send or delete that fails; whatever the run still
    holds is released first, either way."""
    result = RedriveResult()
    held: dict[str, str] = {}  # message ID -> receipt, of the messages this run keeps invisible until it ends
    try:
        while result.read < options.limit:
            batch = dead_letters.receive(options.limit - result.read, HOLD_S, WAIT_S)
            for message in batch:
                if message.message_id in held:  # held so long that it became visible again: already reported
                    held[message.message_id] = message.receipt
            fresh = [m for m in batch if m.message_id not in held]
            if not fresh:
                break
            held.update((m.message_id, m.receipt) for m in fresh)  # released at the end unless deleted
            for message in fresh:
                result.read += 1
                decision = decide(message, options)
                if not options.dry_run and decision.action is not Action.KEEP:
                    _carry_out(dead_letters, queue, decision)  # on failure it stays held, and is released below
                    del held[message.message_id]
                result.actions[decision.action] += 1
                report(decision)
    finally:
        # Best effort: a message not released becomes visible again on its own once HOLD_S has passed.
        with contextlib.suppress(Exception):
            dead_letters.release(list(held.values()))
    return result


def _carry_out(dead_letters: MessageSource, queue: Queue, decision: Decision) -> None:
    message = decision.message
    sent = False
    try:
        if decision.action is Action.REDRIVE:
            # As received; on a FIFO queue in its own group, deduplicated by the dead letter's own deduplication ID
            # (its source message's ID), so that a copy sent again within five minutes is dropped.
            group = (message.group or message.message_id) if queue.fifo else None
            dedup = (message.dedup or message.message_id) if queue.fifo else None
            queue.send_raw_grouped(message.body, {}, group, dedup)
            sent = True
        dead_letters.delete(message.receipt)
    except Exception as exc:
        raise RedriveFailed(decision, sent, exc) from exc
