"""Rendering: valid, escaped, byte-stable files; news freshness; an index whose lastmods come from data."""

from __future__ import annotations

import gzip
from typing import Any

from lxml import etree

from sitemap_updater.core.entry import entry_from_event
from sitemap_updater.core.render import MAX_NEWS_PER_FILE, render_index, render_urlset
from sitemap_updater.core.sharding import Limits
from tests.conftest import AS_OF_US, BASE, event, parse, reference_site

NS = {
    "s": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
    "video": "http://www.google.com/schemas/sitemap-video/1.1",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
}
NEWS = {"publication_name": "Example Times", "publication_language": "en", "title": "Tram line approved"}


def xml_of(bodies: list[dict[str, Any]]) -> etree._Element:
    entries = sorted((entry_from_event(parse(b)) for b in bodies), key=lambda e: e.sort_key)
    data = render_urlset(entries, AS_OF_US).data
    return etree.fromstring(gzip.decompress(data))


def test_gzip_is_deterministic_with_no_time_or_name() -> None:
    entries = [entry_from_event(parse(event()))]
    first, second = render_urlset(entries, AS_OF_US), render_urlset(entries, AS_OF_US)
    assert first.data == second.data
    header = first.data[:10]
    assert header[:3] == b"\x1f\x8b\x08"
    assert header[3] == 0  # no FNAME, no FEXTRA, no comment
    assert header[4:8] == b"\0\0\0\0"  # mtime 0
    assert gzip.decompress(first.data).startswith(b'<?xml version="1.0" encoding="UTF-8"?>')


def test_only_used_namespaces_are_declared() -> None:
    plain = xml_of([event()])
    assert set(plain.nsmap.values()) == {NS["s"]}
    with_image = xml_of([event(images=[{"loc": "https://cdn.example.com/a.jpg"}]), event(f"{BASE}/blog/b")])
    assert set(with_image.nsmap.values()) == {NS["s"], NS["image"]}


def test_markup_characters_are_entity_escaped_and_round_trip() -> None:
    root = xml_of([event(f"{BASE}/a?x=1&y='2'", images=[{"loc": f"{BASE}/i.jpg", "caption": "Tom & <Jerry>"}])])
    assert root.findtext("s:url/s:loc", namespaces=NS) == f"{BASE}/a?x=1&y='2'"
    assert root.findtext("s:url/image:image/image:caption", namespaces=NS) == "Tom & <Jerry>"


def test_elements_follow_schema_order_and_w3c_dates() -> None:
    root = xml_of([event(lastmod="2026-11-20T12:30:45.123+02:00", changefreq="daily", priority=0.5)])
    url = root.find("s:url", NS)
    assert url is not None
    assert [etree.QName(child).localname for child in url] == ["loc", "lastmod", "changefreq", "priority"]
    assert url.findtext("s:lastmod", namespaces=NS) == "2026-11-20T10:30:45+00:00"
    assert xml_of([event(lastmod="2026-11-20")]).findtext("s:url/s:lastmod", namespaces=NS) == "2026-11-20"


def test_lastmod_defaults_to_the_time_of_the_change() -> None:
    root = xml_of([event(occurred_at="2026-11-19T08:00:00Z")])
    assert root.findtext("s:url/s:lastmod", namespaces=NS) == "2026-11-19T08:00:00+00:00"


def test_news_older_than_two_days_is_left_out_but_the_page_stays() -> None:
    fresh = event(f"{BASE}/news/fresh", news={**NEWS, "publication_date": "2026-11-20T12:00:00Z"})
    stale = event(f"{BASE}/news/stale", news={**NEWS, "publication_date": "2026-11-19T11:59:59Z"})
    root = xml_of([fresh, stale])
    assert len(root.findall("s:url", NS)) == 2
    assert [
        u.findtext("s:loc", namespaces=NS) for u in root.findall("s:url", NS) if u.find("news:news", NS) is not None
    ] == [f"{BASE}/news/fresh"]


def test_without_fresh_news_the_news_namespace_is_not_declared() -> None:
    stale = event(f"{BASE}/news/stale", news={**NEWS, "publication_date": "2026-11-01T00:00:00Z"})
    assert NS["news"] not in xml_of([stale]).nsmap.values()


def test_at_most_1000_news_entries_per_file_the_newest_kept() -> None:
    bodies = [
        event(f"{BASE}/news/{i}", news={**NEWS, "publication_date": f"2026-11-21T{i // 60:02d}:{i % 60:02d}:00Z"})
        for i in range(1_200)
    ]
    root = xml_of(bodies)
    assert len(root.findall("s:url", NS)) == 1_200
    with_news = root.findall("s:url/news:news", NS)
    assert len(with_news) == MAX_NEWS_PER_FILE
    kept = sorted(n.findtext("news:publication_date", namespaces=NS) or "" for n in with_news)
    assert kept[0] >= "2026-11-21T03:20:00+00:00"  # the 200 oldest are the ones left out


def test_video_and_hreflang_render_in_schema_order() -> None:
    video = {
        "thumbnail_loc": f"{BASE}/t.jpg", "title": "T", "description": "D", "content_loc": f"{BASE}/v.mp4",
        "duration": 60, "rating": 4.5, "tags": ["a", "b"], "family_friendly": False, "live": False,
        "restriction": {"relationship": "allow", "countries": ["DE", "AT"]},
        "uploader": {"name": "Ann", "info": f"{BASE}/ann"},
        "platform": {"relationship": "deny", "platforms": ["tv"]},
    }  # fmt: skip
    alternates = [{"hreflang": "de-AT", "href": f"{BASE}/de"}, {"hreflang": "en", "href": f"{BASE}/en"}]
    root = xml_of([event(videos=[video], alternates=alternates)])
    children = [etree.QName(c).localname for c in root.findall("s:url/video:video/*", NS)]
    assert children == [
        "thumbnail_loc", "title", "description", "content_loc", "duration", "rating", "tag", "tag",
        "family_friendly", "restriction", "uploader", "platform", "live",
    ]  # fmt: skip
    links = root.findall("s:url/xhtml:link", NS)
    assert [(link.get("rel"), link.get("hreflang")) for link in links] == [("alternate", "de-AT"), ("alternate", "en")]


def test_index_lastmod_is_the_newest_entry_of_each_file() -> None:
    built = reference_site([event(lastmod="2026-11-01"), event(f"{BASE}/blog/b", lastmod="2026-11-05T10:00:00Z")])
    index = etree.fromstring(built.index)
    assert index.findtext("s:sitemap/s:loc", namespaces=NS) == f"{BASE}/sitemap-blog-00000000.xml.gz"
    assert index.findtext("s:sitemap/s:lastmod", namespaces=NS) == "2026-11-05T10:00:00+00:00"


def test_a_later_delete_moves_the_files_lastmod() -> None:
    keep = event(lastmod="2026-11-01")
    gone = event(f"{BASE}/blog/gone", lastmod="2026-11-02", version=1)
    delete = event(f"{BASE}/blog/gone", type="delete", version=2, occurred_at="2026-11-10T09:00:00Z")
    index = etree.fromstring(reference_site([keep, gone, delete]).index)
    assert index.findtext("s:sitemap/s:lastmod", namespaces=NS) == "2026-11-10T09:00:00+00:00"


def test_the_index_is_byte_stable_and_never_reads_the_clock() -> None:
    bodies = [event(f"{BASE}/{s}/p", lastmod="2026-11-03") for s in ("blog", "docs", "shop")]
    assert reference_site(bodies).index == reference_site(list(reversed(bodies))).index
    assert render_index(BASE, []) == render_index(BASE, [])


def test_a_section_of_many_files_is_listed_in_name_order() -> None:
    bodies = [event(f"{BASE}/blog/{i}") for i in range(300)]
    built = reference_site(bodies, Limits(max_urls=50))
    names = [item.name for item in built.index_items]
    assert names == sorted(names) and len(names) >= 6
    assert sum(f.url_count for f in built.files.values()) == 300
