"""Use cases behind the SQS handlers: one message or one batch in, partial-failure answers out.

A message that fails on its queue's last allowed receive is sent to the queue's dead-letter queue with its error
as the ``reason`` (``service/dead_letters.py``) and reported handled, so none is moved there without one."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sitemap_updater.core.formats import UnknownFormat
from sitemap_updater.core.freshness import ready_at_us, section_hold
from sitemap_updater.core.messages import (
    INDEX_GROUP,
    NOTIFY_GROUP,
    DirtyMark,
    check_message,
    index_request_due_us,
    is_wake_up,
    merged_messages,
    read_rebuild_request,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.service.dead_letters import (
    UNREADABLE,
    DeadLetter,
    DeadLetters,
    Settled,
    error_text,
    receive_count,
    settle,
)
from sitemap_updater.service.index import IndexRebuild, rebuild_index
from sitemap_updater.service.notify import Notifiers, NotifyResult, NotifyRetry, notify
from sitemap_updater.service.parked import park_batch
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import SectionRebuild, rebuild_section


@dataclass(slots=True)
class BatchOutcome:
    """Message IDs that failed (to be retried), and what the rest did."""

    failures: list[str]
    sections: list[SectionRebuild]
    errors: dict[str, str]  # section -> error
    unreadable: dict[str, str] = field(default_factory=dict)  # message ID -> why it could not be read
    dead_lettered: list[DeadLetter] = field(default_factory=list)
    unsent: dict[str, str] = field(default_factory=dict)  # message ID -> why its dead-letter send failed
    deferred: dict[str, int] = field(default_factory=dict)  # section -> seconds its messages wait (given back)
    merged: dict[str, int] = field(default_factory=dict)  # section -> messages whose pages were sent again as fewer
    parked: int = 0  # messages kept for the end of a running import or bootstrap (service/bootstrap.py)

    def response(self) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": m} for m in self.failures]}


def rebuild_dead_letters(pipeline: Pipeline) -> DeadLetters:
    return DeadLetters(pipeline.rebuild_dead_letters, pipeline.settings.rebuild_max_receive_count)


def index_dead_letters(pipeline: Pipeline) -> DeadLetters:
    return DeadLetters(pipeline.index_dead_letters, pipeline.settings.index_max_receive_count)


def notify_dead_letters(pipeline: Pipeline) -> DeadLetters:
    return DeadLetters(pipeline.notify_dead_letters, pipeline.settings.notify_max_receive_count)


def rebuild_batch(records: list[dict[str, Any]], pipeline: Pipeline) -> BatchOutcome:
    """Coalesce a FIFO batch by section and rebuild each section once. A failed section fails all of its
    messages (so FIFO order holds); other sections still publish. Of a failed section's messages, those on
    their last allowed receive are dead-lettered with the error; a message that cannot be read fails alone."""
    if park_batch(pipeline, records):  # an import renders every section; these go out again when it ends
        return BatchOutcome([], [], {}, parked=len(records))
    by_section: dict[str, list[tuple[str, DirtyMark]]] = defaultdict(list)
    message_errors: dict[str, str] = {}
    outcome = BatchOutcome([], [], {})
    by_id = {str(record["messageId"]): record for record in records}
    for record in records:
        message_id = str(record["messageId"])
        try:
            marks = read_rebuild_request(json.loads(record["body"]))
        except Exception as exc:
            message_errors[message_id] = outcome.unreadable[message_id] = _unreadable("", exc)
            continue
        for mark in marks:
            by_section[mark.section].append((message_id, mark))
    for section in sorted(by_section):
        items = by_section[section]
        marks = [mark for _, mark in items]
        message_ids = list(dict.fromkeys(message_id for message_id, _ in items))  # the section's, in batch order
        section_records = [by_id[message_id] for message_id in message_ids]
        hold = hold_for(pipeline, section, marks)
        wait = hold.seconds
        if wait and _merge(pipeline, section, marks, section_records, hold):
            outcome.merged[section] = len(section_records)  # their pages wait in fewer messages, sent again
            continue
        if wait and _first_receive(section_records) and _defer(pipeline, section_records, min(wait, MERGE_SECONDS)):
            outcome.deferred[section] = min(wait, MERGE_SECONDS)
            outcome.failures += message_ids
            continue
        try:
            done = rebuild_section(pipeline, section, marks)
            if hold.due_us and any(m.due_us == hold.due_us for m in marks):
                pipeline.store.hold_due(section, 0)  # the merged request it was recorded for is rebuilt
            outcome.sections.append(done)
            pipeline.observe(done)
        except Exception as exc:
            error = error_text(exc)
            outcome.errors[section] = error
            for message_id in message_ids:
                # A message marking several failed sections is dead-lettered once, with every error.
                known = message_errors.get(message_id)
                message_errors[message_id] = f"{known}; {section}: {error}" if known else f"{section}: {error}"
    settled = settle(records, message_errors, rebuild_dead_letters(pipeline))
    _take(outcome, settled)
    return outcome


# Lambda's event source gives a FIFO function at most ten messages a batch: a section with that many whose pages
# cannot be merged into fewer messages is not made to wait (more would not fit in its next batch).
MAX_FIFO_BATCH = 10
# The longest a section's messages are given back to the queue at a time. Its FIFO group holds back every later
# message meanwhile; when they come back with those and the section must still wait, their pages are merged into
# as few messages as they fill and sent again (``_merge``), so a long hold is not cut short by ten messages.
MERGE_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Hold:
    """How long a section's rebuild waits (0: rebuild now), and when its oldest change here must be rebuilt."""

    seconds: int
    deadline_us: int = 0
    began_us: int = 0  # when the section's latest rebuild began (0: never)
    due_us: int = 0  # the due time of a merged request of the section, if after that


def settle_seconds(pipeline: Pipeline, section: str, marks: list[DirtyMark], records: list[dict[str, Any]]) -> int:
    return hold_for(pipeline, section, marks).seconds


def hold_for(pipeline: Pipeline, section: str, marks: list[DirtyMark]) -> Hold:
    """How long a section's rebuild should wait, by its freshness (``core/freshness.py``), when its messages
    name changed pages. A section rebuilt less than its hold ago waits until that rebuild's start plus the hold;
    a quiet one waits only for the rest of a burst (at least ``rebuild_settle_pages`` changed pages, or from an
    ingest batch that recorded as many); a lone change in a quiet section is rebuilt at once. Never past the
    oldest change's time plus the hold (for a page with a news item, the news hold), nor past the due time of a
    merged request of the section that may wait behind these messages in its group."""
    settings = pipeline.settings
    changed = [m for m in marks if m.url is not None and m.at_us is not None]
    news = any(m.news for m in changed)
    hold = section_hold(
        settings.freshness_for(section), settings.cdn_max_age_seconds, news, settings.ingest_window_seconds
    )
    if not changed or not hold:
        return Hold(0)
    pages = {(m.url, m.key) for m in changed}
    burst = max([len(pages), *(m.batch_changes for m in changed)]) >= settings.rebuild_settle_pages
    now = to_micros(pipeline.clock())
    began, due = pipeline.store.rebuild_times(section)
    oldest = min(m.at_us for m in changed if m.at_us is not None)
    ready = ready_at_us(oldest, now, began or None, hold, burst)
    if due > began:  # a merge since the section's latest rebuild began: its request may be behind these
        ready = min(ready, due)
    left_us = ready - now
    seconds = math.ceil(left_us / 1_000_000) if left_us > 0 else 0
    return Hold(seconds, oldest + hold * 1_000_000, began, due if due > began else 0)


def _first_receive(records: list[dict[str, Any]]) -> bool:
    """Whether every message is on its first receive (a wait takes a receive: never more than one)."""
    return len(records) < MAX_FIFO_BATCH and all(receive_count(r) <= 1 for r in records)


def _merge(pipeline: Pipeline, section: str, marks: list[DirtyMark], records: list[dict[str, Any]], hold: Hold) -> bool:
    """Send the pages of several waiting messages (or of one already given back once) again as fewer messages
    (new ones: on their first receive), so that the originals can be deleted; False (defer or rebuild as before)
    when they name anything but changed pages, when merging would not make them fewer, or if SQS refuses. The
    new messages go to the end of the section's group, maybe behind later ones: their due time is recorded
    first, and no request of the section is held past it."""
    if len(records) == 1 and receive_count(records[0]) <= 1:
        return False  # one fresh message: given back to the queue as it is
    if any(m.url is None or m.at_us is None for m in marks):
        return False  # a cleanup, news expiry or repair request: rebuilt when it comes
    due_us = min(hold.due_us or hold.deadline_us, hold.deadline_us)
    merged = merged_messages(section, marks, sorted(str(r["messageId"]) for r in records), due_us)
    if len(merged) >= max(2, len(records)):
        return False
    try:
        pipeline.store.hold_due(section, due_us)
        pipeline.rebuild_queue.send_batch(merged)
    except Exception:
        return False  # the originals stay: rebuilt at once, or given back
    return True


def _defer(pipeline: Pipeline, records: list[dict[str, Any]], seconds: int) -> bool:
    """Give a section's messages back to the queue for ``seconds``; False (rebuild now) if SQS refuses."""
    try:
        pipeline.rebuild_queue.defer([str(r.get("receiptHandle", "")) for r in records], seconds)
    except Exception:
        return False  # their visibility timeout is the function's sixfold: better to rebuild at once
    return True


def index_batch(records: list[dict[str, Any]], pipeline: Pipeline) -> tuple[IndexRebuild | str | int, Settled]:
    """Any number of index requests give one index rebuild, or, when every one of them may still wait (a section
    rebuild's that only moved lastmods, ``section_index_request``), none: they are given back to the queue until
    the first is due and the seconds are returned in place of the result. On failure every message is retried
    (those on their last receive dead-lettered with the error) and the error (its type and message) is returned in
    place of the result. A request that cannot be read (another format version) fails alone."""
    errors: dict[str, str] = {}
    due: list[int] = []
    for record in records:
        try:
            due.append(index_request_due_us(check_message(json.loads(record["body"]), "an index request")))
        except Exception as exc:
            errors[str(record["messageId"])] = _unreadable(" index request", exc)
    wait = _index_wait(pipeline, records, due) if not errors else 0
    if wait:
        return wait, Settled([str(r["messageId"]) for r in records])
    try:
        done = rebuild_index(pipeline)
    except Exception as exc:
        error = error_text(exc)
        for record in records:
            errors.setdefault(str(record["messageId"]), error)
        return error, settle(records, errors, index_dead_letters(pipeline), INDEX_GROUP)
    pipeline.observe(done)
    return done, settle(records, errors, index_dead_letters(pipeline), INDEX_GROUP)


def _index_wait(pipeline: Pipeline, records: list[dict[str, Any]], due: list[int]) -> int:
    """Seconds a batch of index requests that may all wait is given back to the queue for, until the first of
    them is due (0: rebuild now). Only on a first receive (a wait takes one; never two), and never while any
    request of the batch asks for the index at once. If SQS refuses, the index is rebuilt now."""
    if not due or 0 in due or not _first_receive(records):
        return 0
    left_us = min(due) - to_micros(pipeline.clock())
    seconds = math.ceil(left_us / 1_000_000) if left_us > 0 else 0
    if not seconds:
        return 0
    try:
        pipeline.index_queue.defer([str(r.get("receiptHandle", "")) for r in records], seconds)
    except Exception:
        return 0
    return seconds


def notify_batch(
    records: list[dict[str, Any]], pipeline: Pipeline, notifiers: Notifiers
) -> tuple[NotifyResult | str | None, Settled]:
    """All change records of a batch are coalesced into as few requests as possible. When a search engine
    keeps answering 429 or 5xx (the result is None), or the notifier fails (the result is the error), every
    message is retried (what was accepted is recorded and not resent), and those on their last receive are
    dead-lettered with the error. A record that cannot be read fails alone."""
    readable: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for record in records:
        try:
            body = json.loads(record["body"])
            if not is_wake_up(body):
                check_message(body, "a change record")
        except Exception as exc:
            errors[str(record["messageId"])] = _unreadable(" change record", exc)
            continue
        readable.append(body)
    result: NotifyResult | str | None
    try:
        done = notify(readable, pipeline, notifiers)
    except NotifyRetry as exc:
        result = None
        error = f"search engine busy: {error_text(exc)}"
    except Exception as exc:
        result = error = error_text(exc)
    else:
        pipeline.observe(done)
        return done, settle(records, errors, notify_dead_letters(pipeline), NOTIFY_GROUP)
    for record in records:
        errors.setdefault(str(record["messageId"]), error)
    return result, settle(records, errors, notify_dead_letters(pipeline), NOTIFY_GROUP)


def _unreadable(what: str, exc: Exception) -> str:
    """Why a message could not be read: ``unreadable`` (its bytes are the fault: a redrive would fail again), or
    of a format version this code does not read (one that reads it may: not called unreadable)."""
    return error_text(exc) if isinstance(exc, UnknownFormat) else f"{UNREADABLE}{what}: {error_text(exc)}"


def _take(outcome: BatchOutcome, settled: Settled) -> None:
    outcome.failures += settled.failures
    outcome.dead_lettered += settled.dead_lettered
    outcome.unsent.update(settled.unsent)
