"""Shared fixtures: a site, event factories, and the reference renderer used as the oracle."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import pytest

from sitemap_updater.core.event_rules import Horizon
from sitemap_updater.core.events import PageEvent, parse_event
from sitemap_updater.core.layout import SiteFiles, build_site
from sitemap_updater.core.reduce import PageState, reduce_states, split_states, state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site

# As the template sets them for every function; read by Powertools when handler modules are imported.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "sitemap-updater")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "SitemapUpdater")

BASE = "https://www.example.com"
# The tests' site gives every first path segment its own section (the Sections setting "*"), so that sections,
# moves between them and their file names are exercised by the sample URLs; the default ("": every page in root)
# has tests of its own.
SECTIONS = "*"
AS_OF_US = 1_795_262_400_000_000  # 2026-11-21T12:00:00Z
# The tests' now for validating events (AS_OF_US plus the default clock skew): their events are dated before it.
HORIZON = Horizon(AS_OF_US)


@pytest.fixture
def site() -> Site:
    return Site.parse(BASE, sections=None)


def event(url: Any = f"{BASE}/blog/a", **fields: Any) -> dict[str, Any]:
    """A valid upsert event body (as a dict), with overrides."""
    body: dict[str, Any] = {"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}
    body.update(fields)
    return body


def parse(body: dict[str, Any] | str, site: Site | None = None) -> PageEvent:
    raw = body if isinstance(body, str) else json.dumps(body)
    return parse_event(raw, site or Site.parse(BASE, sections=None), HORIZON).event


@lru_cache(maxsize=100_000)
def _state(raw: str) -> PageState:
    return state_from_event(parse(raw))


def reference_site(bodies: Iterable[dict[str, Any]], limits: Limits | None = None) -> SiteFiles:
    """What the newest event per URL renders to: the oracle every build path must match."""
    states = reduce_states(_state(json.dumps(b, sort_keys=True)) for b in bodies)
    entries, tombstones = split_states(states.values())
    return build_site(entries, tombstones, limits or Limits(), AS_OF_US, BASE)
