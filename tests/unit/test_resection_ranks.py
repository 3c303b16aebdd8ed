"""What a re-section relies on: a page state records whether its event named the section, through every form it
takes, and a moved state's rank is newer than the state it moves and than nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from sitemap_updater.core.records import decode_states, encode_state
from sitemap_updater.core.reduce import PageState, is_moved, moved_rank, rank_order, state_from_event
from sitemap_updater.core.urls import Site
from sitemap_updater.service.ingest import page_write
from tests.conftest import BASE, event, parse

SITE = Site.parse(BASE, sections=frozenset({"blog"}))


def _state(**fields: Any) -> PageState:
    return state_from_event(parse(event(f"{BASE}/docs/a", **fields), SITE))


@pytest.mark.parametrize("kind", ["upsert", "delete"])
def test_the_state_records_whether_its_event_named_the_section_in_every_form(kind: str) -> None:
    named, given = _state(type=kind, section="guides"), _state(type=kind)
    assert (named.named, named.section) == (True, "guides")
    assert (given.named, given.section) == (False, "root")  # the setting gave it: "docs" is not a section
    for state in (named, given):
        assert list(decode_states(encode_state(state))) == [state]  # the manifest's record and the snapshots
        assert page_write(state).section_named == state.named  # the page-state item


def test_a_moved_rank_is_newer_than_the_state_it_moves_and_than_nothing_else() -> None:
    stored = _state(version=3, lastmod="2026-11-02")
    once = moved_rank(stored.rank, "docs")
    twice = moved_rank(once, "root")
    assert stored.rank < once < twice and is_moved(once) and is_moved(twice) and not is_moved(stored.rank)
    assert once.endswith(">000001:docs") and twice.endswith(">000002:root")  # a second move replaces the first
    assert len(twice) == len(stored.rank) + len(">000002:root")
    assert rank_order(once) == rank_order(twice) == stored.order
    # A newer event wins over any move of the older one; an older event stays stale
    newer = _state(version=4, lastmod="2026-11-01")
    older = _state(version=2, lastmod="2026-11-09")
    assert older.rank < stored.rank < once < twice < newer.rank
    # An event of the same order but other content compares with the moved state as with the stored one
    rival = _state(version=3, lastmod="2026-11-03")
    assert (rival.rank > stored.rank) == (rival.rank > once) == (rival.rank > twice)


def test_a_moved_state_carries_its_rank_and_renders_the_same_entry() -> None:
    stored = _state(version=3)
    assert stored.entry is not None
    moved = PageState(stored.url, stored.order, stored.entry._replace(section="docs"), None, False, stored.rank)
    assert moved.rank == moved_rank(stored.rank, "docs") and moved.digest == stored.digest
    write = page_write(moved, None)
    assert write.rank == moved.rank and write.section == "docs" and not write.section_named
