"""Scheduled work: the sweep (the safety net for changes whose rebuild was never queued) and news expiry (files
whose news turned two days old), two functions that run independently of each other."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from sitemap_updater.core.messages import cleanup_message, news_expiry_message
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.core.urls import Site, UrlError, normalise_host
from sitemap_updater.ports import HttpResponse, SiteDirectory, WebGet
from sitemap_updater.service.index import grace_over, published_indexes
from sitemap_updater.service.marks import sweep_outboxes
from sitemap_updater.service.parked import replay_parked
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.site_marks import (
    ACTIVE,
    Deadline,
    Due,
    active_quiet,
    clear_if_quiet,
    daily_turn,
    visit,
)


@dataclass(frozen=True, slots=True)
class SweepResult:
    requeued: int
    robots_warning: str | None = None


HOUR_US = 3_600_000_000
ROBOTS_MAX_BYTES = 500 * 1024  # Google reads the first 500 KiB of a robots.txt and ignores the rest
ROBOTS_SECONDS = 10.0  # the whole check, redirects included: a fraction of the sweep's 300 s
ROBOTS_REDIRECTS = 5  # the hops Google follows for a robots.txt
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class _NotRead(Exception):
    """robots.txt was not read: why, as the warning says it."""


def robots_warning(pipeline: Pipeline, web: WebGet, seconds: float = ROBOTS_SECONDS) -> str | None:
    """A warning when the site's robots.txt does not name every index file (the one network call the sweep
    makes): sitemap.xml, and the further index files of a site past the files one index may name; on the
    sitemaps' own host when they have one (a cross-submission). robots.txt is read as adoption reads sitemaps:
    on the site's own scheme and host only (a redirect elsewhere is not followed), its first 500 KiB (what
    Google reads), within ``seconds`` in all; a robots.txt that cannot be read is a warning, never an error."""
    names = sorted(published_indexes(pipeline.store.index_sha()), key=lambda n: (n != INDEX_NAME, len(n), n))
    wanted = [pipeline.files.file_url(name) for name in names or [INDEX_NAME]]
    lines = "; ".join(f"'Sitemap: {url}'" for url in wanted)
    try:
        response = _read_robots(pipeline.site, web, seconds)
    except _NotRead as exc:
        return f"{exc}; not checked: make sure it has {lines}"
    if response.status != 200:
        return f"robots.txt answered HTTP {response.status}; add {lines} to it"
    text = response.body[: response.body.rfind("\n") + 1] if response.cut else response.body  # a cut line is not read
    named = set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "sitemap":
            named.add(value.strip())
    missing = [url for url in wanted if url not in named]
    if not missing:
        return None
    if response.cut:
        return (f"robots.txt is longer than {ROBOTS_MAX_BYTES:,} bytes (500 KiB), the most Google reads of it, and "
                f"its first {ROBOTS_MAX_BYTES:,} bytes do not name every sitemap index file: add "
                + "; ".join(f"'Sitemap: {u}'" for u in missing) + " near its top")  # fmt: skip
    if missing == wanted == [pipeline.files.file_url(INDEX_NAME)]:
        return f"robots.txt does not name the sitemap index; add the line 'Sitemap: {missing[0]}'"
    return "robots.txt does not name every sitemap index file; add " + "; ".join(f"'Sitemap: {u}'" for u in missing)


def _read_robots(site: Site, web: WebGet, seconds: float) -> HttpResponse:
    """The site's robots.txt, following redirects on the site's own scheme and host only."""
    url = site.file_url("robots.txt")
    end = time.monotonic() + seconds
    for _ in range(ROBOTS_REDIRECTS + 1):
        left = end - time.monotonic()
        if left <= 0:
            raise _NotRead(f"robots.txt ({url}) was not read within {seconds:g} s, the check's limit")
        try:
            response = web.get(url, ROBOTS_MAX_BYTES, left)
        except TimeoutError:
            raise _NotRead(f"robots.txt ({url}) was not read within {seconds:g} s, the check's limit") from None
        except OSError as exc:
            raise _NotRead(f"robots.txt ({url}) could not be read ({exc})") from None
        if response.status not in _REDIRECTS:
            return response
        target = urljoin(url, response.headers.get("location", ""))
        if not _on_site(target, site):
            raise _NotRead(
                f"robots.txt redirects to {target!r}, off the site's scheme and host ({site.base_url}): not "
                "followed by this check"
            )
        url = target
    raise _NotRead(f"robots.txt redirects more than {ROBOTS_REDIRECTS} times (the hops Google follows)")


def _on_site(url: str, site: Site) -> bool:
    parts = urlsplit(url)
    try:
        host, port = normalise_host(parts.hostname or ""), parts.port
    except (UrlError, ValueError):
        return False
    default = {"http": 80, "https": 443}.get(parts.scheme)
    netloc = host if port in (None, default) else f"{host}:{port}"
    return parts.scheme == site.scheme and netloc == site.netloc


def sweep(pipeline: Pipeline, web: WebGet | None = None) -> SweepResult:
    """Queue the rebuilds of changes whose ingest batch died before sending their marks (the outboxes it left
    open, found with one Query of their partition), and the rebuild requests an import that died after ending
    left parked."""
    requeued = sweep_outboxes(pipeline)
    if not pipeline.store.import_running():  # an import that died after ending: its parked rebuild requests
        requeued += replay_parked(pipeline)
    warning = None
    if pipeline.settings.robots_check and web is not None:
        warning = robots_warning(pipeline, web)
    return SweepResult(requeued, warning)


@dataclass(slots=True)
class SweepRun:
    """What an hourly sweep did over the sites it visited."""

    requeued: int = 0
    robots_warnings: list[str] = field(default_factory=list)
    unmarked: int = 0  # sites found quiet: no longer visited until they are marked again
    visited: int = 0
    left: int = 0  # marked sites its time did not reach: the next run begins with them
    failed: list[tuple[str, str]] = field(default_factory=list)  # (host, error): visited again by the next run


def sweep_sites(
    dues: Sequence[Due], directory: SiteDirectory | None, web: WebGet | None, deadline: Deadline
) -> SweepRun:
    """Sweep the stack's own site and each marked site (service/site_marks.py) while the run's time allows; delete
    the mark of a site found quiet. robots.txt is checked every run for the stack's own site, once a day for a
    site added at run time (in its hour of the day)."""
    run = SweepRun()

    def work(due: Due) -> None:
        pipeline = due.pipeline
        hour = to_micros(pipeline.clock()) // HOUR_US
        done = sweep(pipeline, web if not due.host or daily_turn(due.host, hour) else None)
        run.requeued += done.requeued
        if done.robots_warning:
            run.robots_warnings.append(done.robots_warning)
        if due.marked_us is not None and directory is not None:
            run.unmarked += clear_if_quiet(pipeline, directory, ACTIVE, due.host, due.marked_us, active_quiet)

    visits = visit("sweep", dues, directory, work, deadline)
    run.visited, run.left, run.failed = len(visits.visited), visits.left, visits.failed
    return run


def upkeep_sites(dues: Sequence[Due], directory: SiteDirectory | None, deadline: Deadline) -> UpkeepResult:
    """``upkeep`` of the stack's own site and each marked site, while the run's time allows."""
    expired = cleanups = 0

    def work(due: Due) -> None:
        nonlocal expired, cleanups
        done = upkeep(due.pipeline)
        expired, cleanups = expired + done.news_expired, cleanups + done.cleanups

    visits = visit("upkeep", dues, directory, work, deadline)
    return UpkeepResult(expired, cleanups, len(visits.visited), visits.left, visits.failed)


@dataclass(frozen=True, slots=True)
class UpkeepResult:
    news_expired: int
    cleanups: int
    visited: int = 1
    left: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)


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
