"""Conformance: expectations written by hand from sitemaps.org and Google's extension schemas, not computed by
the code under test. A page with every extension and hostile text in every text and attribute field renders
to exactly the XML below; the file is valid against the official schemas; lxml and ultimate-sitemap-parser read
back every field as the event gave it."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from sitemap_updater.core.entry import entry_from_event
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.layout import build_site
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.render import IndexItem, render_index, render_urlset
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.text import escape_text
from sitemap_updater.core.urls import Site
from tests.conftest import AS_OF_US, BASE, HORIZON, parse

XSD = Path(__file__).resolve().parents[3] / "shared" / "xsd"
HOUR_US = 3_600_000_000
CDN = "https://cdn.example.com"

PAGE: dict[str, Any] = {
    "type": "publish",
    "url": f"{BASE}/blog/a?x=1&y='2'",
    "occurred_at": "2026-11-20T10:00:00Z",
    "lastmod": "2026-11-20T10:30:45.5+02:00",
    "changefreq": "weekly",
    "priority": 0.25,
    "images": [
        {"loc": f"{CDN}/i.jpg?a=1&b=2", "title": 'Tom & "Jerry"', "caption": "<caption> 'café' 日本 🎉"},
        {"loc": f"{CDN}/i.jpg?a=1&b=2", "title": "a repeated image URL is listed once"},
        {"loc": f"{CDN}/j.jpg", "title": "only <title>"},
    ],
    "videos": [
        {
            "thumbnail_loc": f"{CDN}/t.jpg?a=1&b=2",
            "title": "A & B <1>",
            "description": "\"quoted\" 'single' >",
            "content_loc": f"{CDN}/v.mp4?k=1&l=2",
            "player_loc": f"{CDN}/player?id='7'",
            "duration": 600,
            "expiration_date": "2027-01-01T00:00:00+01:00",
            "rating": 4.5,
            "view_count": 12,
            "publication_date": "2026-11-01",
            "tags": ["rock & roll", "<live>"],
            "family_friendly": False,
            "restriction": {"relationship": "deny", "countries": ["DE", "FR"]},
            "requires_subscription": True,
            "uploader": {"name": 'Ann & "Bob"', "info": f"{CDN}/u?a=1&b=2"},
            "platform": {"relationship": "allow", "platforms": ["web", "tv"]},
            "live": False,
        }
    ],
    "alternates": [
        {"hreflang": "en", "href": f"{BASE}/en?a=1&b='x'"},
        {"hreflang": "de", "href": f"{BASE}/de?a=1&b=2"},
        {"hreflang": "de", "href": f"{BASE}/de?a=1&b=2"},
    ],
    "news": {
        "publication_name": 'Times & <Co> "Daily"',
        "publication_language": "de",
        "publication_date": "2026-11-21T10:00:00+01:00",
        "title": "Ünïcode & 'quotes' > 2",
    },
}

BODY = (
    "<url><loc>https://www.example.com/blog/a?x=1&amp;y=&apos;2&apos;</loc>"
    "<lastmod>2026-11-20T08:30:45+00:00</lastmod><changefreq>weekly</changefreq><priority>0.25</priority>"
    "<image:image><image:loc>https://cdn.example.com/i.jpg?a=1&amp;b=2</image:loc>"
    "<image:caption>&lt;caption&gt; &apos;café&apos; 日本 🎉</image:caption>"
    "<image:title>Tom &amp; &quot;Jerry&quot;</image:title></image:image>"
    "<image:image><image:loc>https://cdn.example.com/j.jpg</image:loc>"
    "<image:title>only &lt;title&gt;</image:title></image:image>"
    "<video:video><video:thumbnail_loc>https://cdn.example.com/t.jpg?a=1&amp;b=2</video:thumbnail_loc>"
    "<video:title>A &amp; B &lt;1&gt;</video:title>"
    "<video:description>&quot;quoted&quot; &apos;single&apos; &gt;</video:description>"
    "<video:content_loc>https://cdn.example.com/v.mp4?k=1&amp;l=2</video:content_loc>"
    "<video:player_loc>https://cdn.example.com/player?id=&apos;7&apos;</video:player_loc>"
    "<video:duration>600</video:duration><video:expiration_date>2026-12-31T23:00:00+00:00</video:expiration_date>"
    "<video:rating>4.5</video:rating><video:view_count>12</video:view_count>"
    "<video:publication_date>2026-11-01</video:publication_date>"
    "<video:tag>rock &amp; roll</video:tag><video:tag>&lt;live&gt;</video:tag>"
    "<video:family_friendly>no</video:family_friendly>"
    '<video:restriction relationship="deny">DE FR</video:restriction>'
    "<video:requires_subscription>yes</video:requires_subscription>"
    '<video:uploader info="https://cdn.example.com/u?a=1&amp;b=2">Ann &amp; &quot;Bob&quot;</video:uploader>'
    '<video:platform relationship="allow">web tv</video:platform><video:live>no</video:live></video:video>'
    '<xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de?a=1&amp;b=2"/>'
    '<xhtml:link rel="alternate" hreflang="en" href="https://www.example.com/en?a=1&amp;b=&apos;x&apos;"/>'
)
NEWS = (
    "<news:news><news:publication><news:name>Times &amp; &lt;Co&gt; &quot;Daily&quot;</news:name>"
    "<news:language>de</news:language></news:publication>"
    "<news:publication_date>2026-11-21T09:00:00+00:00</news:publication_date>"
    "<news:title>Ünïcode &amp; &apos;quotes&apos; &gt; 2</news:title></news:news>"
)
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
ALL_NS = (
    ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
    ' xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"'
    ' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"'
    ' xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)
NO_NEWS_NS = ALL_NS.replace(' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"', "")
FILE = HEAD + ALL_NS + BODY + NEWS + "</url>\n</urlset>\n"
NS = {
    "s": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
    "video": "http://www.google.com/schemas/sitemap-video/1.1",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
}


def _file(body: dict[str, Any], as_of_us: int = AS_OF_US) -> str:
    entry = entry_from_event(parse(body))
    return gzip.decompress(render_urlset([entry], as_of_us).data).decode()


def test_every_extension_with_hostile_text_renders_to_the_hand_written_xml() -> None:
    assert _file(PAGE) == FILE


def test_the_model_path_and_a_plain_json_body_agree_on_the_bytes() -> None:
    parsed = parse_event(json.dumps(PAGE, ensure_ascii=False).encode(), Site.parse(BASE, sections=None), HORIZON).event
    assert (entry_from_event(parsed).body + entry_from_event(parsed).news).decode() == BODY + NEWS


@pytest.mark.skipif(not (XSD / "all-urlset.xsd").exists(), reason="../shared/xsd is not beside the repository")
def test_the_file_is_valid_against_the_official_schemas() -> None:
    schema = etree.XMLSchema(etree.parse(str(XSD / "all-urlset.xsd")))
    doc = etree.fromstring(FILE.encode())
    assert schema.validate(doc), schema.error_log
    assert schema.validate(etree.fromstring(_file(PAGE).encode())), schema.error_log


def test_lxml_reads_back_every_field_as_the_event_gave_it() -> None:
    url = etree.fromstring(_file(PAGE).encode()).find("s:url", NS)
    assert url is not None

    def text(path: str, node: etree._Element = url) -> str | None:
        return node.findtext(path, namespaces=NS)

    assert text("s:loc") == PAGE["url"]
    assert text("s:lastmod") == "2026-11-20T08:30:45+00:00"
    assert (text("s:changefreq"), text("s:priority")) == ("weekly", "0.25")
    images = url.findall("image:image", NS)
    assert [(text("image:loc", i), text("image:title", i), text("image:caption", i)) for i in images] == [
        (PAGE["images"][0]["loc"], PAGE["images"][0]["title"], PAGE["images"][0]["caption"]),
        (PAGE["images"][2]["loc"], PAGE["images"][2]["title"], None),
    ]
    video = url.find("video:video", NS)
    assert video is not None
    given = PAGE["videos"][0]
    for name in ("thumbnail_loc", "title", "description", "content_loc", "player_loc"):
        assert text(f"video:{name}", video) == given[name]
    assert [t.text for t in video.findall("video:tag", NS)] == given["tags"]
    uploader = video.find("video:uploader", NS)
    assert uploader is not None
    assert (uploader.text, uploader.get("info")) == (given["uploader"]["name"], given["uploader"]["info"])
    links = url.findall("xhtml:link", NS)
    assert [(link.get("rel"), link.get("hreflang"), link.get("href")) for link in links] == [
        ("alternate", "de", f"{BASE}/de?a=1&b=2"),
        ("alternate", "en", f"{BASE}/en?a=1&b='x'"),
    ]
    news = url.find("news:news", NS)
    assert news is not None
    assert text("news:publication/news:name", news) == PAGE["news"]["publication_name"]
    assert text("news:title", news) == PAGE["news"]["title"]
    assert text("news:publication/news:language", news) == "de"


def test_ultimate_sitemap_parser_reads_back_the_page() -> None:
    from usp.tree import sitemap_from_str

    pages = list(sitemap_from_str(_file(PAGE)).all_pages())
    assert len(pages) == 1
    page = pages[0]
    assert page.url == PAGE["url"]
    assert str(page.priority) == "0.25"
    assert [(i.loc, i.title, i.caption) for i in page.images or []] == [
        (PAGE["images"][0]["loc"], PAGE["images"][0]["title"], PAGE["images"][0]["caption"]),
        (PAGE["images"][2]["loc"], PAGE["images"][2]["title"], None),
    ]
    assert page.news_story is not None
    assert page.news_story.title == PAGE["news"]["title"]
    assert page.news_story.publication_name == PAGE["news"]["publication_name"]


def test_news_is_shown_until_exactly_48_hours_and_not_a_second_longer() -> None:
    published_us = AS_OF_US - 3 * HOUR_US  # 2026-11-21T09:00:00Z
    at_48h = published_us + 48 * HOUR_US
    assert _file(PAGE, at_48h) == FILE
    without = HEAD + NO_NEWS_NS + BODY + "</url>\n</urlset>\n"
    assert _file(PAGE, at_48h + 1_000_000) == without
    entry = entry_from_event(parse(PAGE))
    assert render_urlset([entry], AS_OF_US).news_until_us == at_48h
    assert render_urlset([entry], at_48h + 1_000_000).news_until_us == 0


def test_each_file_keeps_news_only_for_its_own_fresh_items() -> None:
    # Given two pages with news, one of them stale
    fresh = {**PAGE, "url": f"{BASE}/blog/fresh"}
    stale_news = {**PAGE["news"], "publication_date": "2026-11-19T11:59:59Z"}
    stale = {**PAGE, "url": f"{BASE}/blog/stale", "news": stale_news}
    entries = sorted([entry_from_event(parse(b)) for b in (fresh, stale)], key=lambda e: e.sort_key)
    text = gzip.decompress(render_urlset(entries, AS_OF_US).data).decode()
    # Then only the fresh page shows its news
    assert text.count("<news:news>") == 1
    assert f"<loc>{BASE}/blog/fresh</loc>" in text.split("<news:news>")[0].rsplit("<url>", 1)[1]


def test_a_page_digest_covers_its_news() -> None:
    other_title = {**PAGE, "news": {**PAGE["news"], "title": "another title"}}
    a, b = state_from_event(parse(PAGE)), state_from_event(parse(other_title))
    assert a.digest != b.digest and a.rank != b.rank
    assert a.digest == hashlib.sha256((BODY + NEWS).encode()).hexdigest()


def test_namespaces_are_declared_only_when_used() -> None:
    plain = {"type": "upsert", "url": f"{BASE}/p", "occurred_at": "2026-11-20T10:00:00Z", "lastmod": "2026-11-20"}
    expected = HEAD + ">\n<url><loc>https://www.example.com/p</loc><lastmod>2026-11-20</lastmod></url>\n</urlset>\n"
    assert _file(plain) == expected
    for field, prefix in (("images", "image"), ("alternates", "xhtml"), ("videos", "video")):
        text = _file({**plain, field: PAGE[field]})
        declared = {name for name in ("image", "video", "news", "xhtml") if f"xmlns:{name}=" in text}
        assert declared == {prefix}


def test_lastmod_is_the_event_s_else_the_moment_of_the_change_and_none_when_null() -> None:
    plain = {"type": "upsert", "url": f"{BASE}/p", "occurred_at": "2026-11-20T10:00:00.9-05:00"}
    assert "<lastmod>2026-11-20T15:00:00+00:00</lastmod>" in _file(plain)
    assert "<lastmod>2026-11-02</lastmod>" in _file({**plain, "lastmod": "2026-11-02"})
    # "lastmod": null says the page has none (a sitemap adopted without one): the element is left out
    undated = _file({**plain, "lastmod": None})
    assert f"<url><loc>{BASE}/p</loc></url>" in undated and "<lastmod>" not in undated
    assert entry_from_event(parse({**plain, "lastmod": None})).lastmod_us == 0


def test_the_index_is_the_hand_written_xml() -> None:
    # a file none of whose pages has a lastmod (0) is named without one
    items = [IndexItem("sitemap-b-00000000.xml.gz", 1_795_262_400_000_000), IndexItem("sitemap-a-8.xml.gz", 0)]
    assert render_index(BASE, items).decode() == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        "<sitemap><loc>https://www.example.com/sitemap-a-8.xml.gz</loc></sitemap>\n"
        "<sitemap><loc>https://www.example.com/sitemap-b-00000000.xml.gz</loc>"
        "<lastmod>2026-11-21T12:00:00+00:00</lastmod></sitemap>\n"
        "</sitemapindex>\n"
    )


def test_a_file_s_lastmod_is_its_newest_page_or_a_later_delete_in_it() -> None:
    up = {"type": "upsert", "url": f"{BASE}/blog/a", "occurred_at": "2026-11-20T10:00:00Z", "lastmod": "2026-11-05"}
    newer = {**up, "url": f"{BASE}/blog/b", "lastmod": "2026-11-07"}
    gone = {"type": "delete", "url": f"{BASE}/blog/c", "occurred_at": "2026-11-09T00:00:00Z"}
    entries = [entry_from_event(parse(b)) for b in (up, newer)]
    tomb = state_from_event(parse(gone)).tombstone
    assert tomb is not None
    site = build_site(entries, [], Limits(), AS_OF_US, BASE)
    assert [i.lastmod_us for i in site.index_items] == [1_794_009_600_000_000]  # 2026-11-07
    site = build_site(entries, [tomb], Limits(), AS_OF_US, BASE)
    assert [i.lastmod_us for i in site.index_items] == [1_794_182_400_000_000]  # 2026-11-09
    early = state_from_event(parse({**gone, "occurred_at": "2026-11-01T00:00:00Z"})).tombstone
    assert early is not None
    site = build_site(entries, [early], Limits(), AS_OF_US, BASE)
    assert [i.lastmod_us for i in site.index_items] == [1_794_009_600_000_000]


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"), ("a&amp;b", "a&amp;amp;b"),
     ("日本 é 🎉", "日本 é 🎉"), ("<&>\"'", "&lt;&amp;&gt;&quot;&apos;")],
)  # fmt: skip
def test_the_five_entities(raw: str, escaped: str) -> None:
    assert escape_text(raw) == escaped
