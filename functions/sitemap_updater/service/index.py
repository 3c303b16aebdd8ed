"""Index: rewrite sitemap.xml when its list or lastmods change; then let sections delete retired files."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sitemap_updater.core.render import IndexItem, render_index
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import cleanup_mark, send_change_record

UNSETTLED = "unsettled"  # the recorded index digest while a put is in flight (never a SHA-256)


class StaleIndex(RuntimeError):
    """Another index rebuild published a newer index during this one."""


@dataclass(slots=True)
class IndexRebuild:
    generation: int
    written: bool = False
    files: int = 0
    unnamed: list[str] = field(default_factory=list)
    invalidated: list[str] = field(default_factory=list)


def rebuild_index(pipeline: Pipeline) -> IndexRebuild:
    """Render the index from the live file records; write it only when its bytes change. Then invalidate, in
    one CloudFront batch, the files section rebuilds published since the last index (``pending_index``) and
    the index if it changed, and mark those files announced."""
    store = pipeline.store
    generation = store.next_index_generation()
    records = store.files()
    named = [f for f in records if f.state == "live"]
    result = IndexRebuild(generation, files=len(named))
    current = store.index_sha()
    digest = ""
    if named:
        index = render_index(pipeline.site.base_url, [IndexItem(f.name, f.lastmod_us) for f in named])
        digest = hashlib.sha256(index).hexdigest()
        if digest != current:
            # Until the new digest is recorded the bucket may hold either index: a crash after the put must not
            # leave the old digest behind, or a later index equal to the old one would not be written.
            store.put_index_sha(UNSETTLED, generation)
            if not pipeline.bucket.publish(INDEX_NAME, index, generation):
                raise StaleIndex("a newer index was published meanwhile; retrying with a newer snapshot")
            store.put_index_sha(digest, generation)
            result.written = True
            send_change_record(pipeline, {"index": {"generation": generation, "sha256": digest}})
    elif current:  # the site has no pages left; an index must name at least one sitemap, so there is none
        pipeline.bucket.delete(INDEX_NAME)
        store.put_index_sha("", generation)
        result.written = True
    announced = [f for f in named if f.pending_index]
    changes = [f"/{f.name}:{f.sha256}:{f.seq}" for f in announced]
    if result.written:
        changes.append(f"/{INDEX_NAME}:{digest}:{generation}")
    if changes:
        paths = sorted({change.split(":", 1)[0] for change in changes})
        reference = hashlib.sha256("|".join(sorted(changes)).encode()).hexdigest()  # a retried batch is the same
        pipeline.cdn.invalidate(paths, reference)
        result.invalidated = paths
    for published in announced:
        store.clear_pending_index(published)
    # Files already unnamed (a previous run died before its cleanup marks) are asked for again.
    sections: set[str] = {f.section for f in records if f.state == "unnamed"}
    for retiring in (f for f in records if f.state == "retiring"):
        if store.move_file_state(retiring, "retiring", "unnamed"):
            result.unnamed.append(retiring.name)
            sections.add(retiring.section)
    for section in sorted(sections):
        body, group, dedup = cleanup_mark(section, generation)
        pipeline.rebuild_queue.send(body, group=group, dedup=dedup)
    return result
