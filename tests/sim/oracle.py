"""What the published site must be at the end of a sequence: the core's own reduction of every accepted event,
rendered as of the end. The winning event alone decides what a page shows (its lastmod included), so the result
does not depend on the order events arrived in; the lastmod ingest recorded for each page is checked to be the
winner's."""

from __future__ import annotations

import json
from typing import Any

from sitemap_updater.core.layout import SiteFiles, build_site
from sitemap_updater.core.reduce import PageState, reduce_states, split_states, state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site
from sitemap_updater.service.ingest import page_write
from tests.conftest import BASE, parse


def _state(body: dict[str, Any], base: str) -> PageState:
    return state_from_event(parse(json.loads(json.dumps(body)), Site.parse(base, sections=None)))


def expected_site(
    bodies: list[dict[str, Any]],
    limits: Limits,
    as_of_us: int,
    recorded: dict[str, str],
    violations: list[str],
    base: str = BASE,
) -> SiteFiles:
    """``recorded``: the lastmod of each URL's page state at the end (as ingest stored it); ``base``: the site's
    origin (its files are named on it)."""
    winners = reduce_states(_state(body, base) for body in bodies)
    for url, state in sorted(winners.items()):
        if url in recorded and recorded[url] != page_write(state).lastmod:
            violations.append(f"{url}: lastmod {recorded[url]} is recorded, its newest event gives another")
    entries, tombstones = split_states(winners.values())
    return build_site(entries, tombstones, limits, as_of_us, base)
