"""Every limit on both sides of its boundary, from the protocol's numbers (not the code's constants)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.core.entry import entry_from_event
from sitemap_updater.core.errors import EventRejected, LimitExceeded
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.records import decode_states, encode_state
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.render import FILE_OVERHEAD, IndexItem, news_included, render_index, render_urlset
from sitemap_updater.core.sharding import KEY_SPACE, Limits, plan_ranges
from sitemap_updater.core.spill import Spilled, spill_state
from sitemap_updater.core.urls import Site, UrlError, canonical_media_url, canonical_page_url
from tests.conftest import AS_OF_US, BASE, HORIZON, event, parse

SITE = Site.parse(BASE, sections=None)
BODY_LIMIT = 262_144  # SQS's message size
FILE_BYTES = 52_428_800
CDN = "https://cdn.example.com/"


def _url(prefix: str, length: int) -> str:
    return prefix + "a" * (length - len(prefix))


def _accepted(body: dict[str, Any] | bytes | str) -> bool:
    raw = body if isinstance(body, bytes | str) else json.dumps(body).encode()
    try:
        parse_event(raw, SITE, HORIZON)
    except EventRejected:
        return False
    return True


@pytest.mark.parametrize(("length", "ok"), [(2047, True), (2048, False)])
def test_page_urls_under_2048_characters(length: int, ok: bool) -> None:
    assert _accepted(event(_url(f"{BASE}/blog/", length))) is ok
    # also when the URL needs canonicalising first (upper-case host): judged after canonicalisation
    assert _accepted(event(_url("https://WWW.example.com/blog/", length))) is ok
    assert (
        LineParser(SITE, HORIZON).record(json.dumps(event(_url(f"{BASE}/blog/", length))).encode()) is not None
    ) is ok


@pytest.mark.parametrize(("length", "ok"), [(2047, True), (2048, False)])
def test_media_urls_under_2048_characters(length: int, ok: bool) -> None:
    for prefix in (CDN, "https://CDN.example.com/"):
        url = _url(prefix, length)
        assert _accepted(event(images=[{"loc": url}])) is ok
        assert _accepted(event(alternates=[{"hreflang": "de", "href": url}])) is ok
        if ok:
            assert canonical_media_url(url) == url.lower()
        else:
            with pytest.raises(UrlError):
                canonical_media_url(url)
    assert (
        LineParser(SITE, HORIZON).record(json.dumps(event(images=[{"loc": _url(CDN, length)}])).encode()) is not None
    ) is ok


def test_a_percent_escape_that_grows_a_url_past_the_limit_is_rejected() -> None:
    url = _url(f"{BASE}/", 2045) + "é"  # 2,046 characters, 2,051 once é is percent-encoded
    with pytest.raises(UrlError):
        canonical_page_url(url, SITE)


@pytest.mark.parametrize(("count", "ok"), [(1000, True), (1001, False)])
def test_at_most_1000_images_per_page_on_both_paths(count: int, ok: bool) -> None:
    body = event(images=[{"loc": f"{CDN}i{i}.jpg"} for i in range(count)])
    assert _accepted(body) is ok
    assert (LineParser(SITE, HORIZON).record(json.dumps(body).encode()) is not None) is ok


@pytest.mark.parametrize(("size", "ok"), [(BODY_LIMIT, True), (BODY_LIMIT + 1, False)])
def test_the_body_size_limit_on_both_paths(size: int, ok: bool) -> None:
    raw = json.dumps(event()).encode()
    padded = raw + b" " * (size - len(raw))
    assert len(padded) == size
    assert _accepted(padded) is ok
    assert _accepted(padded.decode()) is ok
    assert (LineParser(SITE, HORIZON).record(padded) is not None) is ok


def test_an_oversized_body_names_its_size() -> None:
    with pytest.raises(EventRejected, match="262,145 bytes"):
        parse_event(b" " * (BODY_LIMIT + 1), SITE, HORIZON)


def _keys(count: int) -> list[int]:
    step = KEY_SPACE // count
    return [i * step for i in range(count)]


@pytest.mark.parametrize(("count", "files"), [(50_000, 1), (50_001, 2)])
def test_50000_urls_per_file(count: int, files: int) -> None:
    ranges = plan_ranges(_keys(count), [100] * count, Limits(max_urls=50_000), FILE_OVERHEAD)
    assert len(ranges) == files


@pytest.mark.parametrize(("extra", "files"), [(0, 1), (1, 2)])
def test_52428800_bytes_per_file_counting_the_overhead(extra: int, files: int) -> None:
    sizes = [1000] * 4
    sizes[-1] = FILE_BYTES - FILE_OVERHEAD - 3000 + extra
    assert len(plan_ranges(_keys(4), sizes, Limits(max_urls=50_000), FILE_OVERHEAD)) == files


def test_limits_accept_only_the_protocol_s_range() -> None:
    Limits(max_urls=50_000, max_bytes=FILE_BYTES)
    Limits(max_urls=1, max_bytes=1024)
    for bad in ({"max_urls": 50_001}, {"max_urls": 0}, {"max_bytes": FILE_BYTES + 1}, {"max_bytes": 1023}):
        with pytest.raises(ValueError):
            Limits(**bad)


def test_one_entry_too_big_for_a_file_is_a_limit_error() -> None:
    with pytest.raises(LimitExceeded):
        plan_ranges([5], [FILE_BYTES], Limits(), FILE_OVERHEAD)


@pytest.mark.parametrize(("count", "ok"), [(50_000, True), (50_001, False)])
def test_50000_files_per_index(count: int, ok: bool) -> None:
    items = [IndexItem(f"sitemap-s-{i:08x}.xml.gz", 0) for i in range(count)]
    if ok:
        assert render_index(BASE, items).count(b"<sitemap>") == count
    else:
        with pytest.raises(LimitExceeded, match="50,001"):
            render_index(BASE, items)


def _news_entries(count: int) -> list[Any]:
    entries = []
    for i in range(count):
        news = {"publication_name": "T", "publication_language": "en", "title": "t",
                "publication_date": f"2026-11-21T{i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"}  # fmt: skip
        entries.append(entry_from_event(parse(event(f"{BASE}/n/p{i}", news=news))))
    return sorted(entries, key=lambda e: e.sort_key)


@pytest.mark.parametrize(("count", "shown"), [(1000, 1000), (1001, 1000)])
def test_at_most_1000_news_per_file_the_newest_kept(count: int, shown: int) -> None:
    entries = _news_entries(count)
    included = news_included(entries, AS_OF_US)
    assert len(included) == shown
    if count > shown:
        oldest = min(range(count), key=lambda i: entries[i].news_us)
        assert oldest not in included
    assert render_urlset(entries, AS_OF_US).news_until_us == min(entries[i].news_us for i in included) + 172_800_000_000


def test_news_at_exactly_48_hours_is_kept_and_a_second_later_is_not() -> None:
    published = "2026-11-19T12:00:00Z"  # AS_OF is 2026-11-21T12:00:00Z
    news = {"publication_name": "T", "publication_language": "en", "title": "t", "publication_date": published}
    entries = [entry_from_event(parse(event(news=news)))]
    assert news_included(entries, AS_OF_US) == {0}
    assert news_included(entries, AS_OF_US + 1_000_000) == set()


def test_a_long_section_name_survives_the_record_format() -> None:
    for section in ("ü" * 100, "日" * 100, "x" * 100):  # up to 300 UTF-8 bytes
        state = state_from_event(parse(event(section=section)))
        assert list(decode_states(encode_state(state))) == [state]
    long_segment = event(_url(f"{BASE}/", 2000) + "/page")  # a default section of 1,995 bytes
    state = state_from_event(parse(long_segment))
    assert list(decode_states(encode_state(state))) == [state]
    with pytest.raises(EventRejected):
        parse_event(json.dumps(event(section="x" * 101)), SITE, HORIZON)


def _model_record(body: dict[str, Any]) -> Spilled:
    return spill_state(state_from_event(parse(body)))


def test_the_fast_path_takes_common_lines_at_the_edges_and_agrees_with_the_model() -> None:
    for body in (
        event(f"{BASE}/a?b/c"),  # a query before the second slash: a root page
        event(f"{BASE}/blog/a?b/c"),
        event(occurred_at="1970-01-01T00:00:00Z"),
        event(lastmod="1970-01-01", occurred_at="1970-06-01T00:00:00+02:00"),
    ):
        assert LineParser(SITE, HORIZON).record(json.dumps(body).encode()) == _model_record(body)
