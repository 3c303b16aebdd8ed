"""What a section rebuild announces: the files it rendered and retired, against every file a crawler may have
seen in their place (``service/announce.py`` compares), with the removals that wait for the index (files that stay
named) and the pages a dead attempt's abandoned bytes show that the rebuild did not read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sitemap_updater.core.changes import View, shown_digest
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.sharding import KeyRange, uncovered
from sitemap_updater.core.states import ByUrl, without_common
from sitemap_updater.service.announce import Announcement, announce, block_view, confirmed_puts
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.publish import Job

if TYPE_CHECKING:
    from sitemap_updater.service.rebuild import _Section as Section


def announcement(
    pipeline: Pipeline,
    marks: list[DirtyMark],
    data: Section,
    layout: list[KeyRange],
    jobs: list[Job],
    holders: dict[str, PublishedFile],
    records: list[PublishedFile],
    as_of: int,
) -> Announcement:
    """What the files rendered (``jobs``) and retired here changed, against every file a crawler may have seen in
    their place (``service/announce.py``): the live records they replace or retire (their snapshots: what was
    announced), and the bytes earlier attempts put under their names, under the names of files retired now, or
    under names the layout abandoned, and died before announcing."""
    section, bucket = data.section, pipeline.bucket
    rendered = [key_range for key_range, _, _ in jobs]
    leaving = [f for f in records if f.state == "live" and f.key_range not in set(layout)]
    region = [*rendered, *(f.key_range for f in leaving)]
    replaced = set(region)
    announced = [View(f.key_range, data.recorded(f)) for f in records if f.state == "live" and f.key_range in replaced]
    since: list[View] = []
    untouched = [key_range for key_range in layout if key_range not in replaced]  # live files kept as announced
    names = {key_range.file_name(section) for key_range in rendered}
    # A file retired earlier whose removals still wait for the index, rendered again under its name before the
    # index stopped naming it: its bytes are replaced now, so what they showed is compared as bytes shown since
    # the last change record (a page they showed that no file shows now is removed), and a page they showed as
    # it is shown now was never shown otherwise (not "added" again).
    retired: list[View] = []
    for again in (f for f in records if f.state == "retiring" and f.removals_pending and f.name in names):
        retired.append(View(again.key_range, data.recorded(again)))
        region += uncovered(again.key_range, untouched)
    since += retired
    # Files retired now that stay named until the index's next rebuild: the removals of their pages wait for it.
    staying = {f.name for f in leaving if f.name not in names}
    waiting = [view for view in announced if any(f.key_range == view.key_range for f in leaving if f.name in staying)]
    for name in sorted(names & holders.keys()):  # their earlier attempts' puts were confirmed as theirs were made
        views = [block_view(bucket, name, ref, holders[name].key_range) for ref in holders[name].shown]
        since += views
        for view in views:  # bytes of a wider range than the name's file now: no file shows the rest of it now
            region += uncovered(view.key_range, untouched)
    planned = {key_range.file_name(section) for key_range in layout}
    gone = {f.name for f in leaving} | {f.name for f in records if f.state == "writing" and f.name not in planned}
    abandoned: dict[str, list[View]] = {}
    for record in (f for f in records if f.name in gone - names):
        views = [block_view(bucket, record.name, ref, record.key_range) for ref in confirmed_puts(bucket, record)]
        since += views
        if record.name in staying:
            waiting += views
        if record.state == "writing":
            abandoned[record.name] = views
        if views and record.state == "writing":
            # Bytes put under a name the layout abandoned showed their range: what no file shows there now has
            # vanished (a file kept as it was announced shows its part, so that part is not in question).
            region += uncovered(record.key_range, untouched)
    loaded = ByUrl(list(data.loaded.values()))
    now = [states for _, states, _ in sorted(jobs, key=lambda job: job[0].start)]  # in key order
    if since:
        every = (s for states in now for s in states)
        found = announce(pipeline, region, every, (announced, since), loaded, marks, as_of)
    else:
        # Without bytes put since: the states both sides hold as one object are passed over by the comparison, and
        # announce asks nothing else of them (the states of the pages it finds vanished are still compared).
        before, shown_now = without_common([view.states for view in announced], now)
        announced = [View(view.key_range, states) for view, states in zip(announced, before, strict=True)]
        found = announce(pipeline, region, shown_now, (announced, since), loaded, marks, as_of)
    if abandoned:
        _keep_unread(pipeline, section, found, abandoned, loaded)
    if retired:
        shown = {s.url: shown_digest(s, as_of) for view in retired for s in view.states or () if s.entry is not None}
        for url in [u for u, kind in found.changed.items() if kind == "added" and shown.get(u) == found.digests[u]]:
            found.drop(url)
    if waiting:  # what those files' bytes show (all of their range, where that is not known)
        shown_there = {s.url for view in waiting for s in view.states or () if s.entry is not None}
        unknown = [view.key_range for view in waiting if view.states is None]
        keys = {s.url: s.key for view in [*announced, *since] for s in view.states or ()}
        for url in [u for u, kind in found.changed.items() if kind == "removed"] + list(found.unless_told):
            if url in shown_there or (url in keys and any(r.contains(keys[url]) for r in unknown)):
                found.drop(url)
    return found


def _keep_unread(
    pipeline: Pipeline,
    section: str,
    found: Announcement,
    abandoned: dict[str, list[View]],
    loaded: Mapping[str, PageState],
) -> None:
    """Bytes a dead attempt put under a name the layout now abandons may show a page this rebuild did not read
    (its file's snapshot is older, and its mark, still on its way, is another batch's) that is still in this
    section in the state they showed: it is no removal, and the file is kept (``found.keep``) for that mark's
    rebuild, which reads the page and decides (soak seeds 2751, 3320, 3871)."""
    gone = set(found.unless_told) | {url for url, kind in found.changed.items() if kind == "removed"}
    for name, views in abandoned.items():
        shown = {s.url: s.rank for view in views for s in view.states or () if s.entry is not None}
        for url in sorted(gone & shown.keys()):
            if url in loaded:
                continue
            page = pipeline.store.get_page(url)
            if page is not None and page.kind != "deleted" and page.section == section and page.rank == shown[url]:
                found.drop(url)
                found.keep.add(name)
