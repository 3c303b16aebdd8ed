"""Several sites in one stack (issue 32): each site's pipeline, chosen by host, from the sites' items read through
a cache.

``site_pipeline`` makes a site's pipeline: the stack's, with the site's settings (sites.py) and its ports scoped to
its tree (``wiring/site_ports.py``, core/site_keys.py). ``Sites`` picks the pipeline of a host: the stack's own
site's (its ``SiteUrl``, or a message that names no site) without any read; any other host is looked up in the
``SiteDirectory`` through ``SiteCache``.

The cache keeps what it read, a site or its absence, for ``ttl_s`` (60 s: a site added, changed or removed is
seen by every function within a minute). A host not in the cache is read by itself (GetItem) while a process has
read fewer than ``unknown_reads`` such hosts in the window; past that, the process reads the whole list of sites
(one Query of their partition, at most once per ``ttl_s``) and answers every host from it: a stack whose events
come from thousands of sites costs one listing a minute per process, not a read per host, and a flood of events
for hosts that are no site costs no more than that (each is refused at once, with its host, as any unknown host).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sitemap_updater.core.messages import site_of
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.site_keys import object_prefix, pk_prefix
from sitemap_updater.ports import SiteDirectory
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.site_marks import ACTIVE as MARKED_ACTIVE
from sitemap_updater.service.site_marks import Due, SiteMarks, forget_stale
from sitemap_updater.sites import ACTIVE, SiteConfig
from sitemap_updater.wiring.site_ports import SiteBucket, SiteQueue

CACHE_SECONDS = 60.0
UNKNOWN_READS = 20


def site_pipeline(stack: Pipeline, site: SiteConfig) -> Pipeline:
    """The pipeline of ``site``: the stack's clients and settings, with the site's settings and its tree."""
    host = site.host
    return replace(
        stack,
        settings=site.settings(stack.settings),
        store=stack.store.for_site(pk_prefix(host)),
        bucket=SiteBucket(stack.bucket, object_prefix(host)),
        rebuild_queue=SiteQueue(stack.rebuild_queue, host),
        index_queue=SiteQueue(stack.index_queue, host),
        notify_queue=SiteQueue(stack.notify_queue, host),
        marks=None if stack.directory is None else SiteMarks(stack.directory, host, stack.clock),
    )


@dataclass(slots=True)
class _Cached:
    site: SiteConfig | None
    read_at: float


class SiteCache:
    """The sites' items as the functions read them: by host, kept ``ttl_s`` (see the module)."""

    def __init__(
        self,
        directory: SiteDirectory,
        clock: Callable[[], float] = time.monotonic,
        ttl_s: float = CACHE_SECONDS,
        unknown_reads: int = UNKNOWN_READS,
    ) -> None:
        self._directory = directory
        self._clock = clock
        self._ttl_s = ttl_s
        self._unknown_reads = unknown_reads
        self._cached: dict[str, _Cached] = {}
        self._window: tuple[float, int] = (-ttl_s, 0)  # when the window of uncached reads began, reads in it
        self._listed: tuple[float, dict[str, SiteConfig]] | None = None  # when the whole list was read, and it
        self.reads = 0
        self.listings = 0

    def get(self, host: str) -> SiteConfig | None:
        """The site of ``host`` (None: there is none)."""
        now = self._clock()
        cached = self._cached.get(host)
        if cached is not None and now - cached.read_at < self._ttl_s:
            return cached.site
        if self._listed is not None and now - self._listed[0] < self._ttl_s:
            return self._listed[1].get(host)  # read this window with every other site
        if cached is None:  # a host not seen lately: read by itself only so many a window
            began, count = self._window
            if now - began >= self._ttl_s:
                began, count = now, 0
            if count >= self._unknown_reads:
                self.listings += 1
                self._listed = (now, {site.host: site for site in self._directory.list_sites()})
                self._cached.clear()  # the listing answers for every host this window
                return self._listed[1].get(host)
            self._window = (began, count + 1)
        if len(self._cached) > 100_000:  # a process's memory is bounded whatever the hosts
            self._cached.clear()
        self.reads += 1
        site = self._directory.get_site(host)
        self._cached[host] = _Cached(site, now)
        return site


class Sites:
    """The pipelines of a stack's sites, by host."""

    def __init__(self, stack: Pipeline, cache: SiteCache | None) -> None:
        self.stack = stack
        self._cache = cache
        self._pipelines: dict[str, tuple[SiteConfig, Pipeline]] = {}

    def for_host(self, host: str) -> Pipeline | None:
        """The pipeline of the site on ``host`` ("" or the stack's own host: the stack's own site); None when no
        active site is on it."""
        if not host or host == self.stack.site.netloc:
            return self.stack
        site = self._cache.get(host) if self._cache is not None else None
        if site is None or site.state != ACTIVE:
            return None
        return self.for_listed(site)

    def for_listed(self, site: SiteConfig) -> Pipeline:
        """The pipeline of ``site`` (as read), built once per configuration."""
        built = self._pipelines.get(site.host)
        if built is None or built[0] != site:
            built = (site, site_pipeline(self.stack, site))
            self._pipelines[site.host] = built
        return built[1]


@dataclass(slots=True)
class Routed:
    """A queue batch's records by site, in batch order: each site's pipeline with its records; the IDs of records
    whose site is gone (removed, or no site: nothing is done for them)."""

    batches: list[tuple[Pipeline, list[dict[str, Any]]]] = field(default_factory=list)
    gone: dict[str, str] = field(default_factory=dict)  # message ID -> host


def route(
    sites: Sites, records: list[dict[str, Any]], host_of: Callable[[dict[str, Any]], str], mark: bool = False
) -> Routed:
    """Group ``records`` by the site ``host_of`` names for each ("": the stack's own site); with ``mark`` (ingest,
    whose batches open outboxes the sweep may have to send), each site added at run time is marked active first."""
    routed = Routed()
    by_host: dict[str, tuple[Pipeline, list[dict[str, Any]]]] = {}
    for record in records:
        host, message_id = host_of(record), str(record.get("messageId", ""))
        if host not in by_host:
            pipeline = sites.for_host(host)
            if pipeline is None:
                routed.gone[message_id] = host
                continue
            if mark and pipeline.marks is not None:  # a site added at run time: the sweep visits it meanwhile
                pipeline.marks.touch(MARKED_ACTIVE)
            by_host[host] = (pipeline, [])
            routed.batches.append(by_host[host])
        by_host[host][1].append(record)
    return routed


def message_site(record: dict[str, Any]) -> str:
    """The site a message between functions names ("": the stack's own, or a body that cannot be read, which the
    stack's own pipeline reports as unreadable)."""
    try:
        body = json.loads(str(record.get("body", "")))
        return site_of(body) if isinstance(body, dict) else ""
    except ValueError:
        return ""


def due_sites(sites: Sites, kind: str) -> list[Due]:
    """What a scheduled run visits (service/site_marks.py): the stack's own site, then each active site with a mark
    of ``kind`` (read through the cache: by host, or all at once past its reads by host). A mark whose site is gone
    is deleted once it is old enough (``forget_stale``)."""
    directory = sites.stack.directory
    own = [Due("", sites.stack)]
    if directory is None:
        return own
    now_us = to_micros(sites.stack.clock())
    dues = []
    for host, at_us in sorted(directory.marks(kind).items()):
        pipeline = sites.for_host(host) if host != sites.stack.site.netloc else None
        if pipeline is None:
            forget_stale(directory, kind, host, at_us, now_us)
        else:
            dues.append(Due(host, pipeline, at_us))
    return own + dues


def other_sites(sites: Sites, visited: set[str]) -> list[Due]:
    """Every active site added at run time but those ``visited`` (one Query of the list of sites)."""
    directory = sites.stack.directory
    found = [] if directory is None else directory.list_sites()
    return [Due(site.host, sites.for_listed(site)) for site in sorted(found, key=lambda s: s.host)
            if site.state == ACTIVE and site.host not in visited]  # fmt: skip
