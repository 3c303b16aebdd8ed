"""Ingest: one event in; the page's state recorded if newer; its section marked dirty if its entry changed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sitemap_updater.core.entry import w3c_micros
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.pages import PageRecord, PageWrite
from sitemap_updater.core.records import encode_state
from sitemap_updater.core.reduce import PageState, state_from_event
from sitemap_updater.service.dead_letters import DeadLetters, dead_letter, error_text, failure_reason
from sitemap_updater.service.marks import MarkBatch, requeue
from sitemap_updater.service.pipeline import Pipeline

_ATTEMPTS = 5


class Outcome(StrEnum):
    ACCEPTED = "accepted"  # the page's entry changed; its section is marked dirty
    STALE = "stale"  # older than the stored state for its URL: ignored
    NOOP = "noop"  # a duplicate, or newer but with an unchanged entry: nothing is dirty


@dataclass(frozen=True, slots=True)
class IngestResult:
    outcome: Outcome
    url: str
    change: str | None  # added, updated, removed; None when no page appeared, changed or disappeared
    warnings: tuple[str, ...] = ()
    unknown_fields: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rejected:
    """A malformed event, sent to the dead-letter queue with its reason."""

    reason: str
    body: str


@dataclass(frozen=True, slots=True)
class DeadLettered:
    """An event that failed on its last allowed receive, sent to the dead-letter queue with the error."""

    reason: str
    body: str


def ingest_message(
    body: str, message_id: str, pipeline: Pipeline, receive_count: int = 1, marks: MarkBatch | None = None
) -> IngestResult | Rejected | DeadLettered:
    """Ingest one SQS message. A malformed event goes straight to the dead-letter queue with its reason
    (as the ``reason`` message attribute), so it never blocks or fails the rest of its batch. An event that
    fails (raises) is retried by SQS, and on the queue's last allowed receive goes to the dead-letter queue
    with its error as the reason, instead of being moved there by SQS without one. With ``marks``, the
    rebuild marks of a recorded change are added there (the caller flushes them, and the batch's outbox names
    every URL of the batch) instead of sent at once."""
    result: IngestResult | Rejected | DeadLettered
    try:
        result = ingest(body, pipeline, marks)
    except EventRejected as exc:
        reason = str(exc)
        dead_letter(pipeline.dead_letters, body, reason, message_id)
        result = Rejected(reason, body)
    except Exception as exc:
        if not DeadLetters(pipeline.dead_letters, pipeline.settings.ingest_max_receive_count).is_last(receive_count):
            raise
        reason = failure_reason(error_text(exc), receive_count)
        dead_letter(pipeline.dead_letters, body, reason, message_id, receive_count)
        result = DeadLettered(reason, body)
    pipeline.observe(result)
    return result


class IngestConflict(RuntimeError):
    """The page kept changing under this event; SQS will deliver it again."""


def ingest(body: str | bytes | dict[str, Any], pipeline: Pipeline, marks: MarkBatch | None = None) -> IngestResult:
    """Validate one event and record it. Raises EventRejected (naming the field) for malformed input. Without
    ``marks``, a change's marks are sent before this returns (through an outbox of its own)."""
    parsed = parse_event(body, pipeline.site)
    event = parsed.event
    # The state is the event's alone (an upsert without lastmod shows its occurred_at), so the newest event
    # decides what is published whatever the order events arrived in.
    state = state_from_event(event)
    batch = marks if marks is not None else MarkBatch(pipeline)
    for _ in range(_ATTEMPTS):
        outcome, change = _apply(state, pipeline.store.get_page(event.url), pipeline, batch)
        if outcome is not None:
            if marks is None:
                batch.flush()
            return IngestResult(outcome, event.url, change, parsed.warnings, parsed.unknown_fields)
    raise IngestConflict(f"{event.url}: changed concurrently {_ATTEMPTS} times; will be retried")


def record_state(pipeline: Pipeline, state: PageState) -> Outcome:
    """Record one page state of a bulk load (a bootstrap's export line) by an event's rank rules, without
    rebuild marks: the bootstrap renders every range afterwards. A newer state already recorded (a live event,
    or a newer line of another chunk) is kept. Raises IngestConflict when the page kept changing."""
    for _ in range(_ATTEMPTS):
        outcome, _change = _apply(state, pipeline.store.get_page(state.url), pipeline, None)
        if outcome is not None:
            return outcome
    raise IngestConflict(f"{state.url}: changed concurrently {_ATTEMPTS} times; will be retried")


def _apply(
    state: PageState, old: PageRecord | None, pipeline: Pipeline, marks: MarkBatch | None
) -> tuple[Outcome | None, str | None]:
    """One optimistic attempt; (None, None) when another writer got in first. Without ``marks`` (a bulk load),
    a change is recorded under no outbox and sends no marks."""
    pending = marks is not None and old is not None and old.outbox != "" and old.outbox == marks.outbox
    if old is not None:
        if marks is not None and pending and not marks.has(old.url):
            marks.add(old)  # recorded by an event of this batch that then failed: its marks go out with the rest
        elif not pending and old.outbox and pipeline.store.outbox_open(old.outbox):
            # The batch that recorded the stored change died before sending its marks (or is still running):
            # send them now, before anything overwrites the state. A newer write would record only the section
            # *it* leaves, so a section the lost change left would never be rebuilt and would keep the page.
            requeue(pipeline, [old])
        if state.rank < old.rank:
            return Outcome.STALE, None
        if state.rank == old.rank:
            return Outcome.NOOP, None
    write = page_write(state, old)
    expected = old.rank if old is not None else None
    if not pending and _unchanged(old, write):
        return (Outcome.NOOP, None) if pipeline.store.record_rank(write, expected) else (None, None)
    outbox = marks.outbox_for(write.url) if marks is not None else ""
    if not pipeline.store.record_change(write, expected, old.section if old is not None else None, outbox):
        return None, None
    if marks is not None:
        marks.add(write)
    return Outcome.ACCEPTED, write.change or None


def _unchanged(old: PageRecord | None, write: PageWrite) -> bool:
    """Whether ``write`` shows the page as ``old`` did: a newer event with the same entry changes no file."""
    return (
        old is not None
        and old.section == write.section
        and old.kind == write.kind
        and old.digest == write.digest
        and (write.kind == "live" or old.lastmod == write.lastmod)
    )


def event_urls(pipeline: Pipeline, bodies: list[str]) -> list[str]:
    """The canonical URLs of a batch's events (those that are valid): what its outbox names."""
    urls = []
    for body in bodies:
        try:
            urls.append(parse_event(body, pipeline.site).event.url)
        except EventRejected:
            continue  # never recorded
    return urls


def page_write(state: PageState, old: PageRecord | None = None) -> PageWrite:
    """The items that record a page state (``old``: the state it replaces, to record how it changed)."""
    kind = "live" if state.entry is not None else "deleted"
    section = state.entry.section if state.entry is not None else state.tombstone.section if state.tombstone else ""
    change = _change(old, kind) or ""
    moved_from = old.section if old is not None and old.section != section else ""
    if state.entry is not None:
        entry = state.entry
        return PageWrite(
            url=state.url,
            rank=state.rank,
            kind="live",
            section=entry.section,
            key=entry.key,
            digest=state.digest,
            lastmod=_lastmod_text(entry.body),
            change=change,
            moved_from=moved_from,
            record=encode_state(state),
        )
    assert state.tombstone is not None
    tomb = state.tombstone
    return PageWrite(
        url=state.url,
        rank=state.rank,
        kind="deleted",
        section=tomb.section,
        key=tomb.key,
        digest="",
        lastmod=w3c_micros(tomb.deleted_us),
        change=change,
        moved_from=moved_from,
        record=encode_state(state),
    )


def _lastmod_text(body: bytes) -> str:
    """The lastmod exactly as rendered (a date or a date-time), read back from the entry; "" when it has none."""
    start = body.find(b"<lastmod>") + len(b"<lastmod>")
    if start < len(b"<lastmod>"):
        return ""
    return body[start : body.index(b"</lastmod>", start)].decode()


def _change(old: PageRecord | None, kind: str) -> str | None:
    was_live = old is not None and old.kind == "live"
    if kind == "live":
        return "updated" if was_live else "added"
    return "removed" if was_live else None
