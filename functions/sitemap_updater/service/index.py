"""Index: rewrite sitemap.xml when its list or lastmods change; then let sections delete retired files.

Nothing is invalidated on the CDN: files and index carry a short cache lifetime (``cdn_max_age_seconds``), and
the index never claims more than the CDN may serve. A file whose bytes changed less than that lifetime ago is
named with the lastmod of the bytes it held before (the CDN may still serve those), and the index is rebuilt
again once the lifetime has passed. A file the index stops naming is deleted only after
``retired_file_grace_seconds``, so an index a CDN or crawler still holds never names a missing file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import (
    cleanup_message,
    index_change_record,
    pending_index_request,
    settle_index_request,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.render import IndexItem, render_index
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import index_window

UNSETTLED = "unsettled"  # the recorded index digest while a put is in flight (never a SHA-256)


class StaleIndex(RuntimeError):
    """Another index rebuild published a newer index during this one."""


@dataclass(slots=True)
class IndexRebuild:
    generation: int
    written: bool = False
    files: int = 0
    unnamed: list[str] = field(default_factory=list)
    settling: int = 0  # files named with their previous lastmod until the CDN's cache lifetime has passed


def index_items(named: list[PublishedFile], now_us: int, max_age_us: int) -> tuple[list[IndexItem], int]:
    """What the index names, as a crawler may see it through the CDN now: each file with its lastmod, or, for a
    file whose bytes changed within the cache lifetime, the lastmod of the bytes it held before. Returns the
    items and how many files are still settling."""
    items: list[IndexItem] = []
    settling = 0
    for published in named:
        if published.prev_lastmod_us and published.published_us > now_us - max_age_us:
            items.append(IndexItem(published.name, max(published.prev_lastmod_us, 0)))  # PREV_UNDATED: none
            settling += 1
        else:
            items.append(IndexItem(published.name, published.lastmod_us))
    return items, settling


def grace_over(published: PublishedFile, now_us: int, grace_us: int) -> bool:
    """Whether a file the index stopped naming may be deleted (no cached index names it any more)."""
    return published.state == "unnamed" and published.unnamed_us <= now_us - grace_us


def rebuild_index(pipeline: Pipeline) -> IndexRebuild:
    """Render the index from the live file records, as the CDN may serve them now; write it only when its bytes
    change. Mark the files section rebuilds published since the last index (``pending_index``) announced, move
    retiring files to unnamed, and ask their sections to delete unnamed files whose grace is over."""
    store = pipeline.store
    settings = pipeline.settings
    generation = store.next_index_generation()
    now = to_micros(pipeline.clock())
    records = store.files()
    named = [f for f in records if f.state == "live"]
    result = IndexRebuild(generation, files=len(named))
    current = store.index_sha()
    digest = ""
    if named:
        items, result.settling = index_items(named, now, settings.cdn_max_age_seconds * 1_000_000)
        index = render_index(pipeline.site.base_url, items)
        digest = hashlib.sha256(index).hexdigest()
        if digest != current:
            # Until the new digest is recorded the bucket may hold either index: a crash after the put must not
            # leave the old digest behind, or a later index equal to the old one would not be written.
            store.put_index_sha(UNSETTLED, generation)
            if not pipeline.bucket.publish(INDEX_NAME, index, generation):
                raise StaleIndex("a newer index was published meanwhile; retrying with a newer snapshot")
            store.put_index_sha(digest, generation)
            result.written = True
            pipeline.notify_queue.send(*index_change_record(generation, digest))
    elif current:  # the site has no pages left; an index must name at least one sitemap, so there is none
        pipeline.bucket.delete(INDEX_NAME)
        store.put_index_sha("", generation)
        result.written = True
    changed_since = [f for f in named if f.pending_index and not store.clear_pending_index(f)]
    if changed_since:  # published again since this index read it: its own request may have been merged away
        pipeline.index_queue.send(*pending_index_request(generation, *index_window(pipeline)))
    if result.settling:  # named with their previous lastmods: name their own once the CDN cannot serve the old
        pipeline.index_queue.send(*settle_index_request(generation, *index_window(pipeline)))  # delayed by L
    # Files unnamed before, whose grace is over, are deleted by their sections (asked again after a crash).
    grace = settings.retired_file_grace_seconds * 1_000_000
    sections: set[str] = {f.section for f in records if grace_over(f, now, grace)}
    for retiring in (f for f in records if f.state == "retiring"):
        if store.move_file_state(retiring, "retiring", "unnamed", now):
            result.unnamed.append(retiring.name)
            if grace == 0:
                sections.add(retiring.section)
    for section in sorted(sections):
        pipeline.rebuild_queue.send(*cleanup_message(section, generation))
    return result
