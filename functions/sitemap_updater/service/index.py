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

from sitemap_updater.core.freshness import index_wait_seconds
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import (
    cleanup_message,
    index_change_record,
    pending_index_request,
    settle_index_request,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.render import INDEX_FILE_PREFIX, IndexItem, is_further_index, render_indexes
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import index_window
from sitemap_updater.service.site_marks import ACTIVE

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
    indexes: list[str] = field(default_factory=list)  # index files written (their bytes changed)
    removed: list[str] = field(default_factory=list)  # index files deleted (no longer needed)


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


def _digest_text(digests: dict[str, str]) -> str:
    """The index record's digest: sitemap.xml's SHA-256 alone while it is the only index file (as ever), else
    ``name=sha256`` of each index file, space-separated."""
    if set(digests) <= {INDEX_NAME}:
        return digests.get(INDEX_NAME, "")
    return " ".join(f"{name}={digests[name]}" for name in sorted(digests))


def published_indexes(recorded: str | None) -> dict[str, str]:
    """The index files a recorded digest (``Manifest.index_sha``) names, with their digests; while unsettled, the
    further index files it names (their digests unknown)."""
    text = recorded or ""
    if text.startswith(UNSETTLED):
        return dict.fromkeys(text.split()[1:], "")
    if not text:
        return {}
    if "=" not in text:
        return {INDEX_NAME: text}
    return dict(part.split("=", 1) for part in text.split())


def grace_over(published: PublishedFile, now_us: int, grace_us: int) -> bool:
    """Whether a file the index stopped naming may be deleted (no cached index names it any more)."""
    return published.state == "unnamed" and published.unnamed_us <= now_us - grace_us


def settle_due_us(pipeline: Pipeline, named: list[PublishedFile], now_us: int) -> int:
    """When the index must name the own lastmods of the files it named with their previous ones (0: as soon as the
    CDN cannot serve the old bytes): the earliest of their puts plus their section's index wait
    (``index_wait_seconds``), the bound a lastmod of theirs has anyway. So a settle request joins the waiting ones
    instead of costing an index rebuild of its own."""
    settings = pipeline.settings
    max_age_us = settings.cdn_max_age_seconds * 1_000_000
    due = []
    for published in named:
        if published.prev_lastmod_us and published.published_us > now_us - max_age_us:
            freshness = settings.freshness_for(published.section)
            wait = index_wait_seconds(freshness, settings.cdn_max_age_seconds, bool(published.news_until_us))
            if not wait:
                return 0
            due.append(published.published_us + wait * 1_000_000)
    return max(1, min(due)) if due else 0


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
    published = published_indexes(current)
    if named:
        items, result.settling = index_items(named, now, settings.cdn_max_age_seconds * 1_000_000)
        indexes = render_indexes(pipeline.files.base_url, items, pipeline.limits.max_files_per_index)
        digests = {name: hashlib.sha256(data).hexdigest() for name, data in indexes.items()}
        digest = _digest_text(digests)
        if digest != current:
            # Until the new digests are recorded the bucket may hold either index: a crash after a put must not
            # leave the old digests behind, or a later index equal to an old one would not be written.
            # The names of both (the further index files of either), so a retry deletes those no longer needed.
            extra = sorted((set(published) | set(indexes)) - {INDEX_NAME})
            store.put_index_sha(" ".join([UNSETTLED, *extra]), generation)
            trusted = {} if current is None or current.startswith(UNSETTLED) else published
            changed = sorted(name for name in indexes if trusted.get(name) != digests[name])
            for name in changed:
                if not pipeline.bucket.publish(name, indexes[name], generation):
                    raise StaleIndex("a newer index was published meanwhile; retrying with a newer snapshot")
            # A site that has, or had, further index files (while unsettled, ``published`` names those alone): delete
            # those it no longer needs, also one an index rebuild of an older generation wrote meanwhile.
            if len(indexes) > 1 or any(is_further_index(name) for name in published):
                listed = pipeline.bucket.names(INDEX_FILE_PREFIX)
                further = {name for name in [*published, *listed] if is_further_index(name)}
                for gone in sorted(further - set(indexes)):
                    pipeline.bucket.delete(gone)
                    result.removed.append(gone)
            store.put_index_sha(digest, generation)
            result.written = True
            result.indexes = changed
            if pipeline.settings.announces_index:
                pipeline.notify_queue.send(*index_change_record(generation, digest, changed))
    elif current:  # the site has no pages left; an index must name at least one sitemap, so there is none
        for gone in sorted({INDEX_NAME, *published}):
            pipeline.bucket.delete(gone)
            result.removed.append(gone)
        store.put_index_sha("", generation)
        result.written = True
    changed_since = [f for f in named if f.pending_index and not store.clear_pending_index(f)]
    if changed_since:  # published again since this index read it: its own request may have been merged away
        pipeline.index_queue.send(*pending_index_request(generation, *index_window(pipeline)))
    if result.settling:  # named with their previous lastmods: name their own once the CDN cannot serve the old
        due = settle_due_us(pipeline, named, now)
        pipeline.index_queue.send(*settle_index_request(generation, *index_window(pipeline), due))  # delayed by L
    # Files unnamed before, whose grace is over, are deleted by their sections (asked again after a crash).
    grace = settings.retired_file_grace_seconds * 1_000_000
    sections: set[str] = {f.section for f in records if grace_over(f, now, grace)}
    retiring_files = [f for f in records if f.state == "retiring"]
    if retiring_files and pipeline.marks is not None:  # unnamed files: upkeep's cleanups once their grace is over
        pipeline.marks.touch(ACTIVE)
    for retiring in retiring_files:
        if store.move_file_state(retiring, "retiring", "unnamed", now):
            result.unnamed.append(retiring.name)
            if grace == 0 or retiring.removals_pending:  # its section announces the removals it left
                sections.add(retiring.section)
    # Removals left for an index before this one, whose section's request may have been lost to a crash.
    sections |= {f.section for f in records if f.state == "unnamed" and f.removals_pending}
    for section in sorted(sections):
        pipeline.rebuild_queue.send(*cleanup_message(section, generation))
    return result
