"""The sites of a stack (issue 32): adding, listing and removing them (``sitemap-updater sites``), and what
ingest does with an event whose host is no site of the stack.

Removing a site marks its item ``removing`` first (its events are refused from then on, within the functions'
cache lifetime), waits ``REMOVAL_WAIT_S`` (no function is still writing the site's files then), then, through the
site's own pipeline (whose ports see its tree only), deletes every object under its prefix and every item under
its partition keys (``Manifest.delete_site_records``), then its item. Nothing outside its prefixes is read or
written but the list of sites. A removal cut short is run again: each step finds what is left.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.core.urls import Site, UrlError
from sitemap_updater.ports import SiteDirectory
from sitemap_updater.service.dead_letters import dead_letter
from sitemap_updater.service.ingest import Rejected
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.sites import REMOVING, SiteConfig, SiteConfigError

_INDEX = re.compile(r"sitemap(-index-\d+)?\.xml")  # core/render.py index_name

# How long a removal waits between marking the site ``removing`` and deleting its tree. Until every function's cache
# has read the mark (CACHE_SECONDS, wiring/sites.py), a function may still take the site's messages as an active
# site's; an invocation that took them runs until its timeout at most. The longest timeout of a function that works
# for a site is the hourly sweep's and reconciliation's (300 s, template.yaml; tests/unit/test_sites.py holds the
# sum to it). Deleting sooner leaves what such an invocation writes after the deletion (make soak found it: files
# and records of a removed site put by a rebuild that read the site as active before the mark).
LONGEST_SITE_FUNCTION_S = 300
REMOVAL_WAIT_S = 60 + LONGEST_SITE_FUNCTION_S


class SiteRefused(ValueError):
    """A site cannot be added or removed; the message says why, in one line."""


def event_host(body: str) -> str | None:
    """The canonical host of an event's ``url`` (None when there is none to read: the stack's own site's ingest
    then refuses the event with its reason, naming the field)."""
    try:
        event: Any = json.loads(body)
        url = event.get("url") if isinstance(event, dict) else None
        if not isinstance(url, str):
            return None
        parts = urlsplit(url.strip())
        return Site.parse(f"{parts.scheme}://{parts.netloc}").netloc
    except (ValueError, UrlError, RecursionError):  # nested past the parser's depth: the ingest names the body
        return None


def refuse_unknown_host(pipeline: Pipeline, body: str, message_id: str, host: str) -> Rejected:
    """An event whose URL is on a host that is no active site of the stack: to the dead-letter queue, with a
    reason naming the field and the host."""
    reason = (
        f"url: host {host!r} is not a site of this stack (its own is {pipeline.site.netloc!r}; "
        "`sitemap-updater sites list` shows the others, `sites add` adds one)"
    )
    dead_letter(pipeline.dead_letters, body, reason, message_id)
    result = Rejected(reason, body)
    pipeline.observe(result)
    return result


def add_site(stack: Pipeline, directory: SiteDirectory, site: SiteConfig) -> SiteConfig:
    """Add ``site`` (or change it: the same host's item is replaced). SiteRefused for the stack's own host, a
    site being removed, or a configuration the stack cannot run (SiteConfigError's message)."""
    if site.host == stack.site.netloc:
        raise SiteRefused(f"{site.origin} is the stack's own site (its SiteUrl): it is configured by the stack")
    try:
        site.settings(stack.settings)
    except SiteConfigError as exc:
        raise SiteRefused(str(exc)) from None
    # Its objects are named sites/<host>/...: a host with a port puts a ':' in the key, and IAM documents its
    # wildcards to cross a ':' only where '*' ends an ARN segment, which the grants' sites/*/... do not.
    if ":" in site.host:
        raise SiteRefused(f"{site.host}: a site on a port other than its scheme's default cannot be added")
    # The notifier's queue, its one-minute wake-up and its grants exist as the stack's parameters ask
    # (template.yaml: HasIndexNow, HasFeed): a site's own IndexNow key or feed needs the stack's on.
    if site.indexnow_key and not stack.settings.indexnow_key:
        raise SiteRefused(f"{site.host}: an IndexNow key needs the stack's IndexNowKey set (its notifier is off)")
    if site.feed_entries and not stack.settings.feed_entries:
        raise SiteRefused(f"{site.host}: a recent-changes feed needs the stack's RecentChangesFeed (its grants)")
    found = directory.get_site(site.host)
    if found is not None and found.state == REMOVING:
        raise SiteRefused(f"{site.host} is being removed: run `sites remove {site.origin}` again to finish first")
    directory.put_site(site)
    return site


@dataclass(frozen=True, slots=True)
class Removed:
    """What a removal deleted: the site's objects and items."""

    host: str
    objects: int
    items: int


def begin_removal(stack: Pipeline, directory: SiteDirectory, origin: str) -> SiteConfig:
    """Mark the site on ``origin``'s host ``removing`` (its events are refused from then on) and return it."""
    try:
        host = Site.parse(origin).netloc
    except UrlError as exc:
        raise SiteRefused(str(exc)) from None
    if host == stack.site.netloc:
        raise SiteRefused(f"{origin} is the stack's own site (its SiteUrl): delete the stack to remove it")
    site = directory.get_site(host)
    if site is None:
        raise SiteRefused(f"{host} is not a site of this stack (`sitemap-updater sites list` shows them)")
    removing = site.model_copy(update={"state": REMOVING})
    directory.put_site(removing)
    return removing


def finish_removal(site: Pipeline, directory: SiteDirectory) -> Removed:
    """Delete every object and item of ``site`` (its pipeline: its ports see its tree only), then its item."""
    names = site.bucket.names()
    indexes = [site.files.file_url(name) for name in names if _INDEX.fullmatch(name)]  # Search Console's records
    for name in names:
        site.bucket.delete(name)
    items = site.store.delete_site_records(indexes)
    directory.delete_site(site.site.netloc)
    return Removed(site.site.netloc, len(names), items)
