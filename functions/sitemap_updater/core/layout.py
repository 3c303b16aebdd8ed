"""From a set of entries to the files of a site: ranges per section, file lastmods, and the index."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sitemap_updater.core.entry import Entry
from sitemap_updater.core.reduce import Tombstone
from sitemap_updater.core.render import FILE_OVERHEAD, IndexItem, RenderedFile, render_indexes, render_urlset
from sitemap_updater.core.sharding import INDEX_NAME, KeyRange, Limits, plan_ranges, range_lastmod
from sitemap_updater.core.snapshots import PendingPut, SnapshotRef


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One sitemap file of a section: its key range, name, entries (sorted) and data-derived lastmod."""

    section: str
    key_range: KeyRange
    name: str
    entries: Sequence[Entry]
    lastmod_us: int


def plan_section(
    section: str, entries: Sequence[Entry], deleted: Sequence[tuple[int, int]], limits: Limits
) -> list[PlannedFile]:
    """Plan the files of one section. ``entries`` are sorted by ``sort_key``; ``deleted`` holds sorted
    ``(key, deleted_us)`` pairs of the section's tombstones, which only move file lastmods."""
    keys = [e.key for e in entries]
    lastmods = [e.lastmod_us for e in entries]
    planned = []
    for key_range in plan_ranges(keys, [e.size for e in entries], limits, FILE_OVERHEAD):
        members = entries[bisect_left(keys, key_range.start) : bisect_left(keys, key_range.end)]
        lastmod = range_lastmod(keys, lastmods, deleted, key_range)
        planned.append(PlannedFile(section, key_range, key_range.file_name(section), members, lastmod))
    return planned


@dataclass(frozen=True, slots=True)
class SiteFiles:
    """Every file of a site: sitemap files by name, and the index bytes."""

    files: dict[str, RenderedFile]
    indexes: dict[str, bytes]  # sitemap.xml, and further index files past the files one index may name
    index_items: tuple[IndexItem, ...]

    @property
    def index(self) -> bytes:
        return self.indexes[INDEX_NAME]

    @property
    def url_count(self) -> int:
        return sum(f.url_count for f in self.files.values())

    def all_bytes(self) -> dict[str, bytes]:
        """File name -> published bytes, the index included."""
        return {**{name: f.data for name, f in self.files.items()}, **self.indexes}


def build_site(
    entries: Iterable[Entry],
    tombstones: Iterable[Tombstone],
    limits: Limits,
    as_of_us: int,
    base_url: str,
) -> SiteFiles:
    """Render a whole site in memory (for small sites, tests and reference models)."""
    by_section: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        by_section[entry.section].append(entry)
    deleted: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for tomb in tombstones:
        deleted[tomb.section].append((tomb.key, tomb.deleted_us))
    files: dict[str, RenderedFile] = {}
    items = []
    for section in sorted(by_section):
        members = sorted(by_section[section], key=lambda e: e.sort_key)
        for plan in plan_section(section, members, sorted(deleted[section]), limits):
            files[plan.name] = render_urlset(plan.entries, as_of_us)
            items.append(IndexItem(plan.name, plan.lastmod_us))
    index_items = tuple(sorted(items))
    return SiteFiles(files, render_indexes(base_url, index_items, limits.max_files_per_index), index_items)


PREV_UNDATED = -1  # PublishedFile.prev_lastmod_us of a name whose earlier bytes showed no lastmod


@dataclass(frozen=True, slots=True)
class PublishedFile:
    """What is recorded about a published sitemap file: its range, content digest, lastmod and counts.

    ``state`` is ``writing`` (about to be put under a name nothing else records; never named by the index),
    ``live`` (named by the index), ``retiring`` (left the layout; still named until the next index) or
    ``unnamed`` (the published index no longer names it; deleted once the CDN can no longer serve an index
    naming it).
    """

    section: str
    key_range: KeyRange
    name: str
    sha256: str
    lastmod_us: int
    url_count: int
    entry_bytes: int
    state: str = "live"
    news_until_us: int = 0  # when the oldest news entry it shows turns two days old (0: none)
    pending_index: bool = False  # published, not yet announced by an index rebuild (named, invalidated)
    unsettled: bool = False  # a put of other bytes under this name may have happened: never skip a render
    published_us: int = 0  # when its bytes were put: until the CDN's cache lifetime has passed it may serve others
    # the lastmod of the bytes the name held before, for the index meanwhile (0: it held none; PREV_UNDATED: it
    # held bytes none of whose pages had a lastmod)
    prev_lastmod_us: int = 0
    unnamed_us: int = 0  # when the index stopped naming it
    snapshot: SnapshotRef = field(kw_only=True)  # the block of the states its bytes were rendered from
    # While a rebuild publishes under the name (``unsettled`` or ``writing``): the bytes it is about to put, and the
    # blocks of bytes earlier attempts put and died before recording, which a crawler may have seen; the record a
    # rebuild writes once its change record is sent has neither.
    pending: PendingPut | None = None
    shown: tuple[SnapshotRef, ...] = ()
    # The ETag S3 answered the put of its bytes with ("": not known, as in a record written before 1.1): the next
    # put under the name is tried If-Match it, without a HEAD first.
    etag: str = ""
    # A file a rebuild retired without announcing the removals of the pages only it showed (the index names it until
    # its next rebuild): its section announces them once the index has stopped naming it, then clears this.
    removals_pending: bool = False

    def snapshot_keys(self) -> set[str]:
        """The objects of snapshots this record names."""
        refs = [self.snapshot, *self.shown, *([self.pending.snapshot] if self.pending is not None else [])]
        return {ref.key for ref in refs}
