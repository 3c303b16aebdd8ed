"""Index: rewrite sitemap.xml when its list or lastmods change; then let sections delete retired files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sitemap_updater.core.render import IndexItem, render_index
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import cleanup_mark


@dataclass(slots=True)
class IndexRebuild:
    generation: int
    written: bool = False
    files: int = 0
    unnamed: list[str] = field(default_factory=list)


def rebuild_index(pipeline: Pipeline) -> IndexRebuild:
    """Render the index from the live file records; write it only when its bytes change."""
    store = pipeline.store
    generation = store.next_index_generation()
    records = store.files()
    named = [f for f in records if f.state == "live"]
    index = render_index(pipeline.site.base_url, [IndexItem(f.name, f.lastmod_us) for f in named])
    digest = hashlib.sha256(index).hexdigest()
    result = IndexRebuild(generation, files=len(named))
    if digest != store.index_sha():
        if not pipeline.bucket.publish(INDEX_NAME, index, generation):
            return result  # a newer index is already out; it decides what is named
        store.put_index_sha(digest, generation)
        pipeline.cdn.invalidate([f"/{INDEX_NAME}"], f"index|{digest}|{generation}")
        result.written = True
    sections: set[str] = set()
    for retiring in (f for f in records if f.state == "retiring"):
        if store.move_file_state(retiring, "retiring", "unnamed"):
            result.unnamed.append(retiring.name)
            sections.add(retiring.section)
    for section in sorted(sections):
        body, group, dedup = cleanup_mark(section, generation)
        pipeline.rebuild_queue.send(body, group=group, dedup=dedup)
    return result
