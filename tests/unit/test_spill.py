"""The build's spill: a bucket of distinct keys is reduced by columns exactly as the ranked in-place reduce does."""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.spill import (
    SpillGroups,
    _distinct,
    _key_order,
    _reduce_records,
    reduce_bucket,
    spill_state,
)
from tests.conftest import BASE, parse

SECTIONS = [None, "blog", "Bücher"]


@st.composite
def exports(draw: st.DrawFn, distinct: bool) -> list[dict[str, Any]]:
    """Events of a few sections: upserts (some with images or no lastmod) and deletes, on distinct URLs or not."""
    count = draw(st.integers(1, 40))
    pages = range(count) if distinct else [draw(st.integers(0, 6)) for _ in range(count)]
    events = []
    for page in pages:
        body: dict[str, Any] = {
            "type": draw(st.sampled_from(["upsert", "upsert", "delete"])),
            "url": f"{BASE}/{draw(st.sampled_from(['blog', 'shop']))}/p{page}",
            "occurred_at": f"2026-11-{draw(st.integers(10, 20))}T10:00:00Z",
            "version": draw(st.integers(0, 3)),
        }
        if (section := draw(st.sampled_from(SECTIONS))) is not None:
            body["section"] = section
        if draw(st.booleans()):
            body["images"] = [{"loc": f"https://cdn.example.com/{page}.jpg", "title": "A & B"}]
        if draw(st.integers(0, 4)) == 0:
            body["lastmod"] = None
        events.append(body)
    return events


def _groups(events: list[dict[str, Any]]) -> dict[str, tuple[bytes, bytes]]:
    spill = SpillGroups()
    for body in events:
        spill.add(*spill_state(state_from_event(parse(body))))
    groups: dict[str, tuple[bytes, bytes]] = {}
    for _bucket, section, _count, heads, data in spill.runs():
        before = groups.get(section, (b"", b""))
        groups[section] = (before[0] + heads, before[1] + data)
    return groups


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.one_of(exports(distinct=True), exports(distinct=False)))
def test_the_column_reduce_equals_the_ranked_reduce(events: list[dict[str, Any]]) -> None:
    # Given the spilled states of an export, its URLs distinct or repeated (then the ranked reduce runs anyway)
    groups = _groups(events)
    # When a bucket of them is reduced
    reduced = reduce_bucket(groups, set(), keep_all=False)
    # Then each section's live run (keys, sizes, lastmods, flags, elements) and tombstones are the ranked reduce's
    assert reduced == _reduce_records(groups, set(), keep_all=False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=exports(distinct=True), keep_all=st.booleans())
def test_kept_sections_carry_their_records(events: list[dict[str, Any]], keep_all: bool) -> None:
    # Given an export, and sections whose records must be kept (news may show, or text sitemaps are written)
    groups = _groups(events)
    keep = set() if keep_all else {"blog"}
    # When a bucket of them is reduced, then kept sections carry their records and the others none
    runs, _deleted = reduce_bucket(groups, keep, keep_all)
    for section, run in runs.items():
        assert bool(run.records) == (keep_all or section in keep)


def test_keys_that_round_to_one_float_are_still_put_in_order() -> None:
    # Given keys that differ only below a float's precision (so equal as floats), one of them twice
    keys = array("Q", [2**63 + 3, 2**63 + 1, 2**64 - 1, 2**63 + 2, 5, 2**63 + 1])
    # When they are ordered, then by their exact values, and the key seen twice tells the keys are not distinct
    order, ordered = _key_order(keys)
    assert list(ordered) == sorted(keys) and [keys[i] for i in order] == list(ordered)
    assert not _distinct([ordered])
    assert _distinct([_key_order(array("Q", keys[:4]))[1]])
    # and a key in two runs (two sections) is seen too
    assert not _distinct([(1, 2**63 + 1), (2**63 + 1, 2**63 + 2)])
    assert _distinct([(1, 2**63 + 1), (2, 2**63 + 2)])
