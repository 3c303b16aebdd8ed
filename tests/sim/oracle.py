"""What the published site must be at the end of a sequence: the reference model of the newest event per URL,
rendered as of the end. One rule depends on arrival order by design: an upsert without ``lastmod`` whose entry
is otherwise unchanged keeps the lastmod stored when it arrived. For such a winner the lastmod ingest recorded is
taken, after checking that it is the lastmod one of the URL's events gave."""

from __future__ import annotations

import json
from typing import Any

from sitemap_updater.core.layout import SiteFiles, build_site
from sitemap_updater.core.reduce import PageState, newer, split_states, state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.service.ingest import page_write
from tests.conftest import BASE, parse


def _state(body: dict[str, Any]) -> PageState:
    return state_from_event(parse(json.loads(json.dumps(body))))


def _lastmod(state: PageState) -> str:
    return page_write(state).lastmod


def expected_site(
    bodies: list[dict[str, Any]], limits: Limits, as_of_us: int, recorded: dict[str, str], violations: list[str]
) -> SiteFiles:
    """``recorded``: the lastmod of each URL's page state at the end (as ingest stored it)."""
    winners: dict[str, tuple[PageState, dict[str, Any]]] = {}
    lastmods: dict[str, set[str]] = {}
    for body in bodies:
        state = _state(body)
        if state.entry is not None:
            lastmods.setdefault(state.url, set()).add(_lastmod(state))
        current = winners.get(state.url)
        if newer(current[0] if current else None, state):
            winners[state.url] = (state, body)
    states: list[PageState] = []
    for url, (state, body) in sorted(winners.items()):
        if state.entry is not None and "lastmod" not in body and url in recorded:
            kept = recorded[url]
            if kept not in lastmods[url]:
                violations.append(f"{url}: lastmod {kept} comes from none of its events")
            elif kept != _lastmod(state):
                state = _state({**body, "lastmod": kept})
        states.append(state)
    entries, tombstones = split_states(states)
    return build_site(entries, tombstones, limits, as_of_us, BASE)
