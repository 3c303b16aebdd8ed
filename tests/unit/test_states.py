"""Page states read in place from a snapshot block (``core/states.py``): what a rebuild renders, records and writes
again from a block's records is what the states decoded one by one give, whichever pages changed."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sitemap_updater.core import records
from sitemap_updater.core.changes import View, changes
from sitemap_updater.core.reduce import PageState, state_from_event
from sitemap_updater.core.render import NEWS_WINDOW_US, render_parts, render_urlset
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.core.states import Block, ByUrl, States, merged, without_common
from tests.conftest import AS_OF_US, BASE, event, parse

FRESH = {"publication_name": "T & <Co>", "publication_language": "en", "publication_date": "2026-11-21",
         "title": "fresh"}  # fmt: skip
STALE = {**FRESH, "publication_date": "2026-11-10", "title": "stale"}  # older than two days at AS_OF_US


def _page(name: str, kind: int, version: int = 1) -> PageState:
    """A page of one of five shapes: plain, images, hreflang alternates, fresh news, stale news; or a delete."""
    url = f"{BASE}/blog/{name}"
    if kind == 5:
        return state_from_event(parse(event(url, type="delete", version=version)))
    shapes: list[dict[str, Any]] = [
        {},
        {"images": [{"loc": f"{BASE}/{name}.jpg", "caption": "a & b"}]},
        {"alternates": [{"hreflang": "de", "href": f"{BASE}/de/{name}"}, {"hreflang": "en", "href": url}]},
        {"news": {**FRESH, "publication_date": f"2026-11-{20 + sum(map(ord, name)) % 2}"}},  # fresh, two dates
        {"news": STALE, "section": "Blög"},
    ]
    fields = shapes[kind]
    return state_from_event(parse(event(url, version=version, lastmod=f"2026-11-{1 + version:02d}", **fields)))


def _position(state: PageState) -> tuple[int, str]:
    return state.key, state.url


def _pages(count: int, seed: int = 0) -> list[PageState]:
    rng = random.Random(seed)
    return sorted((_page(f"p{i}", rng.randrange(6)) for i in range(count)), key=_position)


def _block(states: list[PageState]) -> Block:
    return Block(b"".join(records.encode_state(s) for s in states))


def test_a_block_gives_the_states_it_was_written_from_and_writes_them_again_as_they_were() -> None:
    pages = _pages(40)
    block = _block(pages)
    states = States([(block, 0, len(block))])
    assert block.state(5) == pages[5] and states[0] == pages[0]  # one record decoded when asked for
    assert _block(pages).state(39) == pages[39]  # the last one too
    assert list(states) == pages and len(states) == 40
    assert states.encode() == block.data
    assert states[3] is block.state(3) is next(iter(States([(block, 3, 4)])))  # one object per record
    assert list(states[5:9]) == pages[5:9] and states[-1] == pages[-1]
    with pytest.raises(IndexError):
        states[40]
    with pytest.raises(ValueError, match="steps of one"):
        states[::2]
    # A block whose records are not in key order is not taken for a file's states (its manifest is read instead)
    swapped = [*pages[:3], pages[4], pages[3], *pages[5:]]  # two neighbours out of order
    assert block.ordered() and not _block(swapped).ordered() and not _block(pages[::-1]).ordered()
    with pytest.raises(ValueError, match="ends inside a record"):
        Block(block.data[:-1])


@pytest.mark.parametrize("where", ["first", "last", "middle", "all"])
@pytest.mark.parametrize("change", ["changed", "added", "removed", "deleted"])
def test_a_file_s_pages_merged_with_its_changes_are_the_states_in_order_and_write_the_same_snapshot(
    where: str, change: str
) -> None:
    # Given a file's snapshot of pages of every shape (images, hreflang, news, named sections, tombstones)
    pages = _pages(30, seed=1)
    block = _block(pages)
    lo, hi = 3, 27  # the file's records in a block holding more (a range of a wider one)
    inside = pages[lo:hi]
    picks = {"first": [0], "last": [len(inside) - 1], "middle": [7, 8], "all": list(range(len(inside)))}[where]
    # When those pages change, pages are added next to them, or they are removed or deleted
    marked: set[tuple[int, str]] = set()
    current: list[PageState] = []
    for i in picks:
        old = inside[i]
        if change == "changed":
            current.append(_page(old.url.rsplit("/", 1)[1], 3, version=9))
        elif change == "added":  # a page whose key sorts right before, and one right after, the picked page
            # the same key as it (a hash shared by two URLs): placed by its URL, before or after it
            for key, name in ((old.key - 1, "new"), (old.key + 1, "new"), (old.key, "a-new"), (old.key, "z-new")):
                new = _page(f"{name}-{i}-{key - old.key}", 1)
                assert new.entry is not None
                current.append(new._replace(entry=new.entry._replace(key=key)))
            marked.update((s.key, s.url) for s in current[-4:])
            continue
        elif change == "deleted":
            current.append(_page(old.url.rsplit("/", 1)[1], 5, version=9))
        marked.add((old.key, old.url))
    got = merged(block, lo, hi, marked, current[::-1])  # in any order
    # Then the states are the file's, without the marked pages' old states, with their new ones, in order
    expected = sorted([s for s in inside if (s.key, s.url) not in marked] + current, key=_position)
    assert list(got) == expected
    # the pages left as they were are the block's records (not decoded again), written again as they were read
    assert all(s is block.state(lo + inside.index(s)) for s in got if s in inside)
    assert got.encode() == b"".join(records.encode_state(s) for s in expected)
    assert got.keys() == [s.key for s in expected]
    # and what a file and its record are made of is what the states give one by one
    _same_live(got, expected)


def _same_live(got: States, expected: list[PageState]) -> None:
    live = got.live()
    entries = [s.entry for s in expected if s.entry is not None]
    assert live.keys == [e.key for e in entries] and live.lastmods == [e.lastmod_us for e in entries]
    assert live.sizes == [e.size for e in entries] and live.bodies == [e.body for e in entries]
    assert live.deleted == [(s.key, s.tombstone.deleted_us) for s in expected if s.tombstone is not None]
    assert live.news == [(i, e.news, e.news_us, e.url) for i, e in enumerate(entries) if e.news]
    flags = 0
    for entry in entries:
        flags |= entry.flags
    assert live.flags == flags
    rendered = render_parts(live.bodies, live.news, live.flags, AS_OF_US)
    assert rendered == render_urlset(entries, AS_OF_US)
    fresh = [e.news_us for e in entries if e.news and e.news_us >= AS_OF_US - NEWS_WINDOW_US]
    assert rendered.news_until_us == (min(fresh) + NEWS_WINDOW_US if fresh else 0)
    counts = got.live(bodies=False)
    assert (counts.keys, counts.sizes, counts.bodies) == (live.keys, live.sizes, [])


def test_runs_of_blocks_and_of_states_joined_give_their_states_in_order() -> None:
    pages = _pages(24, seed=2)
    first, second = _block(pages[:10]), _block(pages[14:])
    joined = States([(first, 2, 10), (pages, 10, 14), (second, 0, 6), (second, 6, 6)])
    expected = pages[2:20]
    assert list(joined) == expected and len(joined) == 18 and joined.keys() == [s.key for s in expected]
    assert [joined[i] for i in (0, 8, 11, 12, 17, -1)] == [expected[i] for i in (0, 8, 11, 12, 17, -1)]
    assert list(States(joined.between(5, 13))) == expected[5:13]
    _same_live(joined, expected)
    assert joined.same(States([(first, 2, 10), (pages, 10, 14), (second, 0, 6)]))
    assert not joined.same(States([(first, 1, 10), (pages, 10, 14), (second, 0, 5)]))  # as many, not the same
    assert joined.same(list(expected)) and not joined.same(expected[1:]) and not joined.same(None)
    assert not joined.same([*expected[:-1], _page("other", 0)])
    assert States.of(joined) is joined and list(States.of(expected)) == expected


@pytest.mark.parametrize("seed", range(12))
def test_a_comparison_without_the_states_both_sides_share_finds_the_same_changes(seed: int) -> None:
    # Given files announced from their snapshots (one not known) and the same files now, after random edits
    rng = random.Random(seed)
    pages = _pages(60, seed=seed)
    block = _block(pages)
    half = KEY_SPACE // 2
    cut = sum(1 for s in pages if s.key < half)
    ranges = [KeyRange(0, half, 1), KeyRange(half, KEY_SPACE, 1)]
    before: list[States | None] = [States([(block, 0, cut)]), States([(block, cut, len(pages))])]
    if seed % 3 == 0:
        before[1] = None
    now: list[States] = []
    for lo, hi in ((0, cut), (cut, len(pages))):
        picks = rng.sample(range(lo, hi), min(hi - lo, rng.randrange(6)))
        marked = {(pages[i].key, pages[i].url) for i in picks}
        current = [_page(pages[i].url.rsplit("/", 1)[1], rng.randrange(6), version=3) for i in picks[1:]]
        current += [_page(f"new-{seed}-{lo}-{n}", rng.randrange(5)) for n in range(rng.randrange(3))]
        current = [s for s in current if (s.key < half) == (lo == 0)]  # the pages of this file's range
        marked |= {(s.key, s.url) for s in current}
        now.append(merged(block, lo, hi, marked, current))
    # When they are compared whole, and without the states both hold as one object
    views = [View(r, b) for r, b in zip(ranges, before, strict=True)]
    whole = changes(ranges, [s for states in now for s in states], views, [], AS_OF_US)
    was, shown = without_common(before, now)
    assert before[0] is not None and was[0] is not None and len(was[0]) < len(before[0]) - 20
    part = changes(ranges, shown, [View(r, b) for r, b in zip(ranges, was, strict=True)], [], AS_OF_US)
    # Then they find the same pages shown and vanished
    assert part.shown == whole.shown and part.vanished == whole.vanished


def test_the_states_by_url_are_those_of_every_run_the_last_of_a_url_held_twice() -> None:
    pages = _pages(20, seed=3)
    block = _block(pages)
    again = _page(pages[4].url.rsplit("/", 1)[1], 0, version=7)  # the URL of a block's record, held again after it
    loaded = [States([(block, 0, 12)]), States([([again, *pages[12:15]], 0, 4), (block, 15, 20)])]
    by_url = ByUrl(loaded)
    expected = {s.url: s for states in loaded for s in states}
    assert dict(by_url) == expected and len(by_url) == 20 and by_url[pages[4].url] is again
    assert by_url.get(pages[3].url) is block.state(3) and by_url.get(f"{BASE}/blog/none") is None
