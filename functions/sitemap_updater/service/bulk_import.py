"""Bulk import: how a site starts. Load every page's newest state with batched writes, publish once."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.reduce import reduce_states, state_from_event
from sitemap_updater.service.index import IndexRebuild, rebuild_index
from sitemap_updater.service.ingest import page_write
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import DirtyMark, SectionRebuild, rebuild_section


@dataclass(slots=True)
class ImportResult:
    pages: int = 0
    rejections: list[tuple[int, str]] = field(default_factory=list)
    sections: list[SectionRebuild] = field(default_factory=list)
    index: IndexRebuild | None = None


def import_events(bodies: Iterable[str], pipeline: Pipeline) -> ImportResult:
    """Validate every event, keep the newest per URL, write the manifests in batches, then publish every
    section and the index once (no change records: a first import is not news to search engines). When no
    event is accepted, nothing is written or published."""
    result = ImportResult()
    states = []
    for number, body in enumerate(bodies, start=1):
        try:
            states.append(state_from_event(parse_event(body, pipeline.site).event))
        except EventRejected as exc:
            result.rejections.append((number, str(exc)))
    if not states:  # nothing accepted: nothing written, nothing published
        return result
    newest = reduce_states(states)
    writes = [page_write(state) for state in newest.values()]
    pipeline.store.import_pages(writes)
    result.pages = sum(1 for w in writes if w.kind == "live")
    keys: dict[str, list[int]] = defaultdict(list)
    for write in writes:
        keys[write.section].append(write.key)
    for section in sorted(keys):
        marks = [DirtyMark(section, key=key) for key in keys[section]]
        result.sections.append(rebuild_section(pipeline, section, marks))
    result.index = rebuild_index(pipeline)
    return result
