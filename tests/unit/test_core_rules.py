"""Rules of the engine that the mutation run showed no test stated: file names and key ranges, sizes, digests,
moments, event models; each expectation written from the documented rule."""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from sitemap_updater.core.entry import Entry, entry_from_event
from sitemap_updater.core.errors import LimitExceeded
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.layout import plan_section
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.reduce import reduce_states, state_from_event
from sitemap_updater.core.render import render_urlset
from sitemap_updater.core.sharding import KeyRange, Limits, plan_ranges, section_slug
from sitemap_updater.core.urls import Site, canonical_media_url, canonical_page_url, first_segment
from tests.conftest import AS_OF_US, BASE, HORIZON, event, parse

SITE = Site.parse(BASE, sections=None)
# The largest file head (every namespace) and the closing tag, written out by hand.
MAX_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
    ' xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"'
    ' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"'
    ' xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)
OVERHEAD = len(MAX_HEAD) + len("</urlset>\n")


def test_one_range_covers_the_whole_key_space_until_a_split() -> None:
    assert plan_ranges([5, 2**63 + 5], [10, 10], Limits(), OVERHEAD) == [KeyRange(0, 2**64, 0)]
    assert plan_ranges([5, 2**63 + 5], [10, 10], Limits(max_urls=1), OVERHEAD) == [
        KeyRange(0, 2**63, 1),
        KeyRange(2**63, 2**64, 1),
    ]
    # empty halves get no file
    assert plan_ranges([1, 2], [10, 10], Limits(max_urls=1), OVERHEAD)[0].depth == 63
    assert len(plan_ranges([1, 2], [10, 10], Limits(max_urls=1), OVERHEAD)) == 2
    assert plan_ranges([], [], Limits(), OVERHEAD) == []


def test_pages_sharing_one_key_that_cannot_fit_are_a_limit_error() -> None:
    with pytest.raises(LimitExceeded, match="share one key"):
        plan_ranges([7, 7], [10, 10], Limits(max_urls=1), OVERHEAD)


def test_file_names() -> None:
    assert KeyRange(0, 2**64, 0).file_name("blog") == "sitemap-blog-00000000.xml.gz"
    assert KeyRange(2**63, 2**64, 1).file_name("blog") == "sitemap-blog-80000000.xml.gz"
    assert KeyRange(3 << 30, (3 << 30) + (1 << 30), 34).file_name("blog") == "sitemap-blog-00000000c0000000.xml.gz"
    assert KeyRange(5 << 32, 6 << 32, 32).file_name("blog") == "sitemap-blog-00000005.xml.gz"
    assert KeyRange(5 << 31, 6 << 31, 33).file_name("blog") == "sitemap-blog-0000000280000000.xml.gz"
    # a name that is not plain gets "--" (which no plain name holds) and 16 hex digits of its SHA-256, so
    # "Blog" can never take the file of a section literally named like its slug
    digest = hashlib.sha256(b"Blog").hexdigest()[:16]
    assert KeyRange(0, 2**64, 0).file_name("Blog") == f"sitemap-blog--{digest}-00000000.xml.gz"
    assert section_slug(f"blog--{digest}") != section_slug("Blog")
    assert section_slug("über uns") == "uber-uns--" + hashlib.sha256("über uns".encode()).hexdigest()[:16]
    assert section_slug("日本語") == "section--" + hashlib.sha256("日本語".encode()).hexdigest()[:16]
    assert section_slug("a" * 40) == "a" * 40
    assert section_slug("a" * 41) == "a" * 40 + "--" + hashlib.sha256(b"a" * 41).hexdigest()[:16]


def test_an_entry_s_size_counts_its_news() -> None:
    entry = Entry("u", 1, "s", 0, b"<url>abc", b"<news:news/>")
    assert entry.size == len(b"<url>abc") + len(b"<news:news/>") + len(b"</url>\n")


def test_a_file_is_split_before_52428800_bytes_counting_the_largest_head() -> None:
    def entries(total: int) -> list[Entry]:
        sizes = [1000, 1000, total - 2000]
        keys = [1, 2**62, 2**63 + 1]
        return [Entry(f"u{i}", k, "s", 0, b"x" * (n - 7)) for i, (k, n) in enumerate(zip(keys, sizes, strict=True))]

    fits = 52_428_800 - OVERHEAD
    assert len(plan_section("s", entries(fits), [], Limits(max_urls=50_000))) == 1
    assert len(plan_section("s", entries(fits + 1), [], Limits(max_urls=50_000))) == 2


def test_a_file_s_digest_is_the_sha256_of_its_xml() -> None:
    entries = sorted((entry_from_event(parse(event(f"{BASE}/b/{i}"))) for i in range(3)), key=lambda e: e.sort_key)
    rendered = render_urlset(entries, AS_OF_US)
    xml = gzip.decompress(rendered.data)
    assert rendered.sha256 == hashlib.sha256(xml).hexdigest()
    assert (rendered.xml_bytes, rendered.url_count) == (len(xml), 3)


def test_a_first_segment_is_decoded() -> None:
    assert first_segment(f"{BASE}/caf%C3%A9/x") == "café"
    assert first_segment(f"{BASE}/blog/x") == "blog"


def test_urls_with_dot_segments_or_trailing_characters() -> None:
    assert canonical_page_url(f"{BASE}/aX?", SITE) == f"{BASE}/aX"
    assert canonical_page_url("https://WWW.example.com/aX", SITE) == f"{BASE}/aX"
    assert canonical_media_url("https://cdn.example.com/a/./b") == "https://cdn.example.com/a/b"
    assert canonical_media_url("https://cdn.example.com/a/../b.jpg") == "https://cdn.example.com/b.jpg"


def test_moments_are_exact_microseconds() -> None:
    assert to_micros(datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == 1_000_005
    assert to_micros(datetime(1970, 1, 2, 0, 1, 0, tzinfo=UTC)) == 86_460_000_000
    late = parse(event(occurred_at="2026-11-20T10:00:00.000001Z"))
    assert late.order == (-1, 1_795_168_800_000_001)


def test_an_unversioned_event_ranks_with_version_zero_as_the_documented_text() -> None:
    # architecture.md: version+1 and occurred_at (µs) as zero-padded decimals, 1 for a delete, the entry's
    # digest (empty for a delete), then the section, joined by ":"
    state = state_from_event(parse(event(type="delete", occurred_at="1970-01-01T00:00:01Z")))
    assert state.rank == f"{0:020d}:{1_000_000:020d}:1::blog"


def test_a_tie_between_sections_is_decided_by_the_section_not_by_arrival() -> None:
    first = state_from_event(parse(event(type="delete", version=1, section="a")))
    second = state_from_event(parse(event(type="delete", version=1, section="b")))
    assert first.rank < second.rank
    assert reduce_states([first, second])[first.url] is second
    assert reduce_states([second, first])[first.url] is second


def test_events_are_immutable() -> None:
    parsed = parse(event())
    with pytest.raises(ValidationError):
        parsed.url = f"{BASE}/other"  # type: ignore[misc]


def test_unknown_fields_of_nested_objects_are_reported() -> None:
    news = {"publication_name": "T", "publication_language": "en", "publication_date": "2026-11-21", "title": "t",
            "genre": "x"}  # fmt: skip
    video = {"thumbnail_loc": f"{BASE}/t.jpg", "title": "t", "description": "d", "player_loc": f"{BASE}/p",
             "uploader": {"name": "n", "x": 1}, "y": 2}  # fmt: skip
    parsed = parse_event(json.dumps(event(news=news, videos=[video], z=3)), SITE, HORIZON)
    assert sorted(parsed.unknown_fields) == ["news.genre", "videos[0].uploader.x", "videos[0].y", "z"]
