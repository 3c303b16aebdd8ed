"""Scheduled work: the sweep (the safety net for changes whose rebuild was never queued) and news expiry (files
whose news turned two days old), two functions that run independently of each other."""

from __future__ import annotations

from dataclasses import dataclass

from sitemap_updater.core.messages import cleanup_message, news_expiry_message
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.ports import Http
from sitemap_updater.service.index import grace_over, published_indexes
from sitemap_updater.service.marks import sweep_outboxes
from sitemap_updater.service.parked import replay_parked
from sitemap_updater.service.pipeline import Pipeline


@dataclass(frozen=True, slots=True)
class SweepResult:
    requeued: int
    robots_warning: str | None = None


def robots_warning(pipeline: Pipeline, http: Http) -> str | None:
    """A warning when the site's robots.txt does not name every index file (the one network call the sweep
    makes): sitemap.xml, and the further index files of a site past the files one index may name; on the
    sitemaps' own host when they have one (a cross-submission)."""
    names = sorted(published_indexes(pipeline.store.index_sha()), key=lambda n: (n != INDEX_NAME, len(n), n))
    wanted = [pipeline.files.file_url(name) for name in names or [INDEX_NAME]]
    lines = "; ".join(f"'Sitemap: {url}'" for url in wanted)
    response = http.request("GET", pipeline.site.file_url("robots.txt"))
    if response.status != 200:
        return f"robots.txt answered HTTP {response.status}; add {lines} to it"
    named = set()
    for line in response.body.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "sitemap":
            named.add(value.strip())
    missing = [url for url in wanted if url not in named]
    if not missing:
        return None
    if missing == wanted == [pipeline.files.file_url(INDEX_NAME)]:
        return f"robots.txt does not name the sitemap index; add the line 'Sitemap: {missing[0]}'"
    return "robots.txt does not name every sitemap index file; add " + "; ".join(f"'Sitemap: {u}'" for u in missing)


def sweep(pipeline: Pipeline, http: Http | None = None) -> SweepResult:
    """Queue the rebuilds of changes whose ingest batch died before sending their marks (the outboxes it left
    open, found with one Query of their partition), and the rebuild requests an import that died after ending
    left parked."""
    requeued = sweep_outboxes(pipeline)
    if not pipeline.store.import_running():  # an import that died after ending: its parked rebuild requests
        requeued += replay_parked(pipeline)
    warning = None
    if pipeline.settings.robots_check and http is not None:
        warning = robots_warning(pipeline, http)
    return SweepResult(requeued, warning)


@dataclass(frozen=True, slots=True)
class UpkeepResult:
    news_expired: int
    cleanups: int


def upkeep(pipeline: Pipeline) -> UpkeepResult:
    """Queue a rebuild of every file whose newest news item turned two days old, and a cleanup of every
    section holding files the index stopped naming whose grace is over. Reads the published-file records only
    (one per file, never per page)."""
    now = to_micros(pipeline.clock())
    grace = pipeline.settings.retired_file_grace_seconds * 1_000_000
    expired = 0
    records = pipeline.store.files()
    for published in records:
        if published.state == "live" and 0 < published.news_until_us <= now:
            start, until = published.key_range.start, published.news_until_us
            pipeline.rebuild_queue.send(*news_expiry_message(published.section, start, published.name, until))
            expired += 1
    sections = sorted({f.section for f in records if grace_over(f, now, grace)})
    for section in sections:
        pipeline.rebuild_queue.send(*cleanup_message(section, now))
    return UpkeepResult(expired, len(sections))
