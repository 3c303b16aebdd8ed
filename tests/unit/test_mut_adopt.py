"""Adoption's limits and protocol details, each as a site owner would notice it (issue 13's survivors of
service/adopt.py and service/adopt_fields.py): redirects, the request's headers, gzip streams and their ends,
one warning for a bad lastmod, and which parts of a ``<url>`` are kept or dropped and how they are named.

Sitemaps are served by a local HTTP server on 127.0.0.1; nothing leaves the machine."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt import Adoption
from sitemap_updater.service.adopt_fields import page_event
from tests.conftest import BASE

SITE = Site.parse(BASE, sections=None)
SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
DECLARE = (
    f'xmlns="{SM}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" xmlns:xhtml="http://www.w3.org/1999/xhtml"'
)
UNKNOWN = "1970-01-01T00:00:00Z"


def urlset(*paths: str) -> bytes:
    pages = "".join(f"<url><loc>{BASE}{p}</loc><lastmod>2026-11-02</lastmod></url>\n" for p in paths)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {DECLARE}>\n{pages}</urlset>\n'.encode()


class Web:
    """A local server: each path answers (status, headers, body); the headers of each request are kept."""

    def __init__(self) -> None:
        self.replies: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.asked: list[tuple[str, dict[str, str]]] = []
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                web.asked.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = web.replies.get(self.path, (404, {}, b"not found"))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server() -> Iterator[Web]:
    found = Web()
    yield found
    found.server.shutdown()
    found.server.server_close()


@pytest.fixture
def web(server: Web) -> Web:
    server.replies.clear()
    server.asked.clear()
    return server


def adopt(location: str) -> tuple[list[dict[str, Any]], Adoption]:
    adoption = Adoption(SITE, timeout=10)
    return [json.loads(body) for body in adoption.events(location)], adoption


def redirects(web: Web, count: int, status: int = 302) -> str:
    """A chain of ``count`` redirects ending at a sitemap of one page; the chain's first URL."""
    for hop in range(count):
        web.replies[f"/hop{hop}"] = (status, {"Location": f"/hop{hop + 1}"}, b"")
    web.replies[f"/hop{count}"] = (200, {}, urlset("/blog/a"))
    return f"{web.base}/hop0"


def test_the_documented_total_cap_is_4_gib() -> None:
    # README: all files together may give at most 4,294,967,296 bytes uncompressed
    assert Adoption(SITE).max_total_bytes == 4_294_967_296


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_each_redirect_status_is_followed(web: Web, status: int) -> None:
    events, adoption = adopt(redirects(web, 1, status))
    assert [e["url"] for e in events] == [f"{BASE}/blog/a"] and adoption.problems == []


def test_five_redirects_are_followed_and_a_sixth_is_not(web: Web) -> None:
    events, adoption = adopt(redirects(web, 5))
    assert len(events) == 1 and adoption.problems == []
    events, adoption = adopt(redirects(web, 6))
    assert events == []
    assert adoption.problems == [f"{web.base}/hop0: more than 5 redirects"]


def test_a_redirect_to_another_scheme_on_the_same_host_is_not_followed(web: Web) -> None:
    web.replies["/moved"] = (301, {"Location": f"ftp{web.base.removeprefix('http')}/sitemap.xml"}, b"")
    web.replies["/sitemap.xml"] = (200, {}, urlset("/blog/a"))
    events, adoption = adopt(f"{web.base}/moved")
    assert events == [] and len(adoption.problems) == 1
    assert "redirects to ftp://" in adoption.problems[0] and "not followed" in adoption.problems[0]
    assert [path for path, _ in web.asked] == ["/moved"]


def test_sitemaps_are_asked_for_gzip(web: Web) -> None:
    # Servers compress only for a client that says it can read gzip
    web.replies["/sitemap.xml"] = (200, {"Content-Encoding": "gzip"}, gzip.compress(urlset("/blog/a")))
    events, _adoption = adopt(f"{web.base}/sitemap.xml")
    assert len(events) == 1
    assert web.asked[0][1]["accept-encoding"] == "gzip"


def test_bytes_after_the_last_gzip_member_that_start_no_member_are_ignored(tmp_path: Path) -> None:
    # As gzip does with trailing garbage: here a zlib stream, which is no gzip member
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(urlset("/blog/a")) + zlib.compress(b"<url>not a page</url>"))
    events, adoption = adopt(str(path))
    assert len(events) == 1 and adoption.problems == []


def test_a_second_gzip_member_cut_short_in_its_header_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(urlset("/blog/a")) + b"\x1f\x8b\x08")
    events, adoption = adopt(str(path))
    assert len(events) == 1
    assert adoption.problems == [f"{path}: gzip data cut short; the 1 page(s) before that were adopted"]


@pytest.mark.parametrize("pages", range(1364, 1369))
def test_a_gzip_file_cut_short_keeps_every_page_that_arrived(tmp_path: Path, pages: int) -> None:
    # A download cut off before the gzip trailer (and the closing tag): every page whose bytes arrived is
    # adopted, however the last of them fall on the 64 KiB pieces the file is inflated in
    head = f'<?xml version="1.0"?>\n<urlset xmlns="{SM}">\n'.encode()
    xml = head + f"<url><loc>{BASE}/a</loc></url>\n".encode() * pages
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(xml, compresslevel=1, mtime=0)[:-8])
    events, adoption = adopt(str(path))
    assert len(events) == pages
    assert adoption.problems == [f"{path}: gzip data cut short; the {pages:,} page(s) before that were adopted"]


def test_an_invalid_lastmod_gives_one_warning_for_it_and_the_time_it_gave(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_bytes(urlset("/blog/a").replace(b"2026-11-02", b"2026-13-45"))
    events, adoption = adopt(str(path))
    assert len(events) == 1 and events[0]["occurred_at"] == UNKNOWN and events[0]["lastmod"] is None
    assert len(adoption.warning_lines) == 1
    assert adoption.warning_lines[0].startswith(f"{path}: warning: 1 page(s): lastmod: ")


def _page(inner: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    element = etree.fromstring(f'<url {DECLARE} xmlns:o="http://other.example/ns"><loc>{BASE}/a</loc>{inner}</url>')
    return page_event(element, UNKNOWN)


VIDEO_HEAD = (
    "<video:thumbnail_loc>https://cdn.example.com/t.jpg</video:thumbnail_loc><video:title>t</video:title>"
    "<video:description>d</video:description>"
)


def test_a_videos_platform_keeps_its_relationship_without_a_warning() -> None:
    event, dropped = _page(f'<video:video>{VIDEO_HEAD}<video:platform relationship="allow">web tv</video:platform>'
                           "</video:video>")  # fmt: skip
    assert event["videos"][0]["platform"] == {"relationship": "allow", "platforms": ["web", "tv"]}
    assert dropped == []


def test_an_element_of_another_namespace_in_a_video_is_dropped_by_its_label() -> None:
    inner = "<image:title>x</image:title><o:rank>1</o:rank><video:gallery_loc>https://x</video:gallery_loc>"
    event, dropped = _page(f"<video:video>{VIDEO_HEAD}{inner}</video:video>")
    assert set(event["videos"][0]) == {"thumbnail_loc", "title", "description"}
    assert dropped == [
        ("image:title", "not a field of the event contract: dropped"),
        ("{http://other.example/ns}rank", "not a field of the event contract: dropped"),
        ("video:gallery_loc", "not a field of the event contract: dropped"),
    ]


def test_only_an_image_image_element_is_an_image() -> None:
    event, dropped = _page("<o:image><o:loc>https://cdn.example.com/a.jpg</o:loc></o:image><image:caption>c"
                           "</image:caption>")  # fmt: skip
    assert "images" not in event
    assert [name for name, _ in dropped] == ["{http://other.example/ns}image", "image:caption"]


def test_only_an_xhtml_alternate_link_with_an_hreflang_is_an_alternate() -> None:
    event, dropped = _page(
        '<xhtml:link rel="canonical" href="https://www.example.com/b"/>'
        '<xhtml:link rel="alternate" href="https://www.example.com/c"/>'
        '<o:link rel="alternate" hreflang="de" href="https://www.example.com/d"/>'
        '<xhtml:meta rel="alternate" hreflang="fr" href="https://www.example.com/e"/>'
        '<xhtml:link rel="alternate" hreflang="en" href=" https://www.example.com/f "/>'
    )
    assert event["alternates"] == [{"hreflang": "en", "href": "https://www.example.com/f"}]
    assert [name for name, _ in dropped] == ["xhtml:link", "xhtml:link", "{http://other.example/ns}link", "xhtml:meta"]


def test_a_news_child_the_contract_has_no_field_for_is_dropped_by_its_label() -> None:
    news = (
        '<news:news xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"><news:publication><news:name>D'
        "</news:name><news:language>en</news:language></news:publication><news:title>T</news:title>"
        "<news:keywords>a, b</news:keywords></news:news>"
    )
    event, dropped = _page(news)
    assert event["news"] == {"publication_name": "D", "publication_language": "en", "title": "T"}
    assert dropped == [("news:keywords", "not a field of the event contract: dropped")]


def test_warnings_are_counted_per_element_name_with_only_the_digits_of_an_index_aside(tmp_path: Path) -> None:
    # Two pages drop <o:ref>, one drops <o:Xref>: two warning lines, the first counting two pages
    body = urlset("/a", "/b", "/c").decode()
    ns = 'xmlns:o="http://other.example/ns"'
    body = body.replace("<lastmod>2026-11-02</lastmod></url>", f"<o:ref {ns}>1</o:ref></url>", 2)
    body = body.replace("<lastmod>2026-11-02</lastmod></url>", f"<o:Xref {ns}>1</o:Xref></url>", 1)
    path = tmp_path / "sitemap.xml"
    path.write_text(body, encoding="utf-8")
    events, adoption = adopt(str(path))
    assert len(events) == 3
    counts = sorted(line.split(": warning: ")[1].split(" page(s)")[0] for line in adoption.warning_lines)
    assert counts == ["1", "2"]


def _damaged(data: bytes) -> bytes:
    """A gzip member of ``data`` whose CRC-32 is wrong."""
    member = bytearray(gzip.compress(data))
    member[-8] ^= 0xFF
    return bytes(member)


def test_a_second_gzip_member_with_a_wrong_checksum_is_reported(tmp_path: Path) -> None:
    # Its bytes (more than one 64 KiB piece) were inflated before the check at its end failed: not padding to
    # ignore, but a damaged file
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(urlset("/blog/a")) + _damaged(b" " * 200_000))
    events, adoption = adopt(str(path))
    assert len(events) == 1
    assert len(adoption.problems) == 1 and "not valid gzip (" in adoption.problems[0]


def test_a_small_damaged_second_member_of_a_text_sitemap_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.txt.gz"
    path.write_bytes(gzip.compress(f"{BASE}/blog/a\n".encode()) + _damaged(f"{BASE}/blog/b\n".encode()))
    events, adoption = adopt(str(path))
    assert len(events) == 1  # the page of the damaged member is not adopted
    assert len(adoption.problems) == 1 and "not valid gzip (" in adoption.problems[0]
