"""Re-section: move every page whose section the Sections setting gave to the section the current setting gives.

A page's section is decided when its event is recorded: the event's ``section`` field, else the site's Sections
setting. After the setting changes, a bootstrap started with ``{"run": ..., "resection": true}`` runs these steps
instead of loading an export (``BootstrapStateMachine`` in template.yaml), while it holds the import:

1. ``segments``: the list of Scan segments (``SEGMENTS`` of them), written to ``_bootstrap/<run>/segments.json``
   for the next map.
2. ``resection``, one segment at a time and again while its Scan has more (each call reads at most
   ``PAGES_A_CALL`` Scan pages of 1 MB and answers where the next starts, so no step's payload grows): each page
   state whose event named no section and whose section differs from what the setting gives is moved by ingest's
   own writes (``ingest._apply``: the page state conditional on the rank just read, a removal marker in the old
   section, the entry in the new one). The moved state's rank extends the stored one (``reduce.moved_rank``), so
   a newer event still wins: one arriving meanwhile fails the condition and is kept (it was recorded with the new
   setting already). A call run again moves nothing twice: a moved page is where the setting puts it.
   Each call's live pages are counted by section into ``_bootstrap/<run>/counts/`` (once per call: a retry keeps
   the first count; an estimate from above is all ``plan`` needs), where ``plan`` reads a load's chunk counts.
3. ``plan``, ``render``, ``finish`` and ``release`` as for a load (``service/bootstrap.py``): every section with
   published files or counted pages is rendered again, so pages appear in their new sections' files and leave
   the old ones, and a section left empty has its files retired.
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace
from typing import Any

from sitemap_updater.core.formats import BOOTSTRAP
from sitemap_updater.core.pages import PageFields, PageRecord, PageWrite
from sitemap_updater.core.reduce import PageState, is_moved, rank_order
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.ports import Manifest
from sitemap_updater.service.bootstrap import (
    PREFIX,
    RECORD_THREADS,
    BootstrapError,
    _checked_item,
    _holding,
    _run,
    write_counts,
)
from sitemap_updater.service.ingest import _ATTEMPTS, Outcome, _apply, page_write
from sitemap_updater.service.marks import stored
from sitemap_updater.service.pipeline import Pipeline

SEGMENTS = 16  # parallel Scan segments (the map's children); DynamoDB allows up to 1,000,000
PAGES_A_CALL = 50  # Scan pages (1 MB each) one call reads at most: well within the worker's 900 s
SCAN_LIMIT: int | None = None  # items a Scan page reads at most (None: DynamoDB's 1 MB alone)
_FIELDS = [f.name for f in fields(PageFields)]


def segments_name(run: str) -> str:
    return f"{PREFIX}{_run(run)}/segments.json"


def segments(pipeline: Pipeline, run: str, total: int | None = None) -> dict[str, Any]:
    """Write the Scan segments' list for the map (the list written first stands: a retry, or a run resumed)."""
    total = SEGMENTS if total is None else total
    items = [{"v": BOOTSTRAP, "segment": i, "total": total} for i in range(total)]
    name = segments_name(run)
    if not pipeline.bucket.put_if_absent(name, json.dumps(items, separators=(",", ":")).encode()):
        total = len([_checked_item(item, name) for item in json.loads(pipeline.bucket.read(name) or b"[]")])
    return {"key": name, "segments": total}


def _target(pipeline: Pipeline, page: PageRecord) -> str:
    """The section a page belongs in now: the one its event named, else the one the setting gives."""
    return page.section if page.section_named else pipeline.site.section_of(page.url)


def needs_move(pipeline: Pipeline, page: PageRecord) -> bool:
    """Whether a page (as a Scan read it) may need this pass: its event named no section and it is elsewhere than
    the setting puts it, or a re-section moved it and its removal markers may not all be written."""
    if page.section_named:
        return False
    return page.section != _target(pipeline, page) or (is_moved(page.rank) and bool(page.moved_from))


def move_page(pipeline: Pipeline, url: str) -> str:
    """Move one page to the section the setting gives, if its event named none: "moved", "finished" (a move cut
    short: its markers written now), "kept" (where it belongs, named by its event, or gone) or "unfinished" (the
    stored state's own writes are not done: its event, sent again, finishes them under the new setting). Raises
    BootstrapError when the page kept changing.

    The moved entry is written first, then ingest's writes (``ingest._apply``: the removal marker in the old
    section, the page state conditional on the rank read, the entry again, which finds itself there): the marker
    replaces the only copy of the entry, so the copy must already be in the new section when it is written. A
    move cut short after its marker is finished by the next pass over the page (``_resume``), and one cut short
    after its page state by an earlier version's order (state, then marker) too (``_finish``); one cut short
    before them is made again with the same rank; one that lost its page state to a newer event takes its entry
    back."""
    store = pipeline.store
    for _ in range(_ATTEMPTS):
        read = store.get_page(url)  # strongly consistent: the Scan's copy may be older
        if read is None:
            return "kept"
        # The page as it stands: an update in its section may have written its entry alone, after the state.
        item = store.entry_item(read.section, read.key, read.url)
        old = stored(read, item)
        if old.section_named:
            return "kept"
        section = _target(pipeline, old)
        if old.section == section:
            return _finish(store, read)
        if item is not None and not item.record and is_moved(item.rank) and item.rank > old.rank:
            return _resume(pipeline, read, old, section)
        if item is None or item.rank < (old.entry_rank or old.rank):
            return "unfinished"
        # One Query of the page's key (the worker reads ranges by Query; no BatchGetItem), then its URL.
        found = [s for s in store.entries(old.section, KeyRange(old.key, old.key + 1, 64)) if s.url == old.url]
        if len(found) != 1:
            return "unfinished"
        state = _moved(found[0], old, section)
        ahead = page_write(state, old)
        store.put_entry(ahead)
        outcome, _change = _apply(state, pipeline, None, read)
        if outcome is Outcome.ACCEPTED:
            return "moved"
        # Another writer changed the page first: take back the entry written ahead (a marker just above its rank,
        # below any rank a later event or move of the page has), unless a newer entry is there already.
        store.leave_section(section, replace(ahead, rank=ahead.rank + " "))
    raise BootstrapError(f"url: {url!r} changed concurrently {_ATTEMPTS} times; the segment will be retried")


def _resume(pipeline: Pipeline, read: PageRecord, old: PageRecord, section: str) -> str:
    """A move cut short after its removal marker, before its page state: its entry is ahead in ``section``, the old
    section holds its marker; the page state and the entry are written now, by the same rank ("finished")."""
    found = [s for s in pipeline.store.entries(section, KeyRange(old.key, old.key + 1, 64)) if s.url == old.url]
    if len(found) != 1:
        return "unfinished"
    outcome, _change = _apply(_moved(found[0], old, section), pipeline, None, read)
    return "finished" if outcome is Outcome.ACCEPTED else "unfinished"


def _finish(store: Manifest, page: PageRecord) -> str:
    """A page where it belongs: if a re-section moved it, write each removal marker it names that is not there
    yet (a move cut short after its page state); each is conditional on an older rank, so this repeats nothing."""
    if not is_moved(page.rank):
        return "kept"
    marker = PageWrite(**{name: getattr(page, name) for name in _FIELDS}, record=b"")
    wrote = False
    for left in page.moved_from:
        if store.entry_rank(left, page.key, page.url) != page.rank:
            wrote = store.leave_section(left, marker) or wrote
    return "finished" if wrote else "kept"


def _moved(current: PageState, old: PageRecord, section: str) -> PageState:
    """``old``'s page state in ``section``: its entry (or tombstone) as stored, the order of its rank, a rank that
    extends it."""
    order = rank_order(old.rank)
    if current.entry is not None:
        return PageState(old.url, order, current.entry._replace(section=section), None, False, old.rank)
    assert current.tombstone is not None
    tomb = current.tombstone
    return PageState(old.url, order, None, type(tomb)(tomb.url, tomb.key, section, tomb.deleted_us), False, old.rank)


def resection_segment(
    pipeline: Pipeline,
    run: str,
    execution: str,
    segment: int,
    total: int,
    cursor: dict[str, str] | None,
    threads: int | None = None,
) -> dict[str, Any]:
    """Move the pages of up to ``PAGES_A_CALL`` Scan pages of one segment from ``cursor`` (see the module's note);
    the answer names where the segment goes on (``cursor``: None when it is done) and what was done."""
    _holding(pipeline, execution)
    if not 0 <= segment < total <= 1_000_000:
        raise BootstrapError(f"segment: {segment} of {total} is not a Scan segment")
    threads = RECORD_THREADS if threads is None else threads
    outcomes: Counter[str] = Counter()
    live: Counter[str] = Counter()
    scanned, start = 0, cursor
    for _ in range(PAGES_A_CALL):
        records, cursor = pipeline.store.scan_pages(segment, total, cursor, SCAN_LIMIT)
        candidates = [p.url for p in records if needs_move(pipeline, p)]
        if threads > 1 and len(candidates) > 1:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                outcomes.update(pool.map(lambda url: move_page(pipeline, url), candidates))
        else:
            outcomes.update(move_page(pipeline, url) for url in candidates)
        scanned += len(records)
        live.update(_target(pipeline, p) for p in records if p.kind == "live")
        if cursor is None:
            break
    # The call's live pages by section, once per call (named by where it began: a retry keeps the first count).
    where = f"resection/{segment}/{total}/{json.dumps(start, sort_keys=True)}"
    write_counts(pipeline, run, where, live)
    return {"run": run, "execution": execution, "segment": segment, "total": total, "cursor": cursor,
            "pages": scanned, "moved": outcomes["moved"], "finished": outcomes["finished"],
            "unfinished": outcomes["unfinished"]}  # fmt: skip
