"""`verify` against hostile and broken servers on 127.0.0.1: whatever a server sends is a finding with its file,
never a traceback; slow servers are cut off by the deadlines the test sets (a fraction of a second, not the
defaults); and the exit status tells problems found (1) from a check that could not be completed (3)."""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sitemap_updater.cli import main
from tests.rawhttp import RawServer, after, answer, drip, then

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML = {"Content-Type": "application/xml", "Cache-Control": "max-age=60"}
FAST = ["--timeout", "0.5", "--total-timeout", "5"]


@pytest.fixture
def server() -> Iterator[RawServer]:
    web = RawServer()
    yield web
    web.close()


def urlset(*locs: str) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">{entries}</urlset>\n'.encode()


def index(*locs: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">{entries}</sitemapindex>\n'.encode()


def verify(capsys: pytest.CaptureFixture[str], url: str, *options: str) -> tuple[int, dict[str, Any], float]:
    """The exit status, the JSON report and the seconds the command took."""
    started = time.monotonic()
    status = main(["verify", url, "--json", *options])
    took = time.monotonic() - started
    return status, json.loads(capsys.readouterr().out), took


BROKEN = {
    "a status line that is not HTTP": (b"HTTP/1.1 2OO OK\r\n\r\n", "not an HTTP status line"),
    "101 headers": (
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: a\r\n" % n for n in range(101)) + b"\r\n",
        "more than 100 headers",
    ),
    "a 100 KB header": (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n", "a line too long"),
    "a chunk size that is not hex": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n<urlset/>\r\n0\r\n\r\n",
        "its chunks are malformed",
    ),
    "a body shorter than its Content-Length": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n<urlset",
        "the answer ended after 7 of the 5,000 bytes",
    ),
    "no answer at all": (b"", "closed the connection without an answer"),
    "a redirect to itself": (
        b"HTTP/1.1 301 Moved Permanently\r\nLocation: /broken.xml\r\nContent-Length: 0\r\n\r\n",
        "more than 5 redirects on the site's host",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_answer_is_a_problem_of_its_file_not_a_crash(
    server: RawServer, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    # Given an index whose one sitemap is answered with bytes a client cannot read as HTTP
    raw, expected = BROKEN[case]
    server.routes["/sitemap.xml"] = answer(index(server.url("/broken.xml")), headers=XML)
    server.routes["/broken.xml"] = raw
    # When the index is verified
    status, report, took = verify(capsys, server.url("/sitemap.xml"), *FAST)
    # Then the broken file is one problem naming what was wrong, and the status says problems were found
    assert status == 1
    assert [p for p in report["problems"] if "broken.xml" in p] == [
        p for p in report["problems"] if p.startswith(server.url("/broken.xml") + ": cannot be read: ")
    ]
    assert any(expected in p for p in report["problems"]), report["problems"]
    assert report["unfinished"] == ""
    assert took < 3


def test_a_server_sending_a_byte_at_a_time_is_cut_off_at_the_file_deadline(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a sitemap whose headers come quickly and whose body then comes a byte every 50 ms (about 10 s in all),
    # and one whose headers themselves come a byte every 50 ms
    body = urlset(*(server.url(f"/p{n}") for n in range(4)))
    head = answer(body, headers=XML)[: -len(body)]
    server.routes["/sitemap.xml"] = answer(index(server.url("/body.xml"), server.url("/head.xml")), headers=XML)
    server.routes["/body.xml"] = then(head, drip(body, 0.05))
    server.routes["/head.xml"] = drip(answer(body, headers=XML), 0.05)
    # When it is verified with 0.3 s for each file
    status, report, took = verify(capsys, server.url("/sitemap.xml"), "--timeout", "0.3", "--total-timeout", "5")
    # Then each slow file is a problem after 0.3 s, not after the ten the server would take
    assert status == 1
    slow = "no whole answer within 0.3 s: a crawler gives up on a server this slow"
    assert {f"{server.url(name)}: {slow}" for name in ("/body.xml", "/head.xml")} <= set(report["problems"])
    assert 0.6 <= took < 2


def test_the_whole_check_stops_at_its_own_deadline_with_exit_status_3(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an index of 20 sitemaps, each answered after 0.1 s (within the time one file may take)
    names = [f"/s{n}.xml" for n in range(20)]
    server.routes["/sitemap.xml"] = answer(index(*map(server.url, names)), headers=XML)
    for name in names:
        server.routes[name] = after(0.1, answer(urlset(server.url(f"/{name[1:-4]}")), headers=XML))
    # When the whole check may take 0.6 s
    status, report, took = verify(capsys, server.url("/sitemap.xml"), "--timeout", "0.5", "--total-timeout", "0.6")
    # Then it stops there: the files not read are counted, and the status says the check was not completed
    assert status == 3
    assert report["unfinished"].startswith("the time limit of 0.6 s for the whole check ran out: ")
    read = [f for f in report["files"] if f["status"] == 200]
    assert 2 <= len(read) <= 7  # the index, and sitemaps at 0.1 s each
    assert report["unfinished"].endswith(f"{21 - len(report['files']):,} more files named were not read")
    assert took < 1.2


def test_a_slow_file_is_cut_off_at_the_whole_checks_deadline_when_that_comes_first(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.routes["/sitemap.xml"] = drip(answer(urlset(server.url("/a")), headers=XML), 0.05)
    status, report, took = verify(capsys, server.url("/sitemap.xml"), "--timeout", "30", "--total-timeout", "0.3")
    assert status == 3
    assert report["unfinished"] == "the time limit of 0.3 s for the whole check ran out"
    assert report["notes"] == [
        f"{server.url('/sitemap.xml')}: not read to its end: the time limit for the whole check ran out"
    ]
    assert took < 1


def test_a_site_nothing_answers_on_could_not_be_checked(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a port nothing listens on
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    # When its root is verified, then robots.txt and the index are each "no connection", and the status is 3
    status, report, _ = verify(capsys, f"http://127.0.0.1:{port}/", *FAST)
    assert status == 3
    assert report["unfinished"] == f"no connection could be made to http://127.0.0.1:{port}"
    assert all(": cannot be read: no connection: " in p for p in report["problems"])
    assert len(report["problems"]) == 2


ENCODINGS = {
    # case: path, headers, times the body is gzipped -> the problem (None: none)
    "Content-Encoding gzip on a body that is not gzip": (
        "/s.xml",
        {"Content-Encoding": "gzip"},
        0,
        "Content-Encoding gzip, but the body is not gzip",
    ),
    "gzip bytes sent as a .xml without Content-Encoding": (
        "/s.xml",
        {},
        1,
        "gzip bytes without Content-Encoding gzip, a .gz name or a gzip Content-Type",
    ),
    "a .gz file that is not gzip": ("/s.xml.gz", {"Content-Type": "application/gzip"}, 0, "but not gzip"),
    "an encoding that was not asked for": (
        "/s.xml",
        {"Content-Encoding": "br"},
        0,
        "Content-Encoding br: not asked for (Accept-Encoding: gzip)",
    ),
    "a .xml sent with Content-Encoding gzip": ("/s.xml", {"Content-Encoding": "gzip"}, 1, None),
    "a .xml sent gzip twice": ("/s.xml", {"Content-Encoding": "gzip"}, 2, "gzip inside Content-Encoding gzip"),
    "a .gz file sent with Content-Encoding identity, not gzip": (
        "/s.xml.gz",
        {"Content-Encoding": "identity", "Content-Type": "application/gzip"},
        0,
        "named .gz or sent as gzip, but not gzip",
    ),
    "a .xml sent plain": ("/s.xml", {}, 0, None),
    "a .gz file sent as it is": ("/s.xml.gz", {"Content-Type": "application/gzip"}, 1, None),
}


@pytest.mark.parametrize("case", sorted(ENCODINGS))
def test_content_encoding_must_match_the_bytes(
    server: RawServer, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path, headers, gzipped, problem = ENCODINGS[case]
    body = urlset(server.url("/a"))
    for _ in range(gzipped):
        body = gzip.compress(body)
    server.routes[path] = answer(body, headers={**XML, **headers})
    status, report, _ = verify(capsys, server.url(path), *FAST)
    if problem is None:
        assert (status, report["problems"], report["pages"]) == (0, [], 1)
    else:
        assert status == 1
        assert [p for p in report["problems"] if problem in p and p.startswith(f"{server.url(path)}: ")], report


def test_an_index_naming_itself_or_naming_an_index_back_is_a_loop(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given robots.txt naming two indexes: one names itself and a sitemap, the other names the first's partner
    # back and forth (a names b, b names a), and an index naming an index that names a sitemap
    server.routes["/robots.txt"] = answer(
        f"Sitemap: {server.url('/self.xml')}\nSitemap: {server.url('/a.xml')}\n".encode()
    )
    server.routes["/self.xml"] = answer(index(server.url("/self.xml"), server.url("/s.xml")), headers=XML)
    server.routes["/a.xml"] = answer(index(server.url("/b.xml"), server.url("/s.xml")), headers=XML)
    server.routes["/b.xml"] = answer(index(server.url("/a.xml"), server.url("/nested.xml")), headers=XML)
    server.routes["/nested.xml"] = answer(urlset(server.url("/n")), headers=XML)
    server.routes["/s.xml"] = answer(urlset(server.url("/p")), headers=XML)
    status, report, took = verify(capsys, server.url("/"), *FAST)
    assert status == 1
    problems = report["problems"]
    assert f"{server.url('/self.xml')}: names itself: an index loop" in problems
    assert f"{server.url('/a.xml')}: names {server.url('/b.xml')}, an index that names it back: an index loop" in (
        problems
    )
    # b was reached from a only: crawlers (and verify) read no index named by an index, so nested.xml is not read
    assert "/nested.xml" not in server.requests
    assert server.requests.count("/self.xml") == 1 and server.requests.count("/a.xml") == 1
    assert took < 2


def test_an_index_named_by_robots_txt_and_by_another_index_is_named_back_and_forth(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.routes["/robots.txt"] = answer(
        f"Sitemap: {server.url('/a.xml')}\nSitemap: {server.url('/b.xml')}\n".encode()
    )
    server.routes["/a.xml"] = answer(index(server.url("/b.xml")), headers=XML)
    server.routes["/b.xml"] = answer(index(server.url("/a.xml")), headers=XML)
    status, report, _ = verify(capsys, server.url("/"), *FAST)
    assert status == 1
    assert sorted(p for p in report["problems"] if "loop" in p) == [
        f"{server.url('/a.xml')}: names {server.url('/b.xml')}, an index that names it back: an index loop",
        f"{server.url('/b.xml')}: names {server.url('/a.xml')}, an index that names it back: an index loop",
    ]


def test_a_url_twice_in_one_file_and_a_sitemap_twice_in_one_index_are_problems(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    page = server.url("/page")
    server.routes["/sitemap.xml"] = answer(index(server.url("/s.xml"), server.url("/s.xml")), headers=XML)
    server.routes["/s.xml"] = answer(urlset(page, server.url("/other"), page), headers=XML)
    status, report, _ = verify(capsys, server.url("/sitemap.xml"), *FAST)
    assert status == 1
    assert report["problems"] == [
        f"{server.url('/sitemap.xml')}: {server.url('/s.xml')}: named twice",
        f"{server.url('/s.xml')}: {page}: listed twice in this file",
    ]


def test_robots_txt_naming_sitemaps_on_other_hosts_only_is_a_problem_and_the_sites_index_is_read(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.routes["/robots.txt"] = answer(b"User-agent: *\nSitemap: https://cdn.example.net/sitemap.xml\n")
    server.routes["/sitemap.xml"] = answer(urlset(server.url("/a")), headers=XML)
    status, report, _ = verify(capsys, server.url("/"), *FAST)
    assert status == 1
    robots = server.url("/robots.txt")
    assert report["problems"] == [
        f"{robots}: names no sitemap on the site's host, so none could be checked: add 'Sitemap: "
        f"{server.url('/sitemap.xml')}' (read instead)"
    ]
    assert report["pages"] == 1


def test_a_loc_no_client_can_request_is_a_problem_and_its_canonical_form_is_read(
    server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an index naming a sitemap with a space in its path, one with an IPv6 literal left open, and a sitemap
    # listing such a page
    open_v6 = "http://[::1/x.xml"
    server.routes["/sitemap.xml"] = answer(index(server.url("/a b.xml"), open_v6), headers=XML)
    server.routes["/a%20b.xml"] = answer(urlset(server.url("/p"), "http://[::1/page"), headers=XML)
    status, report, _ = verify(capsys, server.url("/sitemap.xml"), *FAST)
    assert status == 1
    assert report["problems"] == [
        f"{server.url('/sitemap.xml')}: {server.url('/a b.xml')}: not in its canonical form "
        f"{server.url('/a%20b.xml')} (read there)",
        f"{server.url('/sitemap.xml')}: names {open_v6}, not on the site ({server.url('')})",
        f"{server.url('/a%20b.xml')}: http://[::1/page: Invalid IPv6 URL",
    ]
    assert report["pages"] == 2


def test_a_url_without_a_scheme_is_read_over_https(server: RawServer, capsys: pytest.CaptureFixture[str]) -> None:
    # The plain-HTTP server cannot answer TLS (it waits for a request line until the client gives up): what
    # matters is which URL was asked for, and that a server which connects but never finishes TLS is a finding
    status, report, _ = verify(capsys, f"127.0.0.1:{server.port}/sitemap.xml", *FAST)
    assert status == 1
    assert report["location"] == f"https://127.0.0.1:{server.port}/sitemap.xml"
    assert report["problems"] == [
        f"https://127.0.0.1:{server.port}/sitemap.xml: no whole answer within 0.5 s: a crawler gives up on a server "
        "this slow"
    ]
