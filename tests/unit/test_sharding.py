"""Sharding: stable keys, limits that always hold, and one changed page touching one file."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from sitemap_updater.core.errors import LimitExceeded
from sitemap_updater.core.render import FILE_OVERHEAD
from sitemap_updater.core.sharding import (
    KEY_SPACE,
    MAX_BYTES_PER_FILE,
    MAX_URLS_PER_FILE,
    KeyRange,
    Limits,
    page_key,
    plan_ranges,
    section_slug,
)
from tests.conftest import BASE, event, reference_site


def test_page_key_is_stable_and_64_bit() -> None:
    key = page_key(f"{BASE}/blog/a")
    assert key == page_key(f"{BASE}/blog/a")
    assert 0 <= key < KEY_SPACE
    assert key != page_key(f"{BASE}/blog/b")


@pytest.mark.parametrize("section", ["blog", "Blog", "日本語", "a/b", "über uns", "x" * 100, "root", "-"])
def test_section_slugs_are_ascii_file_name_parts(section: str) -> None:
    slug = section_slug(section)
    assert slug.isascii() and slug.replace("-", "").isalnum()
    assert len(slug) <= 58  # an SQS message group ID (the section's FIFO group) may have 128


def test_distinct_sections_never_share_a_slug() -> None:
    sections = ["blog", "Blog", "BLOG", "b-log", "b log", "über", "uber", "日本", "中国"]
    assert len({section_slug(s) for s in sections}) == len(sections)


def test_a_section_named_like_another_s_slug_gets_a_file_name_of_its_own() -> None:
    # The case: "Blog" was written as blog-8c6bc099, a valid section name of its own
    for section in ("Blog", "über uns", "a" * 41, "日本語", "-blog", "blog-"):
        lookalike = section_slug(section)
        assert section_slug(lookalike) != lookalike  # a name that looks like a slug is not taken as one
        assert KeyRange(0, KEY_SPACE, 0).file_name(section) != KeyRange(0, KEY_SPACE, 0).file_name(lookalike)
    # plain names stay as they are
    assert [section_slug(s) for s in ("blog", "de-at", "a1", "a" * 40)] == ["blog", "de-at", "a1", "a" * 40]


def test_two_sections_that_differ_only_in_case_publish_two_files_each_listed_once() -> None:
    # Given one page in section "Blog" and one in the section named as Blog's file name part
    lookalike = section_slug("Blog")
    bodies = [event(f"{BASE}/x/a", section="Blog"), event(f"{BASE}/x/b", section=lookalike)]
    built = reference_site(bodies)
    # Then each is in a file of its own and the index names two files
    assert len(built.files) == 2 and built.url_count == 2
    assert built.index.count(b"<sitemap>") == 2


def test_file_names_name_the_section_and_range_start() -> None:
    assert KeyRange(0, KEY_SPACE, 0).file_name("blog") == "sitemap-blog-00000000.xml.gz"
    assert KeyRange(0x3FA0C2D1 << 32, 0x3FA0C2D2 << 32, 32).file_name("blog") == "sitemap-blog-3fa0c2d1.xml.gz"
    deep = KeyRange(0x3FA0C2D1_80000000, 0x3FA0C2D1_C0000000, 34)
    assert deep.file_name("blog") == "sitemap-blog-3fa0c2d180000000.xml.gz"


def _random_keys(count: int, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    return sorted(rng.getrandbits(64) for _ in range(count))


def test_120001_urls_in_one_section_stay_within_the_count_limit() -> None:
    # Given 120,001 entries in one section
    keys = _random_keys(120_001)
    sizes = [150] * len(keys)
    for max_urls in (10_000, MAX_URLS_PER_FILE):
        # When the key space is planned
        ranges = plan_ranges(keys, sizes, Limits(max_urls=max_urls), FILE_OVERHEAD)
        # Then every entry is in exactly one file and every file is within the limits
        counts = [sum(1 for k in keys if r.start <= k < r.end) for r in ranges]
        assert sum(counts) == len(keys)
        assert max(counts) <= max_urls
        assert all(a.end <= b.start for a, b in pairwise(ranges))


def test_long_urls_force_a_split_on_bytes_before_the_count() -> None:
    # Given 40,000 entries of 2,100 bytes (84 MB): within 50,000 URLs but over 52,428,800 bytes
    keys = _random_keys(40_000)
    sizes = [2_100] * len(keys)
    ranges = plan_ranges(keys, sizes, Limits(max_urls=MAX_URLS_PER_FILE), FILE_OVERHEAD)
    # Then the file is split, and each part is within the byte limit, counted with its XML overhead
    assert len(ranges) >= 2
    for r in ranges:
        count = sum(1 for k in keys if r.start <= k < r.end)
        assert count * 2_100 + FILE_OVERHEAD <= MAX_BYTES_PER_FILE
        assert count < MAX_URLS_PER_FILE


def test_two_halves_whose_union_fits_are_one_file() -> None:
    keys = _random_keys(1_000)
    assert len(plan_ranges(keys, [100] * 1_000, Limits(max_urls=1_000), FILE_OVERHEAD)) == 1
    assert len(plan_ranges(keys, [100] * 1_000, Limits(max_urls=999), FILE_OVERHEAD)) >= 2


def test_an_entry_larger_than_a_file_is_reported() -> None:
    with pytest.raises(LimitExceeded, match="exceeds the per-file limit"):
        plan_ranges([1], [MAX_BYTES_PER_FILE], Limits(), FILE_OVERHEAD)


def test_limits_reject_values_beyond_the_protocol() -> None:
    with pytest.raises(ValueError, match="50,000"):
        Limits(max_urls=50_001)
    with pytest.raises(ValueError, match="52,428,800"):
        Limits(max_bytes=MAX_BYTES_PER_FILE + 1)


def _site_events(count: int) -> list[dict[str, object]]:
    sections = ["blog", "products", "docs"]
    return [
        event(f"{BASE}/{sections[i % 3]}/page-{i}", lastmod=f"2026-11-{1 + i % 20:02d}", version=1)
        for i in range(count)
    ]


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


@pytest.mark.parametrize("seed", range(5))
def test_one_changed_page_changes_exactly_one_file(seed: int) -> None:
    # Given a built site of 6,000 pages in 3 sections, at most 500 URLs per file
    limits = Limits(max_urls=500)
    bodies = _site_events(6_000)
    before = reference_site(bodies, limits).all_bytes()
    assert len(before) > 12
    rng = random.Random(seed)
    victim = rng.randrange(len(bodies))
    # When one page is updated
    changed = dict(bodies[victim], version=2, lastmod="2026-11-21", changefreq="daily")
    after = reference_site([*bodies, changed], limits).all_bytes()
    # Then exactly one sitemap file changes, plus the index (its lastmod moved)
    assert _changed(before, after) - {"sitemap.xml"} != set()
    assert len(_changed(before, after) - {"sitemap.xml"}) == 1


@pytest.mark.parametrize("seed", range(5))
def test_one_added_page_changes_one_file_or_splits_it_in_two(seed: int) -> None:
    limits = Limits(max_urls=500)
    bodies = _site_events(6_000)
    before = reference_site(bodies, limits).all_bytes()
    added = event(f"{BASE}/blog/new-{seed}", version=1)
    after = reference_site([*bodies, added], limits).all_bytes()
    changed = _changed(before, after) - {"sitemap.xml"}
    new_files = set(after) - set(before)
    assert len(changed) == 1 or (len(changed) == 2 and len(new_files) == 1)
    assert not set(before) - set(after)  # nothing disappears when a page is added


def test_layout_depends_only_on_the_final_set_of_pages() -> None:
    # Given the same final set reached directly, and through adds, updates and deletes
    limits = Limits(max_urls=300)
    final = _site_events(2_000)
    noisy = [event(f"{BASE}/blog/gone-{i}", version=1) for i in range(500)]
    noisy += [event(f"{BASE}/blog/gone-{i}", type="delete", version=2, occurred_at="2026-11-01T00:00:00Z")
              for i in range(500)]  # fmt: skip
    noisy += [dict(b, version=0, lastmod="2020-01-01") for b in final]
    direct = reference_site(final, limits)
    via_history = reference_site([*noisy, *final], limits)
    # Then the same files exist, holding the same pages
    assert set(direct.files) == set(via_history.files)
    for name, rendered in direct.files.items():
        assert via_history.files[name].sha256 == rendered.sha256


def test_rendered_files_with_long_urls_split_on_real_bytes() -> None:
    # Given 300 pages with URLs near 2,000 characters and a 200,000-byte limit (but room for 50,000 URLs)
    bodies = [event(f"{BASE}/blog/{i}-{'x' * 1_990}") for i in range(300)]
    built = reference_site(bodies, Limits(max_urls=MAX_URLS_PER_FILE, max_bytes=200_000))
    # Then the site is split on bytes: several files, each within the byte limit as rendered
    assert len(built.files) >= 3
    assert all(f.xml_bytes <= 200_000 for f in built.files.values())
    assert sum(f.url_count for f in built.files.values()) == 300
