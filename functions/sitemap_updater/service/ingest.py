"""Ingest: one event in; the page's state recorded if newer; its section marked dirty if its entry changed."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from sitemap_updater.core.entry import w3c_micros
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.pages import EntryItem, PageFields, PageRecord, PageWrite
from sitemap_updater.core.records import decode_states, encode_state
from sitemap_updater.core.reduce import PageState, state_from_event
from sitemap_updater.ports import Manifest
from sitemap_updater.service.dead_letters import DeadLetters, dead_letter, error_text, failure_reason
from sitemap_updater.service.marks import MarkBatch, requeue, stored
from sitemap_updater.service.pipeline import Pipeline

_ATTEMPTS = 5
_FIELDS = [f.name for f in fields(PageFields)]


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
    parsed = parse_event(body, pipeline.site, pipeline.horizon())
    event = parsed.event
    # The state is the event's alone (an upsert without lastmod shows its occurred_at), so the newest event
    # decides what is published whatever the order events arrived in.
    state = state_from_event(event)
    batch = marks if marks is not None else MarkBatch(pipeline)
    if event.news is not None:
        batch.news(event.url)
    for _ in range(_ATTEMPTS):
        outcome, change = _apply(state, pipeline, batch)
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
        outcome, _change = _apply(state, pipeline, None)
        if outcome is not None:
            return outcome
    raise IngestConflict(f"{state.url}: changed concurrently {_ATTEMPTS} times; will be retried")


def _apply(
    state: PageState, pipeline: Pipeline, marks: MarkBatch | None, read: PageRecord | None = None
) -> tuple[Outcome | None, str | None]:
    """One optimistic attempt; (None, None) when another writer got in first. Without ``marks`` (a bulk load),
    a change is recorded under no outbox and sends no marks. An update that stays in its section writes its entry
    alone when that entry is current (``_update``); anything else reads the page state and the item in its
    section and writes (``_change_page``). ``read``: the page state the caller read (a re-section), used as is."""
    if marks is not None and read is None and state.entry is not None:
        outcome = _update(state, pipeline, marks)
        if outcome is not None:
            return outcome
    store = pipeline.store
    page = read if read is not None else store.get_page(state.url)
    if page is None:
        return _record(page_write(state), None, pipeline, marks)
    item = store.entry_item(page.section, page.key, page.url)
    old = stored(page, item)
    if old is not page and (old.kind != page.kind or old.section != page.section):
        # The entry shows the page otherwise than its state does (a deletion that wrote its tombstone and stopped
        # before the state, or a state that lost its entry to a newer update): the state is brought up to it.
        store.put_state(_fields_write(old), page.rank, old.outbox)
        return None, None  # decided again on the next attempt
    return _decide(state, page.rank, old, item, pipeline, marks)


def _update(state: PageState, pipeline: Pipeline, marks: MarkBatch) -> tuple[Outcome | None, str | None] | None:
    """An update as one write: its entry, if the entry in its section is current and older. None when it is not
    (no entry there, a tombstone, a marker, an entry written before current entries were, or one older than the
    page state): the page state decides. The entry names the batch's outbox, so a redelivery finds its marks."""
    store = pipeline.store
    fresh = not marks.asked(state.url)
    outbox = marks.outbox_for(state.url)
    write = page_write(state)
    done, item = store.update_entry(write, outbox)
    if done and item is not None:
        # The change the entry recorded needs no marks of its own, even if its batch died before sending them: an
        # entry is current only when its change moved the page from no other section, and this change's marks
        # ask for the same section's rebuild, which reads this entry.
        (before,) = decode_states(item.record)
        if before.digest == state.digest and not _unsent_entry(item, pipeline, marks):
            if fresh:
                marks.settle(state.url)
            return Outcome.NOOP, None  # a newer event with the same entry: only the rank moved; nothing is dirty
        marks.add(replace(write, change="updated"))
        return Outcome.ACCEPTED, "updated"
    store = pipeline.store
    if (
        item is not None
        and item.current
        and (
            item.rank > state.rank
            or not item.outbox
            or (item.outbox != marks.outbox and not store.outbox_open(item.outbox))
        )
    ):  # stale, or a duplicate whose marks were sent
        if fresh:
            marks.settle(state.url)
        return (Outcome.STALE if item.rank > state.rank else Outcome.NOOP), None
    # A redelivery of a change whose marks may not have been sent (its entry names an outbox), or anything the
    # entry alone cannot decide: the page state decides.
    if fresh:
        marks.settle(state.url)  # asked again if the change is recorded below
    return None


def _unsent_entry(item: EntryItem, pipeline: Pipeline, marks: MarkBatch) -> bool:
    """Whether the change an entry recorded may have no marks sent: its batch's outbox is still open (or it is this
    batch's, not yet marked). An update with the same entry then marks the section in its place."""
    if not item.outbox:
        return False
    if item.outbox == marks.outbox:
        return True
    return pipeline.store.outbox_open(item.outbox)


def _fields_write(page: PageRecord) -> PageWrite:
    return PageWrite(**{name: getattr(page, name) for name in _FIELDS}, record=b"")


def _decide(
    state: PageState,
    expected: str,
    old: PageRecord,
    item: EntryItem | None,
    pipeline: Pipeline,
    marks: MarkBatch | None,
) -> tuple[Outcome | None, str | None]:
    """The page state (of rank ``expected``, as stored) and the item in its section read: ``old`` is the newer
    of the two. The writes, each conditional on its own item: a removal marker in each section the page leaves
    (and a deletion's tombstone in the page's own section), then the page state (on the rank read), then the
    entry; ``docs/architecture.md`` ("Ingest") explains why every crash point and race ends right."""
    store = pipeline.store
    done = item is not None and item.rank >= (old.entry_rank or old.rank)
    if state.rank == old.rank and not done:
        # This state's own writes may have stopped after the page state (a crash, a write that raised): finish them.
        write = replace(page_write(state), change=old.change, moved_from=old.moved_from)
        return _record(write, expected, pipeline, marks)
    unsent = _unsent(old, pipeline, marks)
    if state.rank <= old.rank:
        if unsent and (state.rank == old.rank or done):
            _send(old, pipeline, marks)  # its writes are done; unfinished ones are left to their event
        return (Outcome.STALE if state.rank < old.rank else Outcome.NOOP), None
    if item is not None and item.rank > state.rank:
        return Outcome.STALE, None  # a removal marker of a newer move, written before its page state
    write = page_write(state, old)
    unchanged = not unsent and _unchanged(old, write)
    complete = not unsent and bool(old.moved_from or unchanged) and done
    left = {old.section}
    if unsent or not complete:
        left.update(old.moved_from)  # the markers the stored move may not have written yet
    left_live = write.kind == "deleted" and old.kind == "live" and old.section != write.section
    write = replace(write, moved_from=tuple(sorted(left - {write.section})), left_live=left_live)
    if unsent and marks is None:
        requeue(pipeline, [old])  # a bulk load sends no marks of its own
    elif unchanged and complete and not write.moved_from:
        if write.kind == "live":
            if item is not None and item.current:  # the entry alone takes the rank; it marks nothing
                return (Outcome.NOOP, None) if store.update_entry(write, "")[0] else (None, None)
            # An entry written before entries were current: the state takes the rank, the entry becomes current.
            if not store.put_state(write, expected, ""):
                return None, None
            store.put_entry(write, current=True)
            return Outcome.NOOP, None
        # A newer deletion of a deleted page: only the rank moves, the tombstone (done) is kept; nothing is dirty.
        # Unless the item is not that tombstone: a move out of the section whose page state was never written
        # (it died after its removal marker) left its marker there, which moves no lastmod: the tombstone is
        # written again below.
        if item is not None and item.rank == (old.entry_rank or old.rank):
            kept = store.put_state(write, expected, "", old.entry_rank or old.rank)
            return (Outcome.NOOP, None) if kept else (None, None)
    return _record(write, expected, pipeline, marks, old if unsent else None)


def _record(
    write: PageWrite,
    expected: str | None,
    pipeline: Pipeline,
    marks: MarkBatch | None,
    unsent: PageRecord | None = None,
) -> tuple[Outcome | None, str | None]:
    """Remove the page from the sections it leaves (and write a deletion in its own section), then write the page
    state, then its entry; the marks (with those of ``unsent``, the replaced change whose marks may not have been
    sent) go with the batch's. Whatever could be current (an entry an update may replace alone) is replaced before
    the page state says otherwise, so no update lands in a section the page has left or on a page it deleted."""
    store = pipeline.store
    outbox = marks.outbox_for(write.url) if marks is not None else ""
    first = write.kind == "deleted" and expected is not None and not write.moved_from
    # A failed condition below means a newer event wrote the item first: its rank wins there, as it should; if
    # that is an update of a current entry, this event is stale and the next attempt finds it so.
    for section in write.moved_from:
        if not store.leave_section(section, write) and _current(store, section, write):
            return None, None
    if first and not store.put_entry(write, outbox) and _current(store, write.section, write, record=True):
        return None, None
    if not store.put_state(write, expected, outbox):
        return None, None
    # Current (an update may replace it alone) unless the change also left other sections: the next update then
    # reads the page state, which names them, in case this change's marks are never sent.
    current = write.kind == "live" and not write.moved_from
    if not first and not store.put_entry(write, outbox, current=current):
        found = store.entry_item(write.section, write.key, write.url)
        if found is not None and found.current and found.rank > write.rank:
            # An update of an entry that became current after this state's read got in first: the state follows it.
            (newer,) = decode_states(found.record)
            ahead = replace(page_write(newer), rank=found.rank, change="updated", moved_from=())
            store.put_state(ahead, write.rank, found.outbox)
            return None, None
    if marks is not None:
        if unsent is not None and not marks.has(unsent.url):
            marks.add(unsent)
        marks.add(write)
    return Outcome.ACCEPTED, write.change or None


def _current(store: Manifest, section: str, write: PageWrite, record: bool = False) -> bool:
    """After a write of the page's item in ``section`` failed: whether a newer entry an update may replace alone
    is there (``record``: or any newer entry)."""
    found = store.entry_item(section, write.key, write.url)
    return found is not None and found.rank > write.rank and (found.current or (record and bool(found.record)))


def _unsent(old: PageRecord, pipeline: Pipeline, marks: MarkBatch | None) -> bool:
    """Whether the stored change's marks may not have been sent: it was recorded by an event of this batch, or
    the batch that recorded it died before sending them (or is still running) and left its outbox open."""
    if not old.outbox:
        return False
    return (marks is not None and old.outbox == marks.outbox) or pipeline.store.outbox_open(old.outbox)


def _send(old: PageRecord, pipeline: Pipeline, marks: MarkBatch | None) -> None:
    """Send the marks of a recorded change that may have none: with this batch's if it recorded it, else now."""
    if marks is not None and old.outbox == marks.outbox:
        if not marks.has(old.url):
            marks.add(old)  # recorded by an event of this batch that then failed: its marks go out with the rest
    else:
        requeue(pipeline, [old])


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
    horizon = pipeline.horizon()
    for body in bodies:
        try:
            urls.append(parse_event(body, pipeline.site, horizon).event.url)
        except EventRejected:
            continue  # never recorded
    return urls


def page_write(state: PageState, old: PageRecord | None = None) -> PageWrite:
    """The items that record a page state (``old``: the state it replaces, to record how it changed and the
    section it leaves)."""
    kind = "live" if state.entry is not None else "deleted"
    section = state.entry.section if state.entry is not None else state.tombstone.section if state.tombstone else ""
    change = _change(old, kind) or ""
    moved_from = (old.section,) if old is not None and old.section != section else ()
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
            section_named=state.named,
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
        section_named=state.named,
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
