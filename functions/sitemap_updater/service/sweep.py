"""Sweep: the safety net for changes whose rebuild was never queued, and news that aged out."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sitemap_updater.core.events import to_micros
from sitemap_updater.core.sharding import section_slug
from sitemap_updater.service.pipeline import Pipeline


@dataclass(frozen=True, slots=True)
class SweepResult:
    requeued: int
    news_expired: int


def sweep(pipeline: Pipeline) -> SweepResult:
    """Queue a rebuild for every page still marked pending, and for every file whose news expired."""
    requeued = 0
    for page in pipeline.store.pending_pages():
        body = {"section": page.section, "url": page.url, "key": f"{page.key:016x}", "change": None}
        dedup = hashlib.sha256(f"sweep|{page.url}|{page.rank}".encode()).hexdigest()
        pipeline.rebuild_queue.send(body, group=section_slug(page.section), dedup=dedup)
        pipeline.store.clear_pending(page.url, page.rank)
        requeued += 1
    now = to_micros(pipeline.clock())
    expired = 0
    for published in pipeline.store.files():
        if published.state == "live" and 0 < published.news_until_us <= now:
            body = {"section": published.section, "key": f"{published.key_range.start:016x}"}
            dedup = hashlib.sha256(f"news|{published.name}|{published.news_until_us}".encode()).hexdigest()
            pipeline.rebuild_queue.send(body, group=section_slug(published.section), dedup=dedup)
            expired += 1
    return SweepResult(requeued, expired)
