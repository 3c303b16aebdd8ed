"""What a section rebuild tells the notifier: the pages whose entry in a published file was added, changed or
removed (``core/changes.py`` compares), judged against every file a crawler may have seen since the last change
record a rebuild of the section surely sent.

Those files are: the live records the rebuild replaces or retires (their snapshots: a rebuild sends its change
record before it writes its records, so a record's snapshot was announced), and the bytes earlier attempts put
under a name and died before recording. Each put first records its intent on the record holding the name
(``PublishedFile.pending``: the block of its snapshot and the version it puts); the next put under that name
reads the version of the object there, and if it is that intent's, keeps its block in ``PublishedFile.shown``
until a record is written. So a crash between a put and the change record loses no change, and an intent whose
put never happened announces nothing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sitemap_updater.core.changes import View, shown_digest
from sitemap_updater.core.changes import changes as compare
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import DirtyMark, change_records
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.records import decode_states
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.core.snapshots import SnapshotRef, unpack_block
from sitemap_updater.ports import Bucket
from sitemap_updater.service.pipeline import Pipeline


@dataclass(slots=True)
class Announcement:
    """The change record's content: each changed URL (``added``, ``updated``, ``removed``) with the digest of the
    entry shown now ("" once removed), the rank of its state and its lastmod; and the pages deleted here that no
    file of the section ever showed (``unless_unannounced``: URL -> rank), which the notifier announces only if it
    last told the search engines they exist (another section's file showed them)."""

    changed: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, str] = field(default_factory=dict)
    lastmods: dict[str, int] = field(default_factory=dict)
    unless_unannounced: dict[str, str] = field(default_factory=dict)
    # Pages a file here showed only in bytes an attempt put and died before its change record was surely sent, and
    # that moved on to another section since: announced as removed unless the search engines were told they exist
    # (URL -> the rank of the state those bytes showed).
    unless_told: dict[str, str] = field(default_factory=dict)
    # Names of files a dead attempt put under names the layout abandons, kept for a page they show that this
    # rebuild did not read (service/rebuild.py ``_keep_unread``).
    keep: set[str] = field(default_factory=set)

    def drop(self, url: str) -> None:
        """Leave ``url`` out (its removal is announced later)."""
        for found in (self.changed, self.digests, self.ranks, self.lastmods, self.unless_told):
            found.pop(url, None)


def confirmed_puts(bucket: Bucket, record: PublishedFile) -> tuple[SnapshotRef, ...]:
    """The blocks of the bytes earlier attempts put under ``record``'s name: those it keeps, and its pending
    intent's if the object there carries that intent's version (one HEAD, only for a record with an intent)."""
    if record.pending is None or bucket.version(record.name) != record.pending.seq:
        return record.shown
    return (*record.shown, record.pending.snapshot)


def block_view(bucket: Bucket, name: str, ref: SnapshotRef, where: KeyRange) -> View:
    """What the bytes whose snapshot is block ``ref`` showed: its states, over the range its head names (``where``
    if it cannot be read, then not known)."""
    found = unpack_block(bucket.read_snapshot(ref), f"the snapshot of bytes put as {name}")
    if found is None:
        return View(where, None)
    _, start, depth = found[0].split(":")
    first = int(start, 16)
    return View(KeyRange(first, first + (KEY_SPACE >> int(depth)), int(depth)), list(decode_states(found[1])))


def announce(
    pipeline: Pipeline,
    region: list[KeyRange],
    now: Iterable[PageState],
    views: tuple[list[View], list[View]],
    loaded: Mapping[str, PageState],
    marks: list[DirtyMark],
    as_of_us: int,
) -> Announcement:
    """The change record of a rebuild that rendered (or retired) ``region`` from ``now``; ``views``: the files
    that held it when their change record was sent, and bytes put there since; ``loaded``: the section's current
    state of each URL the rebuild read (tombstones too)."""
    found = compare(region, now, *views, as_of_us)
    announced = {s.url for view in views[0] for s in view.states or () if s.entry is not None}
    shown_since: dict[str, str] = {}  # the newest state each URL's bytes put since showed
    for s in (s for view in views[1] for s in view.states or () if s.entry is not None):
        shown_since[s.url] = max(s.rank, shown_since.get(s.url, ""))
    result = Announcement()
    for kind, state in [*found.shown.values(), *(("restated", s) for s in found.restated.values())]:
        url = state.url
        result.changed[url] = kind
        result.digests[url] = shown_digest(state, as_of_us)
        result.ranks[url] = state.rank
        assert state.entry is not None
        result.lastmods[url] = state.entry.lastmod_us or as_of_us
    for url in found.vanished:
        here = loaded.get(url)
        if here is not None and here.entry is None:
            rank = here.rank  # deleted here
        else:  # no longer in this section: deleted (its tombstone elsewhere), or moved on and shown there
            page = pipeline.store.get_page(url)
            if page is not None and page.kind != "deleted":
                if url not in announced:  # shown here only by bytes whose change record may never have been sent:
                    result.unless_told[url] = shown_since.get(url, page.rank)  # its next section may delete it
                continue  # before any file there shows it (soak seed 1932); else that section's file announces it
            rank = page.rank if page is not None else ""
        result.changed[url], result.digests[url], result.ranks[url] = "removed", "", rank
    for mark in marks:  # deletes of pages no file of this section showed: another section's file may have
        if mark.change != "removed" or mark.url is None or mark.url in result.changed or mark.url in found.vanished:
            continue
        here = loaded.get(mark.url)
        if here is not None and here.entry is None:
            result.unless_unannounced[mark.url] = here.rank
        elif here is None:  # a deletion that moved the page out of this section, where no file showed it
            page = pipeline.store.get_page(mark.url)
            if page is not None and page.kind == "deleted":
                result.unless_unannounced[mark.url] = page.rank
    return result


def announce_unnamed(pipeline: Pipeline, section: str, unnamed: PublishedFile) -> None:
    """Send the removals a rebuild left for the index (``removals_pending``): the pages ``unnamed`` (or bytes put
    under its name since) showed that the section's manifest no longer holds live, now that the index no longer
    names it; a page its range still holds is announced by the file that shows it. Then clear the mark (a crash
    before that sends them again: the notifier has been told already, and does nothing)."""
    store, bucket = pipeline.store, pipeline.bucket
    states = sorted(store.entries(section, unnamed.key_range), key=lambda s: (s.key, s.url))
    announced = [block_view(bucket, unnamed.name, unnamed.snapshot, unnamed.key_range)]
    since = [block_view(bucket, unnamed.name, ref, unnamed.key_range) for ref in confirmed_puts(bucket, unnamed)]
    as_of = to_micros(pipeline.clock())
    loaded = {s.url: s for s in states}
    told = announce(pipeline, [unnamed.key_range], iter(states), (announced, since), loaded, [], as_of)
    removed = {url: told.ranks[url] for url, kind in told.changed.items() if kind == "removed"}
    if removed or told.unless_told:
        changed, digests = dict.fromkeys(removed, "removed"), dict.fromkeys(removed, "")
        for message in change_records(section, changed, digests, [], {}, removed, {}, told.unless_told):
            pipeline.notify_queue.send(*message)
    store.move_file_state(unnamed, "unnamed", "unnamed", unnamed.unnamed_us, removals=False)
