"""Rebuild: re-render only the sitemap files of a section that hold changed pages, then queue the index.

The plan is the one a full build would make (the layout is a pure function of the section's pages), but it is
computed from the recorded counts of untouched files plus the manifest of the touched key ranges only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate

from sitemap_updater.core.freshness import index_wait_seconds
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import DirtyMark, change_records, section_index_request
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.render import FILE_OVERHEAD
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange, plan_with, text_twin, uncovered
from sitemap_updater.core.snapshots import unpack_block
from sitemap_updater.core.states import Block, Run, States, merged
from sitemap_updater.service.announce import Announcement, announce_unnamed
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.publish import Job, collect_snapshots, publish_files, snapshot_id
from sitemap_updater.service.rebuild_changes import announcement
from sitemap_updater.service.site_marks import ACTIVE


@dataclass(slots=True)
class SectionRebuild:
    """What one section rebuild did."""

    section: str
    put: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    changed_urls: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # of the entries now shown; "" when removed
    lastmods: dict[str, int] = field(default_factory=dict)  # what each page shown now has (or its publish moment)
    ranks: dict[str, str] = field(default_factory=dict)  # of the page state each changed URL's entry shows now
    entries_read: int = 0
    snapshots_read: int = 0
    latencies_s: list[float] = field(default_factory=list)  # from a change's record to its publish, per URL


def _inside(inner: KeyRange, outer: KeyRange) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end


def position(state: PageState) -> tuple[int, str]:
    """Where a state stands in a file and in its snapshot: by key, then URL."""
    return state.key, state.url


def _holds_any(key_range: KeyRange, keys: list[int]) -> bool:
    """Whether ``key_range`` holds any of ``keys`` (sorted)."""
    i = bisect_left(keys, key_range.start)
    return i < len(keys) and keys[i] < key_range.end


def _region_for(key: int, live: list[PublishedFile]) -> KeyRange:
    """The file range holding ``key``; for a key in no file, the largest empty node on its path."""
    for published in live:
        if published.key_range.contains(key):
            return published.key_range
    start, end, depth = 0, KEY_SPACE, 0
    while any(f.key_range.start < end and start < f.key_range.end for f in live):
        mid = (start + end) // 2
        start, end = (start, mid) if key < mid else (mid, end)
        depth += 1
    return KeyRange(start, end, depth)


class _Section:
    """Exact data where pages changed, recorded counts elsewhere. A live file's data is its snapshot (the states
    it was last rendered from, a block its record names in the bucket) with the marked pages read again, when
    the snapshot belongs to the file's current bytes; otherwise the file's whole manifest."""

    def __init__(
        self, pipeline: Pipeline, section: str, live: list[PublishedFile], marked: list[tuple[int, str]]
    ) -> None:
        self._pipeline = pipeline
        self.section = section
        self.live = live
        self._marked = sorted(set(marked))  # (key, URL) of the pages whose marks this rebuild handles
        self.loaded: dict[KeyRange, States] = {}
        self._keys: dict[KeyRange, list[int]] = {}  # keys of live entries, sorted
        self._sizes: dict[KeyRange, list[int]] = {}  # running totals of their sizes
        self._state_keys: dict[KeyRange, list[int]] = {}  # keys of every loaded state (tombstones too), sorted
        self.entries_read = 0
        self.snapshots_read = 0
        self._snapshots: dict[str, tuple[str, bytes] | None] = {}  # read ahead, by file name
        self.kept: dict[KeyRange, States] = {}  # the states of each snapshot read, as it holds them
        self._asked: set[tuple[int, str]] = set()  # marked pages whose entries were read ahead
        self._entries: dict[tuple[int, str], PageState] = {}  # what that found

    def read_ahead(self, files: list[PublishedFile]) -> None:
        """Read the snapshots of ``files`` at once (each waits on one S3 round trip) and the marked pages' entries
        in one go, before ``load`` takes them one file at a time."""
        self._snapshots.update(self._pipeline.fan_out(lambda f: (f.name, self._read_snapshot(f)), files))
        pages = [page for page in self._marked if any(f.key_range.contains(page[0]) for f in files)]
        self._asked.update(pages)
        if pages:
            found_entries = self._pipeline.store.entries_for(self.section, pages)
            self._entries.update(((state.key, state.url), state) for state in found_entries)

    def _read_snapshot(self, published: PublishedFile) -> tuple[str, bytes] | None:
        block = self._pipeline.bucket.read_snapshot(published.snapshot)
        return unpack_block(block, f"the snapshot of {published.name}")

    def load(self, region: KeyRange) -> None:
        """Read the manifest of ``region`` (ranges are nodes of one key tree: nested or disjoint). A region inside
        a live file is read as that whole file: its recorded counts would otherwise be added to the region's."""
        region = next((f.key_range for f in self.live if _inside(region, f.key_range)), region)
        if any(_inside(region, loaded) for loaded in self.loaded):
            return
        for inner in [loaded for loaded in self.loaded if _inside(loaded, region)]:
            del self.loaded[inner], self._keys[inner], self._sizes[inner], self._state_keys[inner]
        if region not in self.loaded:
            published = next((f for f in self.live if f.key_range == region), None)
            states = self._from_snapshot(published) if published is not None else None
            if states is None:
                states = States.of(sorted(self._pipeline.store.entries(self.section, region), key=position))
                self.entries_read += len(states)
            self.loaded[region] = states
            self._state_keys[region] = states.keys()
            live = states.live(bodies=False)
            self._keys[region] = live.keys
            self._sizes[region] = [0, *accumulate(live.sizes)]

    def _gaps(self, key_range: KeyRange) -> list[KeyRange]:
        """The parts of ``key_range`` no loaded region covers."""
        return uncovered(key_range, list(self.loaded))

    def _from_snapshot(self, published: PublishedFile) -> States | None:
        """The file's states from its snapshot and the marked pages' current entries; None without a snapshot
        of the file's current bytes (a crash between the put and the record, or no snapshot yet)."""
        if published.unsettled:
            return None
        if published.name in self._snapshots:
            found = self._snapshots.pop(published.name)
        else:
            found = self._read_snapshot(published)
        if found is None or found[0] != snapshot_id(published.sha256, published.key_range):
            return None
        key_range = published.key_range
        block, states = _block_states(found[1], key_range)
        if states is None or len(states.live(bodies=False).keys) != published.url_count:
            return None  # not the file's pages: read the manifest
        self.snapshots_read += 1
        self.kept[key_range] = states
        pages = [(key, url) for key, url in self._marked if key_range.contains(key)]
        if not pages:
            return states
        if self._asked.issuperset(pages):
            current = [self._entries[page] for page in pages if page in self._entries]
        else:
            current = self._pipeline.store.entries_for(self.section, pages)
        self.entries_read += len(pages)
        ((_, lo, hi),) = states.runs or [(block, 0, 0)]
        return merged(block, lo, hi, set(pages), current)

    def recorded(self, published: PublishedFile) -> States | None:
        """The states ``published``'s recorded bytes were rendered from (its snapshot), whether or not they were
        read for this rebuild (an unsettled record's were not); None without a whole snapshot of them."""
        if published.key_range in self.kept:
            return self.kept[published.key_range]
        found = self._snapshots.pop(published.name, None) or self._read_snapshot(published)
        if found is None or found[0] != snapshot_id(published.sha256, published.key_range):
            return None
        _, states = _block_states(found[1], published.key_range)
        return states if states is not None and len(states.live(bodies=False).keys) == published.url_count else None

    def _unloaded_files(self) -> Iterable[PublishedFile]:
        return (f for f in self.live if not any(_inside(f.key_range, r) for r in self.loaded))

    def stats(self, start: int, end: int) -> tuple[int, int]:
        node = KeyRange(start, end, 0)
        for published in list(self._unloaded_files()):
            overlaps = node.start < published.key_range.end and published.key_range.start < node.end
            if overlaps and not _inside(published.key_range, node):  # planning below a recorded file: read it
                self.load(published.key_range)
        count = size = 0
        for published in self._unloaded_files():
            if _inside(published.key_range, node):
                count += published.url_count
                size += published.entry_bytes
        for region, keys in self._keys.items():
            if region.end <= start or end <= region.start:
                continue
            lo, hi = bisect_left(keys, start), bisect_left(keys, end)
            count += hi - lo
            size += self._sizes[region][hi] - self._sizes[region][lo]
        return count, size

    def states_in(self, key_range: KeyRange) -> States:
        """Every state in ``key_range``: its files are read, and so are the parts no file covers, whose tombstones
        (deletes of pages no file shows any more) still move the range's lastmod."""
        for published in list(self._unloaded_files()):
            if _inside(published.key_range, key_range):
                self.load(published.key_range)
        for gap in self._gaps(key_range):
            self.load(gap)
        found: list[Run] = []
        for region in sorted(self.loaded, key=lambda r: r.start):  # disjoint, each sorted: in order when joined
            if region.end <= key_range.start or key_range.end <= region.start:
                continue
            keys = self._state_keys[region]
            found += self.loaded[region].between(bisect_left(keys, key_range.start), bisect_left(keys, key_range.end))
        return States(found)


def _block_states(data: bytes, key_range: KeyRange) -> tuple[Block, States | None]:
    """A snapshot block's records and those of ``key_range`` (written in order; None if they are not)."""
    block = Block(data)
    if not block.ordered():
        return block, None
    keys = block.keys
    return block, States([(block, bisect_left(keys, key_range.start), bisect_left(keys, key_range.end))])


def rebuild_section(pipeline: Pipeline, section: str, marks: list[DirtyMark], announced: bool = True) -> SectionRebuild:
    """Re-render the files of ``section`` that hold the marked keys; publish what changed, and send the notifier
    its change record (not ``announced``: a first import, which is not news to search engines)."""
    store, bucket = pipeline.store, pipeline.bucket
    # A file's bytes are versioned by the rebuild's own number: rebuilds of a section run one after another (one
    # FIFO group), and a later one renders what the earlier ones did plus its own marks (an earlier one may have
    # rendered from a snapshot without a change whose mark came only later).
    version = store.next_rebuild(section, to_micros(pipeline.clock()))  # its moment paces a busy section
    result = SectionRebuild(section)
    records = store.files(section)
    grace = pipeline.settings.retired_file_grace_seconds * 1_000_000
    now = to_micros(pipeline.clock())
    for unnamed in (f for f in records if f.state == "unnamed" and f.removals_pending):
        announce_unnamed(pipeline, section, unnamed)
    for gone in (f for f in records if f.state == "unnamed" and f.unnamed_us <= now - grace):
        bucket.delete(gone.name)  # no index a CDN or crawler may still hold names it
        bucket.delete(text_twin(gone.name))  # free, and whether or not text sitemaps are on (they may have been)
        store.delete_file(gone, "unnamed")
        result.deleted.append(gone.name)
    live = [f for f in records if f.state == "live"]
    by_range = {f.key_range: f for f in live}
    marked_pages = [(m.key, m.url) for m in marks if m.key is not None and m.url is not None]
    data = _Section(pipeline, section, live, marked_pages)
    dirty_keys = sorted({m.key for m in marks if m.key is not None})
    data.read_ahead([f for f in live if not f.unsettled and _holds_any(f.key_range, dirty_keys)])
    for key in dirty_keys:
        data.load(_region_for(key, live))
    for uncertain in (f for f in records if f.state == "writing" or f.unsettled):
        data.load(uncertain.key_range)  # a rebuild died while writing records: their counts are not to be trusted
    layout = plan_with(data.stats, pipeline.limits, FILE_OVERHEAD)
    names = {r.file_name(section) for r in layout}
    # A rebuild died between its put and its record and the layout moved on: deleted once the change record went.
    abandoned = [f for f in records if f.state == "writing" and f.name not in names]
    # The record that holds each name (one per range start): a put under a name first records its intent there.
    holders = {f.name: f for f in records if f.state != "unnamed" and f.name in names}
    as_of = to_micros(pipeline.clock())
    jobs: list[Job] = []
    for key_range in layout:
        old = by_range.get(key_range)
        if old is not None and not _holds_any(key_range, dirty_keys) and not old.unsettled:
            continue  # an unsettled file may hold other bytes (a crash after a put): it is rendered again
        jobs.append((key_range, data.states_in(key_range), old))
    # The files are rendered at once, their snapshots put in one object, then each file's intent record and
    # bytes put at once, each waiting on its S3 and DynamoDB round trips.
    rendered = publish_files(pipeline, section, jobs, holders, (version, as_of), data.kept)
    fresh: list[PublishedFile] = []
    for (key_range, _, _), (record, put) in zip(jobs, rendered, strict=True):
        if put:
            result.put.append(key_range.file_name(section))
        if record is not None:
            fresh.append(record)
    result.entries_read = data.entries_read
    result.snapshots_read = data.snapshots_read
    found = Announcement()
    if announced:
        found = announcement(pipeline, marks, data, layout, jobs, holders, records, as_of)
    result.changed_urls, result.digests, result.ranks, result.lastmods = (
        found.changed,
        found.digests,
        found.ranks,
        found.lastmods,
    )
    if result.put:
        first_at: dict[str, int] = {}
        for mark in marks:
            if mark.url in result.changed_urls and mark.at_us is not None:
                first_at[mark.url] = min(first_at.get(mark.url, mark.at_us), mark.at_us)
        result.latencies_s = [max(0.0, (as_of - at) / 1e6) for _, at in sorted(first_at.items())]
    if (result.changed_urls or found.unless_unannounced or found.unless_told) and pipeline.settings.announces_pages:
        # With no notifier on, none: what a notifier turned on later announces is compared with these files anyway.
        for message in change_records(
            section, result.changed_urls, result.digests, result.put, result.lastmods, result.ranks,
            found.unless_unannounced, found.unless_told,
        ):  # fmt: skip
            pipeline.notify_queue.send(*message)
    # Only now, with the change record sent: a crash before it leaves these files as the next attempt compares with.
    in_layout = set(layout)
    if pipeline.marks is not None and (
        any(f.news_until_us for f in fresh) or any(old.key_range not in in_layout for old in live)
    ):  # news to expire, files to retire: upkeep's work later (a site added at run time: visited while marked)
        pipeline.marks.touch(ACTIVE)
    announcing = announced and pipeline.settings.announces_pages
    rendered_names = {key_range.file_name(section) for key_range, _, _ in jobs}
    for old in live:  # a file whose name is not rendered again stays named until the index: its removals wait
        defer = announcing and old.name not in rendered_names
        if old.key_range not in in_layout and store.move_file_state(old, "live", "retiring", removals=defer):
            result.retired.append(old.name)
    for gone in (f for f in abandoned if f.name not in found.keep):
        bucket.delete(gone.name)
        bucket.delete(text_twin(gone.name))
        store.delete_file(gone, "writing")
        result.deleted.append(gone.name)
    pipeline.fan_out(store.put_file, fresh)  # after the bytes exist: the index only ever names published files
    if fresh or result.retired or dirty_keys or any(f.pending_index for f in live):
        # Fresh records are pending for the index; a retry after a crash finds them still pending, so the
        # index is always told. It names them and clears them.
        what = f"{sorted(f.name + f.sha256 for f in fresh)}|{result.retired}"
        due = index_due_us(pipeline, section, live, fresh, result.retired, any(m.news for m in marks))
        pipeline.index_queue.send(*section_index_request(section, what, *index_window(pipeline), due))
    # The objects of snapshots the records replaced or deleted here named, if no record names them any more.
    touched = {job[0].start for job in jobs} | {f.key_range.start for f in records if f.name in result.deleted}
    replaced = [f for f in records if f.key_range.start in touched]
    collect_snapshots(pipeline, section, replaced, [f for f in records if f.key_range.start not in touched], version)
    return result


def rebuild_sections(pipeline: Pipeline, marks: Iterable[DirtyMark]) -> list[SectionRebuild]:
    """Coalesce marks by section and rebuild each section once."""
    by_section: dict[str, list[DirtyMark]] = defaultdict(list)
    for mark in marks:
        by_section[mark.section].append(mark)
    return [rebuild_section(pipeline, section, group) for section, group in sorted(by_section.items())]


def index_due_us(
    pipeline: Pipeline,
    section: str,
    live: list[PublishedFile],
    fresh: list[PublishedFile],
    retired: list[str],
    news: bool,
) -> int:
    """When the index must name what this rebuild published (0: at once). At once when it adds a file the index
    does not name (a split, a new section) or retires one; else, when it only moved lastmods of named files, the
    oldest still pending of them (an earlier rebuild's whose request may have been lost to a crash, or this one's)
    plus the section's index wait (``index_wait_seconds``): the index requests of many rebuilds then share one
    index rebuild."""
    named = {f.name for f in live}
    if retired or any(f.name not in named for f in fresh):
        return 0
    settings = pipeline.settings
    news = news or any(f.news_until_us for f in fresh)
    wait_us = index_wait_seconds(settings.freshness_for(section), settings.cdn_max_age_seconds, news) * 1_000_000
    now = to_micros(pipeline.clock())
    oldest = min([now, *(f.published_us for f in live if f.pending_index and f.published_us)])
    return max(1, oldest + wait_us) if wait_us else 0


def index_window(pipeline: Pipeline) -> tuple[int, int]:
    """Now and the window of index requests that share one rebuild (half the CDN's cache lifetime; 0: none)."""
    return to_micros(pipeline.clock()), pipeline.settings.cdn_max_age_seconds * 1_000_000 // 2
