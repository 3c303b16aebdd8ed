"""Rebuild marks: what ingest sends once it has recorded changes, and the outbox that keeps them from being lost.

An ingest batch opens one outbox item (the URLs its events name) before it records its first change; each
page state it writes names that outbox. Once the batch's marks are sent the outbox is deleted. So a page state
whose outbox still exists may have marks that were never sent: the batch died (or is still running). A later
event for the page (a redelivery, or a newer change that would overwrite the section the page left) sends them
first, and the hourly sweep sends those of every outbox older than any ingest invocation can live, found with
one Query of the outbox partition. Two write units a batch (the outbox's put and delete) instead of three a
page (a sparse index entering and leaving, and clearing a flag).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from sitemap_updater.core.entry import w3c_micros
from sitemap_updater.core.messages import PageMark, mark_messages
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.pages import EntryItem, PageFields, PageRecord, PageWrite
from sitemap_updater.core.records import decode_states
from sitemap_updater.core.reduce import PageState
from sitemap_updater.ports import Manifest
from sitemap_updater.service.pipeline import Pipeline

# An ingest invocation lives at most its function's timeout (30 s in template.yaml; Lambda's own limit is
# 900 s): an outbox opened longer ago than this belongs to a batch that is over, so the sweep may send its marks.
OUTBOX_ABANDONED_S = 900

_opened = itertools.count()  # told apart outboxes of identical batches opened in the same microsecond


def lastmod_text(state: PageState) -> str:
    """The lastmod a page state records, as its page-state item holds it: the rendered one (a date or a date-time,
    "" when the entry has none), or a tombstone's moment of deletion."""
    if state.entry is None:
        assert state.tombstone is not None
        return w3c_micros(state.tombstone.deleted_us)
    body = state.entry.body
    start = body.find(b"<lastmod>") + len(b"<lastmod>")
    if start < len(b"<lastmod>"):
        return ""
    return body[start : body.index(b"</lastmod>", start)].decode()


def outbox_name(opened_us: int, batch: str) -> str:
    """An outbox's sort key: when it was opened (so the sweep can ask for old ones) and the batch."""
    return f"{opened_us:016x}#{batch}"


def opened_before(at_us: int) -> str:
    """The sort key below which every outbox was opened before ``at_us``."""
    return f"{max(0, at_us):016x}"


class MarkBatch:
    """The rebuild marks of recorded changes, sent together: one message per section for up to
    :data:`~sitemap_updater.core.messages.MAX_MARKS_PER_MESSAGE` pages, so one rebuild (of up to ten messages)
    covers many changes. ``batch_urls`` gives the URLs of the batch's events, asked for when the first change opens
    the outbox, which names them all. A crash before :meth:`flush` leaves the outbox open for the redelivered
    events or the sweep, and so does a change whose event failed after it may have been recorded (a write that
    raised): the outbox is deleted only when every URL it was asked for had its change added."""

    def __init__(self, pipeline: Pipeline, batch_urls: Callable[[], Iterable[str]] = tuple) -> None:
        self._pipeline = pipeline
        self._batch_urls = batch_urls
        self._pages: list[PageFields] = []
        self._asked: set[str] = set()  # URLs whose change may have been recorded under the outbox
        self._added: set[str] = set()
        self._news: set[str] = set()  # URLs whose newest event carries a news item
        self.outbox = ""

    def outbox_for(self, url: str) -> str:
        """The batch's outbox, opened now if this is its first change (before the change is recorded)."""
        if not self.outbox:
            urls = {url, *self._batch_urls()}
            opened_us = to_micros(self._pipeline.clock())
            digest = hashlib.sha256("\n".join(sorted(urls)).encode()).hexdigest()[:16]
            name = outbox_name(opened_us, f"{digest}{next(_opened):x}")
            self._pipeline.store.open_outbox(name, sorted(urls))
            self.outbox = name
        self._asked.add(url)
        return self.outbox

    def asked(self, url: str) -> bool:
        """Whether an event of this batch may have recorded a change of ``url`` under the outbox."""
        return url in self._asked

    def settle(self, url: str) -> None:
        """``url``'s event recorded no change that needs marks (stale, a duplicate, or an unchanged entry): the
        outbox need not stay open for it."""
        self._asked.discard(url)

    def add(self, page: PageFields) -> None:
        self._pages.append(page)
        self._added.add(page.url)

    def news(self, url: str) -> None:
        """Note that ``url``'s change is a page with a news item: its marks ask for the news freshness."""
        self._news.add(url)

    def has(self, url: str) -> bool:
        """Whether a change of ``url`` is among the marks to send."""
        return url in self._added

    def flush(self) -> None:
        """Send the marks (the changed section, and the one a page left), then close the outbox."""
        by_section: dict[str, list[PageMark]] = defaultdict(list)
        for page in self._pages:
            news = page.url in self._news
            # A deletion that moved the page out of a section where it was live is the removal of the sections it
            # left: their rebuilds announce it, once their files drop the page (or, none showing it, if the
            # search engines were told it exists); the deletion's own section showed no such page.
            left_live = isinstance(page, PageWrite) and page.left_live
            change = None if left_live else page.change or None
            by_section[page.section].append(PageMark(page.url, page.key, page.rank, change, news))
            for left in page.moved_from:
                by_section[left].append(PageMark(page.url, page.key, page.rank, "removed" if left_live else None))
        now_us = to_micros(self._pipeline.clock())
        messages = [m for s in sorted(by_section) for m in mark_messages(s, now_us, by_section[s], len(self._pages))]
        if messages:
            self._pipeline.rebuild_queue.send_batch(messages)  # in as few requests as SQS takes
        if self.outbox and self._asked <= self._added:
            self._pipeline.store.close_outbox(self.outbox)
        # else an event failed while recording its change: the outbox stays for its redelivery or the sweep
        self.outbox = ""
        self._pages.clear()
        self._asked.clear()
        self._added.clear()
        self._news.clear()


def requeue(pipeline: Pipeline, pages: Sequence[PageFields]) -> None:
    """Queue the rebuilds recorded changes need (their sections, and those they left), in as few messages as
    their sections allow. Their outbox is left to whoever opened it (the batch, or the sweep)."""
    marks = MarkBatch(pipeline)
    for page in pages:
        marks.add(page)
    marks.flush()


def written(store: Manifest, page: PageRecord) -> bool:
    """Whether every write of a stored page state is done: its entry (written last) has the rank it expects, or a
    newer one (an update in the section that wrote its entry alone). Until then no mark of it is sent: whoever
    finishes the writes sends them (the same marks sent earlier would be dropped by the rebuild queue's
    deduplication, and the rebuild they asked for may have missed the entry)."""
    rank = store.entry_rank(page.section, page.key, page.url)
    return rank is not None and rank >= (page.entry_rank or page.rank)


def stored(page: PageRecord, item: EntryItem | None) -> PageRecord:
    """The page as it stands: its page state, or, when the item in the state's section is an entry of a newer rank
    (an update in the section wrote its entry alone, or a deletion wrote its tombstone before the state), the state
    that entry records, naming the entry's outbox."""
    if item is None or not item.record or item.rank <= (page.entry_rank or page.rank):
        return page
    (state,) = decode_states(item.record)
    kind = "live" if state.entry is not None else "deleted"
    was_live = page.kind == "live"
    change = ("updated" if was_live else "added") if kind == "live" else ("removed" if was_live else "")
    return PageRecord(
        url=page.url,
        rank=item.rank,
        kind=kind,
        section=state.section,
        key=state.key,
        digest=state.digest,
        lastmod=lastmod_text(state),
        change=change,
        moved_from=(),
        outbox=item.outbox,
        entry_rank=item.rank,
        section_named=state.named,
    )


def sweep_outboxes(pipeline: Pipeline) -> int:
    """Send the marks of every outbox left open by a batch that is over, then close it; the pages sent. A page
    whose writes stopped after its state is left to its event's redelivery or to the page's next event. A page
    whose update wrote its entry alone is found by the outbox its entry names."""
    store = pipeline.store
    before = opened_before(to_micros(pipeline.clock()) - OUTBOX_ABANDONED_S * 1_000_000)
    sent = 0
    for outbox, urls in store.outboxes(before):
        pages = []
        for url in urls:
            page = store.get_page(url)
            if page is None:
                continue
            item = store.entry_item(page.section, page.key, page.url)
            now = stored(page, item)
            if now.outbox == outbox and item is not None and item.rank >= (now.entry_rank or now.rank):
                pages.append(now)
        requeue(pipeline, pages)
        store.close_outbox(outbox)
        sent += len(pages)
    return sent
