"""Bulk import: how a site starts. Load every page's newest state with batched writes, publish once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import body_too_large, parse_event
from sitemap_updater.core.lines import LongLine
from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.reduce import reduce_states, state_from_event
from sitemap_updater.service.index import IndexRebuild, StaleIndex, rebuild_index
from sitemap_updater.service.ingest import page_write
from sitemap_updater.service.parked import replay_parked
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import SectionRebuild, rebuild_section
from sitemap_updater.service.site_marks import ACTIVE


class ImportRefused(RuntimeError):
    """The stack already publishes a site: an import (unconditional, batched writes) would overwrite newer states
    and leave moved pages in their old sections' files; changes to a live site go through the ingest queue."""


def check_first_import(pipeline: Pipeline) -> None:
    """Raise ImportRefused when the stack has published an index and no import is under way: the import is a
    site's first load only. An import that died (its mark is still set, whether or not the deployed index
    function had named some of its files already) may be run again."""
    if pipeline.store.index_sha() is not None and not pipeline.store.import_running():
        raise ImportRefused(
            "this stack already publishes a site (its sitemap.xml was written): import is a site's first load; "
            "send changes as events to the ingest queue instead"
        )


@dataclass(slots=True)
class ImportResult:
    pages: int = 0
    rejections: list[tuple[int, str]] = field(default_factory=list)
    sections: list[SectionRebuild] = field(default_factory=list)
    index: IndexRebuild | None = None


def import_events(bodies: Iterable[str | bytes | LongLine], pipeline: Pipeline) -> ImportResult:
    """Validate every event (bytes that are not UTF-8, or a line too long for the reader to hold, are rejected so),
    keep the newest per URL, write the manifests in batches, then publish every section and the index once (no
    change records: a first import is not news to search engines). When no event is accepted, nothing is written or
    published. Raises ImportRefused on a stack that publishes a site."""
    check_first_import(pipeline)
    result = ImportResult()
    states = []
    horizon = pipeline.horizon()
    for number, body in enumerate(bodies, start=1):
        try:
            if isinstance(body, LongLine):
                raise body_too_large(body.size)
            states.append(state_from_event(parse_event(body, pipeline.site, horizon).event))
        except EventRejected as exc:
            result.rejections.append((number, str(exc)))
    if not states:  # nothing accepted: nothing written, nothing published
        return result
    newest = reduce_states(states)
    writes = [page_write(state) for state in newest.values()]
    if pipeline.marks is not None:  # a site added at run time: the hourly functions visit it from now on
        pipeline.marks.touch(ACTIVE)
    # Until the import's own index: a run that dies may run again.
    pipeline.store.set_import_running(True, to_micros(pipeline.clock()))
    pipeline.store.import_pages(writes)
    result.pages = sum(1 for w in writes if w.kind == "live")
    marks: dict[str, list[DirtyMark]] = defaultdict(list)
    for write in writes:  # by URL too, so that a file rebuilt from its snapshot reads these pages again
        marks[write.section].append(DirtyMark(write.section, url=write.url, key=write.key))
    for section in sorted(marks):
        result.sections.append(rebuild_section(pipeline, section, marks[section], announced=False))
    try:
        result.index = rebuild_index(pipeline)
    except StaleIndex:  # the deployed index function (asked by the section rebuilds) published a newer one
        result.index = rebuild_index(pipeline)
    pipeline.store.set_import_running(False)
    replay_parked(pipeline)  # rebuild requests of changes recorded meanwhile: the import parked them
    return result
