"""How a bootstrap cuts sections into ranges, and each range into the files a full build would make."""

from __future__ import annotations

import itertools
import random

import pytest

from sitemap_updater.core.bootstrap_plan import RANGE_FACTOR, plan_in_range, range_depth, render_ranges
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange, Limits, plan_ranges

OVERHEAD = 200


def test_a_section_is_cut_into_ranges_of_at_least_four_files_worth() -> None:
    limits = Limits(max_urls=10_000)
    assert range_depth(79_999, limits) == 0  # one worker renders it whole
    assert range_depth(80_000, limits) == 1
    assert range_depth(100_000_000, limits) == 11  # 2,048 ranges of about 49,000 URLs
    for urls in (80_000, 1_000_000, 100_000_000, 1_000_000_000):
        assert urls >> range_depth(urls, limits) >= RANGE_FACTOR * limits.max_urls


def test_the_ranges_cover_each_section_once() -> None:
    ranges = render_ranges({"blog": 500, "docs": 0, "news": 50}, Limits(max_urls=10))
    assert sorted({s for s, _ in ranges}) == ["blog", "docs", "news"]  # docs: its deletes still render
    assert [r for s, r in ranges if s == "docs"] == [KeyRange(0, KEY_SPACE, 0)]
    blog = sorted((r for s, r in ranges if s == "blog"), key=lambda r: r.start)
    assert len(blog) == 8
    assert blog[0].start == 0 and blog[-1].end == KEY_SPACE
    assert all(a.end == b.start for a, b in itertools.pairwise(blog))


@pytest.mark.parametrize("seed", range(20))
def test_a_range_too_large_for_one_file_gets_the_files_of_a_full_build(seed: int) -> None:
    rng = random.Random(seed)
    limits = Limits(max_urls=rng.choice([3, 10, 25]))
    keys = sorted(rng.randrange(KEY_SPACE) for _ in range(rng.randrange(200, 2000)))
    sizes = [rng.randrange(100, 400) for _ in keys]
    whole = plan_ranges(keys, sizes, limits, OVERHEAD)
    depth = range_depth(len(keys), limits)
    width = KEY_SPACE >> depth
    pieced = []
    for i in range(1 << depth):
        within = KeyRange(i * width, (i + 1) * width, depth)
        assert sum(1 for k in keys if within.contains(k)) > limits.max_urls  # the premise, for these sizes
        pieced += plan_in_range(keys, sizes, within, limits, OVERHEAD)
    assert sorted(pieced, key=lambda r: r.start) == sorted(whole, key=lambda r: r.start)


def test_a_range_that_fits_one_file_is_that_file() -> None:
    within = KeyRange(KEY_SPACE // 2, KEY_SPACE * 3 // 4, 2)
    keys = [within.start + 5, within.start + 9]
    assert plan_in_range(keys, [100, 100], within, Limits(max_urls=10), OVERHEAD) == [within]
    assert plan_in_range([], [], within, Limits(max_urls=10), OVERHEAD) == []
