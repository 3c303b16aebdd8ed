"""Adopting a site's existing sitemaps (`local --adopt`, `import --sitemap`): lossless, bounded and safe.

Sitemaps are served by local HTTP servers on 127.0.0.1 (and 127.0.0.2 as "another host"); nothing leaves the
machine. Files adopted by the command are read back with lxml and ultimate-sitemap-parser.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from sitemap_updater.cli import main
from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt import UNKNOWN_TIME, Adoption
from sitemap_updater.service.adopt_limits import MAX_FILE_BYTES, MAX_TOTAL_BYTES
from tests.conftest import BASE, event
from tests.integration.conftest import FIXED_NOW, LocalRunFactory

NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
DECLARE = (
    'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" '
    'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml"'
)


@dataclass
class Reply:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    cut: bool = False  # announce the whole length, send half of it, close


class Web:
    """A local HTTP server answering each path with its Reply (404 otherwise), recording what was asked."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.replies: dict[str, Reply] = {}
        self.requests: list[str] = []
        web = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                web.requests.append(self.path)
                reply = web.replies.get(self.path, Reply(b"<html>not found</html>", 404))
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body[: len(reply.body) // 2] if reply.cut else reply.body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.base = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def web() -> Iterator[Web]:
    server = Web()
    yield server
    server.close()


@pytest.fixture
def other_host() -> Iterator[Web]:
    server = Web("127.0.0.2")
    yield server
    server.close()


def urlset(*urls: str) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {DECLARE}>\n{"".join(urls)}</urlset>\n'.encode()


def index(*locs: str) -> bytes:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'<?xml version="1.0"?>\n<sitemapindex xmlns="{NS["s"]}">\n{items}</sitemapindex>\n'.encode()


def url(path: str, lastmod: str | None = "2026-11-02", extra: str = "") -> str:
    when = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    return f"<url><loc>{BASE}{path}</loc>{when}{extra}</url>\n"


def adopt(location: str, max_total_bytes: int = MAX_TOTAL_BYTES) -> tuple[list[dict[str, Any]], Adoption]:
    adoption = Adoption(Site.parse(BASE, sections=None), max_total_bytes=max_total_bytes)
    return [json.loads(body) for body in adoption.events(location)], adoption


def local_adopt(location: str, out: Path, moto_endpoint: str, *more: str) -> int:
    return main(["local", "--site", BASE, "--adopt", location, "--out", str(out), "--endpoint-url", moto_endpoint,
                 *more])  # fmt: skip


# --- the round trip ------------------------------------------------------------------------------------------
def _fresh() -> str:
    """A news publication date the local run (on the real clock) still shows: an hour ago, whole seconds."""
    return (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def every_extension() -> list[str]:
    video = (
        "<video:video><video:thumbnail_loc>https://cdn.example.com/t.jpg</video:thumbnail_loc>"
        "<video:title>Latte art</video:title><video:description>Pouring a rosetta &amp; a tulip</video:description>"
        "<video:content_loc>https://cdn.example.com/v.mp4</video:content_loc>"
        "<video:player_loc>https://www.example.com/player?v=1</video:player_loc>"
        "<video:duration>62</video:duration><video:expiration_date>2027-11-20T10:00:00Z</video:expiration_date>"
        "<video:rating>4.2</video:rating><video:view_count>1234</video:view_count>"
        "<video:publication_date>2026-11-19T08:00:00Z</video:publication_date>"
        "<video:tag>coffee</video:tag><video:tag>milk</video:tag><video:family_friendly>yes</video:family_friendly>"
        '<video:restriction relationship="allow">IE GB US</video:restriction>'
        "<video:requires_subscription>no</video:requires_subscription>"
        '<video:uploader info="https://www.example.com/baristas/ana">Ana</video:uploader>'
        '<video:platform relationship="deny">tv</video:platform><video:live>no</video:live></video:video>'
    )
    images = (
        "<image:image><image:loc>https://cdn.example.com/a.jpg</image:loc>"
        "<image:caption>Crema, up close</image:caption><image:title>Crema</image:title></image:image>"
        "<image:image><image:loc>https://cdn.example.com/b.jpg</image:loc></image:image>"
    )
    news = (
        "<news:news><news:publication><news:name>Example Times</news:name><news:language>en</news:language>"
        f"</news:publication><news:publication_date>{_fresh()}</news:publication_date>"
        "<news:title>Council votes</news:title></news:news>"
    )
    alternates = (
        f'<xhtml:link rel="alternate" hreflang="de-AT" href="{BASE}/de-at/kaffee"/>'
        f'<xhtml:link rel="alternate" hreflang="x-default" href="{BASE}/coffee"/>'
    )
    return [
        url("/coffee", "2026-11-20T10:00:00Z", "<changefreq>weekly</changefreq><priority>0.5</priority>" + images),
        url("/videos/latte-art", "2026-11-19", video + alternates),
        url("/news/council-vote", "2026-11-21T09:30:00Z", news + "<changefreq>hourly</changefreq>"),
        url("/blog/%C3%BCber?a=1&amp;b=2", "2026-10-01T00:00:00Z", "<priority>1.0</priority>"),
    ]


def _normal(element: Any) -> str:
    """An element with its text read as a value (a date-time as its instant, a number as a number) and its
    children in sorted order: equal for equal content, however it was written."""
    text: Any = (element.text or "").strip()
    try:
        text = datetime.fromisoformat(text).astimezone(UTC) if "T" in text else date.fromisoformat(text)
    except ValueError:
        with contextlib.suppress(ValueError):
            text = float(text)
    children = sorted(_normal(child) for child in element.iterchildren("*"))
    return repr((element.tag, sorted(element.attrib.items()), text, children))


def lxml_pages(documents: Iterable[bytes]) -> dict[str, str]:
    found = {}
    for document in documents:
        for page in etree.fromstring(document).iterfind("s:url", NS):
            found[str(page.findtext("s:loc", namespaces=NS))] = _normal(page)
    return found


def usp_pages(documents: Iterable[bytes]) -> dict[str, Any]:
    from usp.tree import sitemap_from_str  # ultimate-sitemap-parser

    return {p.url: p for d in documents for p in sitemap_from_str(d.decode("utf-8")).all_pages()}


def test_every_extension_round_trips_through_local_adopt(web: Web, tmp_path: Path, moto_endpoint: str) -> None:
    # Given a site's index on its host, naming a plain and a gzip sitemap with every extension between them
    pages = every_extension()
    sources = [urlset(*pages[:2]), urlset(*pages[2:])]
    web.replies["/sitemap.xml"] = Reply(index(web.url("/sitemap-a.xml"), web.url("/sitemap-b.xml.gz")))
    web.replies["/sitemap-a.xml"] = Reply(sources[0])
    # (a gzip file the server compresses again for the wire: Content-Encoding gzip)
    twice = gzip.compress(gzip.compress(sources[1]))
    web.replies["/sitemap-b.xml.gz"] = Reply(twice, headers={"Content-Encoding": "gzip"})
    # When it is adopted into a local stack, with no environment variable set
    out = tmp_path / "out"
    assert local_adopt(web.url("/sitemap.xml"), out, moto_endpoint) == 0
    # Then what is published reads back, with lxml and with ultimate-sitemap-parser, as the source does
    published = [gzip.decompress(p.read_bytes()) for p in sorted(out.glob("sitemap-*.xml.gz"))]
    assert len(lxml_pages(published)) == 4
    assert lxml_pages(published) == lxml_pages(sources)
    assert usp_pages(published) == usp_pages(sources)


def test_a_page_without_lastmod_gets_none_and_adopting_again_changes_nothing(
    tmp_path: Path, local_run: LocalRunFactory
) -> None:
    # Given a sitemap with a page without lastmod
    path = tmp_path / "sitemap.xml"
    path.write_bytes(urlset(url("/blog/undated", lastmod=None), url("/blog/dated")))
    # When it is adopted, its event says it has no lastmod, with the earliest time of change
    events, _ = adopt(str(path))
    undated = next(e for e in events if e["url"].endswith("undated"))
    assert undated["lastmod"] is None and undated["occurred_at"] == UNKNOWN_TIME
    # Then the published page shows no lastmod (none is made up), the dated one keeps its own
    run = local_run()
    run.import_site(json.dumps(e) for e in events)
    first = run.published()
    xml = b"".join(gzip.decompress(d) for d in first.values() if d[:2] == b"\x1f\x8b")
    assert f"<url><loc>{BASE}/blog/undated</loc></url>".encode() in xml
    assert b"<lastmod>2026-11-02</lastmod>" in xml and b"1970-01-01" not in first["sitemap.xml"] + xml
    # And adopting the unchanged sitemap again gives the same events, which sent to the live site change nothing
    again, _ = adopt(str(path))
    assert again == events
    report = run.send_wave([json.dumps(e) for e in again])
    assert report.events["accepted"] == 0 and report.put == []
    assert run.published() == first
    # And any real change to the page afterwards outranks the adopted state
    report = run.send_wave([json.dumps(event(f"{BASE}/blog/undated", lastmod="2026-11-21"))])
    assert report.events["accepted"] == 1
    assert b"<lastmod>2026-11-21</lastmod>" in b"".join(gzip.decompress(d) for d in run.published().values()
                                                         if d[:2] == b"\x1f\x8b")  # fmt: skip


def test_a_lastmod_in_the_future_is_kept_but_never_makes_a_real_change_stale(
    tmp_path: Path, local_run: LocalRunFactory
) -> None:
    # Given a sitemap whose generator wrote a lastmod a month ahead of the adoption
    path = tmp_path / "sitemap.xml"
    path.write_bytes(urlset(url("/blog/ahead", lastmod="2026-12-21T12:00:00Z")))
    adoption = Adoption(Site.parse(BASE, sections=None), now=FIXED_NOW)
    events = [json.loads(body) for body in adoption.events(str(path))]
    # Then the lastmod is kept, and the page's changes are not ordered by it (with a warning saying so)
    assert events[0]["lastmod"] == "2026-12-21T12:00:00Z" and events[0]["occurred_at"] == UNKNOWN_TIME
    assert "lastmod: in the future: kept, but it does not order the page's changes" in adoption.warning_lines[0]
    # And the CMS's next change to the page, made today, is published
    run = local_run()
    run.import_site(json.dumps(e) for e in events)
    report = run.send_wave([json.dumps(event(f"{BASE}/blog/ahead", lastmod="2026-11-21"))])
    assert report.events["accepted"] == 1
    assert report.changed_urls == [f"{BASE}/blog/ahead"]


def test_a_bad_field_is_dropped_with_a_warning_and_its_page_kept(tmp_path: Path) -> None:
    # Given pages each with one field the contract rejects, and elements it has no field for
    bad = [
        url("/a", extra="<changefreq>sometimes</changefreq><priority>0.3</priority>"),
        url("/b", lastmod="last tuesday", extra="<priority>7</priority>"),
        url(
            "/c",
            extra="<image:image><image:loc>javascript:alert(1)</image:loc></image:image>"
            "<image:image><image:loc>https://cdn.example.com/ok.jpg</image:loc>"
            "<image:geo_location>Lisbon</image:geo_location></image:image>",
        ),
        url("/d", extra='<xhtml:link rel="alternate" hreflang="not a language!" href="https://www.example.com/x"/>'),
        url(
            "/e",
            extra="<news:news><news:publication><news:name>N</news:name><news:language>English</news:language>"
            "</news:publication><news:publication_date>2026-11-20</news:publication_date>"
            "<news:title>T</news:title></news:news><mobile:mobile xmlns:mobile='urn:m'/>",
        ),
        url("/f", lastmod="2026-11-20T23:30:00"),
    ]
    path = tmp_path / "sitemap.xml"
    path.write_bytes(urlset(*bad))
    # When it is adopted
    events, adoption = adopt(str(path))
    by_url = {e["url"].rsplit("/", 1)[1]: e for e in events}
    # Then every page is kept, without the bad field but with the rest
    assert sorted(by_url) == ["a", "b", "c", "d", "e", "f"]
    assert "changefreq" not in by_url["a"] and by_url["a"]["priority"] == 0.3
    assert "priority" not in by_url["b"] and by_url["b"]["lastmod"] is None
    assert by_url["b"]["occurred_at"] == UNKNOWN_TIME
    assert by_url["c"]["images"] == [{"loc": "https://cdn.example.com/ok.jpg"}]
    assert "alternates" not in by_url["d"] and "news" not in by_url["e"]
    assert by_url["f"]["lastmod"] == "2026-11-20"  # a time without its offset: only its date is certain
    # And each dropped field is a warning naming the file, the field and the first page
    warnings = "\n".join(adoption.warning_lines)
    for text in ("changefreq:", "priority:", "lastmod: 'last tuesday'", "images[0].loc:", "image:geo_location",
                 "alternates[0].hreflang:", "news.publication_language:", "{urn:m}mobile",
                 "lastmod: '2026-11-20T23:30:00' has no UTC offset: its time dropped, its date kept"):  # fmt: skip
        assert text in warnings
    assert f"{path}: warning: 1 page(s): changefreq:" in warnings and f"(first: {BASE}/a)" in warnings
    assert adoption.problems == []


def test_text_sitemaps_are_adopted_plain_or_gzip(web: Web) -> None:
    lines = f"{BASE}/one\r\n\n  {BASE}/two  \n{BASE}/three".encode()
    web.replies["/a.txt"] = Reply(b"\xef\xbb\xbf" + lines)
    web.replies["/b.txt.gz"] = Reply(gzip.compress(f"{BASE}/four\nnot a url\n".encode()))
    web.replies["/sitemap.xml"] = Reply(index(web.url("/a.txt"), web.url("/b.txt.gz")))
    events, adoption = adopt(web.url("/sitemap.xml"))
    assert [e["url"] for e in events] == [f"{BASE}/one", f"{BASE}/two", f"{BASE}/three", f"{BASE}/four"]
    assert all(e["lastmod"] is None for e in events)  # a text sitemap gives no lastmod: none is shown
    assert adoption.problems == [
        f"{web.url('/b.txt.gz')} (listed in {web.url('/sitemap.xml')}): page not a url skipped: "
        "url: must be an absolute http or https URL, not a relative URL"
    ]


# --- what cannot be read -------------------------------------------------------------------------------------
def _failing_site(web: Web, other_host: Web) -> dict[str, str]:
    """An index naming one good sitemap and one of each failure; what each failure must say."""
    good = urlset(url("/good/one"), url("/good/two"))
    cut = urlset(url("/cut/kept"), url("/cut/lost"))
    web.replies.update({
        "/good.xml": Reply(good),
        "/cut.xml": Reply(cut[: cut.index(b"/cut/lost")]),
        "/cut-download.xml": Reply(good, cut=True),
        "/moved.xml": Reply(b"", 302, {"Location": other_host.url("/latest/meta-data/")}),
        "/page.html": Reply(b"<!DOCTYPE html><html><body>Sitemap</body></html>", 200),
        "/bad.xml.gz": Reply(b"\x1f\x8b\x07\x00" + bytes(6) + b"not deflate"),
        "/cut.xml.gz": Reply(gzip.compress(good)[:-30]),
    })  # fmt: skip
    children = ["/good.xml", "/missing.xml", "/cut.xml", "/cut-download.xml", "/moved.xml", "/page.html",
                "/bad.xml.gz", "/cut.xml.gz"]  # fmt: skip
    foreign = other_host.url("/sitemap-foreign.xml")
    web.replies["/sitemap.xml"] = Reply(index(*[web.url(c) for c in children], foreign, web.url("/sitemap.xml")))
    listed = f"(listed in {web.url('/sitemap.xml')})"
    return {
        "/missing.xml": f"{web.url('/missing.xml')} {listed}: HTTP 404 Not Found",
        "/cut.xml": f"{web.url('/cut.xml')} {listed}: not well-formed XML, or cut short",
        "/cut-kept": "; the 1 page(s) before that were adopted",
        "/cut-download.xml": f"{web.url('/cut-download.xml')} {listed}: download cut short: ",
        "/moved.xml": f"{web.url('/moved.xml')} {listed}: redirects to {other_host.url('/latest/meta-data/')}, "
        "off the site's host: not followed",
        "/page.html": f"{web.url('/page.html')} {listed}: not a sitemap (root element <html>)",
        "/bad.xml.gz": f"{web.url('/bad.xml.gz')} {listed}: not valid gzip",
        "/cut.xml.gz": f"{web.url('/cut.xml.gz')} {listed}: gzip data cut short",
        "foreign": f"{foreign} {listed}: on another host than the site's (www.example.com); not read",
    }


def test_each_file_that_cannot_be_read_is_named_and_the_rest_adopted(web: Web, other_host: Web) -> None:
    expected = _failing_site(web, other_host)
    events, adoption = adopt(web.url("/sitemap.xml"))
    problems = "\n".join(adoption.problems)
    for text in expected.values():
        assert text in problems
    assert len(adoption.problems) == 8
    assert adoption.notes == [f"{web.url('/sitemap.xml')} (listed in {web.url('/sitemap.xml')}): already read; "
                              "not read again"]  # fmt: skip
    assert sorted(e["url"] for e in events) == [f"{BASE}/cut/kept", f"{BASE}/good/one", f"{BASE}/good/two"]
    assert other_host.requests == []  # neither the foreign child nor the redirect's target was asked for


def test_local_adopt_publishes_what_it_could_read_and_exits_1(
    web: Web, other_host: Web, tmp_path: Path, moto_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _failing_site(web, other_host)
    out = tmp_path / "out"
    assert local_adopt(web.url("/sitemap.xml"), out, moto_endpoint) == 1
    err = capsys.readouterr().err
    for text in expected.values():
        assert text in err
    published = b"".join(gzip.decompress(p.read_bytes()) for p in out.glob("sitemap-*.xml.gz"))
    assert published.count(b"<url>") == 3 and b"/cut/kept" in published


def test_an_index_that_lists_itself_and_a_redirect_on_the_host_lose_nothing(
    web: Web, tmp_path: Path, moto_endpoint: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index that lists itself, and a sitemap that moved on the same host
    web.replies["/sitemap.xml"] = Reply(index(web.url("/sitemap.xml"), web.url("/old.xml")))
    web.replies["/old.xml"] = Reply(b"", 301, {"Location": "/new.xml"})
    web.replies["/new.xml"] = Reply(urlset(*[url(f"/blog/p{i}") for i in range(1001)]))
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    # When it is adopted (on a terminal), every page is published, the cycle noted, and the exit status is 0
    assert local_adopt(web.url("/sitemap.xml"), tmp_path / "out", moto_endpoint) == 0
    assert f"note: {web.url('/sitemap.xml')} (listed in {web.url('/sitemap.xml')}): already read" in terminal.text
    published = b"".join(gzip.decompress(p.read_bytes()) for p in (tmp_path / "out").glob("sitemap-*.xml.gz"))
    assert published.count(b"<url>") == 1001
    assert web.requests.count("/sitemap.xml") == 1
    # And progress was shown as it read
    assert "\radopting: 1 files, 0 pages" in terminal.text and "\radopting: 2 files, 1,000 pages" in terminal.text
    assert "adopted " in capsys.readouterr().out


class _Terminal:
    """A stderr that says it is a terminal, keeping what was written."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("path", "status", "reason"),
    [("/nowhere.xml", 2, "HTTP 404 Not Found"), ("/home.html", 1, "not a sitemap (root element <html>)")],
)
def test_a_location_that_gives_no_page_imports_and_copies_nothing(
    web: Web,
    tmp_path: Path,
    moto_endpoint: str,
    capsys: pytest.CaptureFixture[str],
    path: str,
    status: int,
    reason: str,
) -> None:
    # Given a location that cannot be read (2), or is read but holds no sitemap (1)
    web.replies["/home.html"] = Reply(b"<!DOCTYPE html><html><body>Welcome</body></html>")
    report = tmp_path / "report.json"
    assert local_adopt(web.url(path), tmp_path / "out", moto_endpoint, "--report", str(report)) == status
    assert f"not adopted: {web.url(path)}: {reason}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    # And the report says why
    [first] = json.loads(report.read_text(encoding="utf-8"))
    assert first["import"]["adopted"]["problem_lines"] == [f"{web.url(path)}: {reason}"]
    assert "pages" not in first["import"]


def test_local_adopt_counts_pages_listed_twice_and_reports_without_a_wave(
    web: Web, tmp_path: Path, moto_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two sitemaps of nine pages in all, three of them in both
    web.replies["/sitemap.xml"] = Reply(index(web.url("/a.xml"), web.url("/b.xml")))
    web.replies["/a.xml"] = Reply(urlset(*[url(f"/blog/p{i}") for i in range(6)]))
    web.replies["/b.xml"] = Reply(urlset(*[url(f"/blog/p{i}") for i in range(3)]))
    report = tmp_path / "report.json"
    # When they are adopted with --report and no wave after
    assert local_adopt(web.url("/sitemap.xml"), tmp_path / "out", moto_endpoint, "--report", str(report)) == 0
    # Then the summary says where the three pages went
    printed = capsys.readouterr().out
    location = web.url("/sitemap.xml")
    assert f"adopted {location}: 9 pages from 3 files" in printed
    assert (f"import ({location}): 6 pages (3 of the 9 pages adopted listed a URL again, each kept once with its "
            "newest state), ") in printed  # fmt: skip
    # And the report is the adoption's and the import's, not an empty list
    [first] = json.loads(report.read_text(encoding="utf-8"))
    loaded = first["import"]
    assert loaded["source"] == location and loaded["pages"] == 6 and loaded["repeated"] == 3
    assert loaded["adopted"] | {"bytes": 0} == {
        "source": location, "files": 3, "pages": 9, "bytes": 0, "problems": 0, "problem_lines": [], "warnings": [],
        "notes": [],
    }  # fmt: skip
    assert loaded["rejections"] == [] and "sitemap.xml" in loaded["s3"]["put"]
    published = {p.name for p in (tmp_path / "out").iterdir()}
    assert set(loaded["s3"]["put"]) <= published


# --- caps ----------------------------------------------------------------------------------------------------
# The peak is read from /proc (VmHWM, this process image's own): ru_maxrss would start at the parent's size,
# inherited across exec, so under a large pytest process it would never grow.
_MEASURE = """
import json, re, sys
from pathlib import Path
from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt import Adoption
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
before = peak()
adoption = Adoption(Site.parse(sys.argv[2]))
pages = sum(1 for _ in adoption.events(sys.argv[1]))
print(json.dumps({"pages": pages, "problems": adoption.problems, "grew_kib": peak() - before}))
"""


def test_a_gzip_bomb_is_cut_at_the_protocols_limit_in_bounded_memory(web: Web, tmp_path: Path) -> None:
    # Given a 300 KB gzip file that unpacks to 315 MB: one page, then 300 comments of a MiB each
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [pack.compress(urlset(url("/first"))[: -len(b"</urlset>\n")])]
    parts += [pack.compress(b"<!--" + b" " * (1 << 20) + b"-->") for _ in range(300)]
    bomb = b"".join([*parts, pack.flush()])
    assert len(bomb) < 400_000
    web.replies["/sitemap.xml.gz"] = Reply(bomb)
    # When it is adopted, in a process of its own
    run = subprocess.run(
        [sys.executable, "-c", _MEASURE, web.url("/sitemap.xml.gz"), BASE], capture_output=True, text=True, check=True
    )
    found = json.loads(run.stdout)
    # Then reading stops at 52,428,800 bytes, the page before is kept, and memory grew by less than the cap
    assert found["problems"] == [
        f"{web.url('/sitemap.xml.gz')}: more than 52,428,800 bytes uncompressed, the limit per file; "
        "read stopped there; the 1 page(s) before that were adopted"
    ]
    assert found["pages"] == 1
    assert found["grew_kib"] * 1024 < MAX_FILE_BYTES // 2


def test_the_total_cap_stops_the_adoption_with_its_reason(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.xml").write_bytes(urlset(*[url(f"/{name}/p{i}") for i in range(100)]))
    (tmp_path / "sitemap.xml").write_bytes(index(*[f"{BASE}/{n}.xml" for n in "abc"]))
    size = sum(p.stat().st_size for p in tmp_path.glob("?.xml"))
    events, adoption = adopt(str(tmp_path / "sitemap.xml"), max_total_bytes=size - 1000)
    assert (f"adoption stopped: more than {size - 1000:,} bytes read in all, its limit (--max-total-bytes)"
            in adoption.problems)  # fmt: skip
    assert 200 <= len(events) < 300


def test_a_gzip_file_of_several_members_padded_with_zeros_reads_whole(tmp_path: Path) -> None:
    # Given one sitemap gzipped in three members (as concatenated gzip files are), cut anywhere, then padding
    document = urlset(*[url(f"/blog/p{i}") for i in range(3000)])
    cuts = [0, 70_001, 140_003, len(document)]
    packed = b"".join(gzip.compress(document[a:b]) for a, b in itertools.pairwise(cuts)) + bytes(1)
    (tmp_path / "sitemap.xml.gz").write_bytes(packed)
    # When it is adopted, every page is read and nothing is reported
    events, adoption = adopt(str(tmp_path / "sitemap.xml.gz"))
    assert len(events) == 3000 and adoption.problems == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (b" \n\t\n", "empty"),
        (b"h" * 1_000_000, "not a sitemap (a line of more than 65,536 characters)"),
        (b'<?xml version="1.0"?><rss version="2.0"><channel/></rss>', "not a sitemap (root element <rss>)"),
    ],
)
def test_a_file_that_is_no_sitemap_is_named_with_its_reason(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "sitemap.txt"
    path.write_bytes(content)
    events, adoption = adopt(str(path))
    assert events == [] and adoption.problems == [f"{path}: {reason}"]


def test_adopted_pages_take_the_importing_stacks_sections(web: Web) -> None:
    # Given a sitemap of pages in two directories, adopted by a site whose setting gives one a section
    web.replies["/sitemap.xml"] = Reply(urlset(url("/blog/a"), url("/people/alice/b")))
    adoption = Adoption(Site.parse(BASE, sections=frozenset({"blog"})))
    events = [json.loads(body) for body in adoption.events(web.url("/sitemap.xml"))]
    # Then the events name no section: the stack they are imported into decides by its own setting
    assert [e["url"] for e in events] == [f"{BASE}/blog/a", f"{BASE}/people/alice/b"]
    assert all("section" not in e for e in events)
