"""Adoption's bounds against hostile servers and inputs (service/adopt.py, adopt_stream.py, adopt_findings.py):
depth, files, one file's time and the whole adoption's, and memory independent of how many sitemaps an index
lists or how many problems a file has; then the bad-sitemap corpus (tests/data/bad_sitemaps): what adoption
says of files it reads oddly or refuses (UTF-16 and UTF-32, DTDs and entities, old news, pages without a loc).

Servers run on 127.0.0.1 (tests/hostile.py); every time limit is a fraction of a second, set by the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest

from sitemap_updater.core.urls import Site
from sitemap_updater.service import adopt as adopt_module
from sitemap_updater.service.adopt import Adoption
from sitemap_updater.service.adopt_findings import Findings
from sitemap_updater.service.adopt_limits import MAX_DEPTH, MAX_FILES, MAX_SITEMAPS_PER_INDEX
from tests.conftest import BASE
from tests.hostile import BROKEN, Behaviour, Conversation, Hostile, elapsed, hang, reply, slow, trickle

SITE = Site.parse(BASE, sections=None)
SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_sitemaps"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
SLACK = 4.0  # how late a loaded machine may be; a server holding adoption held it for minutes


def urlset(*paths: str) -> bytes:
    pages = "".join(f"<url><loc>{BASE}{p}</loc></url>\n" for p in paths)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SM}">\n{pages}</urlset>\n'.encode()


def index(*locs: str) -> bytes:
    items = "".join(f"<sitemap><loc>{escape(loc)}</loc></sitemap>\n" for loc in locs)
    return f'<?xml version="1.0"?>\n<sitemapindex xmlns="{SM}">\n{items}</sitemapindex>\n'.encode()


def adopt(location: str, **limits: Any) -> tuple[list[str], Adoption]:
    adoption = Adoption(SITE, **limits)
    return [json.loads(body)["url"] for body in adoption.events(location)], adoption


@pytest.fixture
def site() -> Iterator[Hostile]:
    server = Hostile()
    yield server
    server.close()


# --- time ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "behaviour",
    [
        hang(),
        trickle(b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"v" * 10_000 + b"\r\n\r\n"),
        slow(urlset(*[f"/slow/{i}" for i in range(100)]), 0.01),  # a page every ~0.4 s: a few pages arrive
    ],
    ids=["silent", "slow headers", "slow body"],
)
def test_a_slow_server_is_cut_off_at_the_files_time_and_the_next_file_is_read(
    site: Hostile, behaviour: Behaviour
) -> None:
    # Given an index naming a file served a byte at a time (each well within the socket's timeout), then a good one
    site.routes["/sitemap.xml"] = reply(200, index(site.url("/slow.xml"), site.url("/good.xml")))
    site.routes["/slow.xml"] = behaviour
    site.routes["/good.xml"] = reply(200, urlset("/blog/good"))
    # When it is adopted with half a second a file
    (urls, adoption), took = elapsed(lambda: adopt(site.url("/sitemap.xml"), file_seconds=0.5))
    # Then the slow file is given up at its limit, named with it, and the next file is adopted
    [problem] = adoption.problems
    assert problem.startswith(
        f"{site.url('/slow.xml')} (listed in {site.url('/sitemap.xml')}): not read within 0.5 s, the most one file "
        "may take (the server sends too slowly); the rest not read"
    )
    assert urls[-1] == f"{BASE}/blog/good" and all(u.startswith(f"{BASE}/slow/") for u in urls[:-1])
    assert 0.5 <= took < 0.5 + SLACK


def test_the_whole_adoption_stops_at_its_time(site: Hostile) -> None:
    # Given an index of six files, each taking about 0.3 s (within the 1 s a file may take)
    children = [site.url(f"/s{i}.xml") for i in range(6)]
    site.routes["/sitemap.xml"] = reply(200, index(*children))
    for i in range(6):
        body = urlset(f"/s{i}")
        site.routes[f"/s{i}.xml"] = slow(body, 0.3 / len(body))
    # When the adoption may take 1 s in all
    (urls, adoption), took = elapsed(lambda: adopt(site.url("/sitemap.xml"), file_seconds=1, max_seconds=1))
    # Then it stops there, saying so, with the pages read before
    assert adoption.problems[-1] == "adoption stopped: it took 1 s, the most an adoption takes (--max-seconds)"
    assert len(urls) <= 4 and 1 <= took < 1 + SLACK


# --- depth, files, sitemaps per index ------------------------------------------------------------------------
def chain(last: int) -> Behaviour:
    """/chain.xml?n=N: an index naming /chain.xml?n=N+1 (the same file under a new query string), up to
    ``last``, which is a sitemap of one page."""

    def answer(talk: Conversation) -> None:
        n = int(talk.path.partition("n=")[2] or 0)
        base = f"http://127.0.0.1:{talk.server.port}"
        body = urlset(f"/page-{n}") if n == last else index(f"{base}/chain.xml?n={n + 1}")
        reply(200, body)(talk)

    return answer


def test_an_endless_index_chain_stops_at_the_depth_limit(site: Hostile) -> None:
    # Given an index naming itself under a new query string, again and again (50 deep here, endless in the wild)
    site.routes["/chain.xml"] = chain(50)
    urls, adoption = adopt(site.url("/chain.xml"))
    # Then the indexes are followed three deep, and the fourth's sitemaps are named as not read
    assert MAX_DEPTH == 3
    assert site.asked == ["/chain.xml", "/chain.xml?n=1", "/chain.xml?n=2", "/chain.xml?n=3"]
    assert adoption.problems == [
        f"{site.url('/chain.xml?n=3')} (listed in {site.url('/chain.xml?n=2')}): an index below 3 other indexes: "
        "the 1 sitemap(s) it lists not read (adoption follows indexes 3 deep at most; the protocol has no index of "
        "indexes)"
    ]
    assert urls == []


def test_indexes_three_deep_are_read_whole(site: Hostile) -> None:
    site.routes["/chain.xml"] = chain(3)  # three indexes, then the sitemap they lead to
    urls, adoption = adopt(site.url("/chain.xml"))
    assert urls == [f"{BASE}/page-3"] and adoption.problems == [] and adoption.files == 4


def test_the_same_file_under_another_spelling_is_read_once(site: Hostile) -> None:
    # Given an index naming one file seven ways (session IDs, dot segments, a fragment, an empty query) and
    # another with its parameters in either order
    a, b = site.url("/a.xml"), site.url("/b.xml")
    spellings = [
        a,
        f"{a}?sid=123",
        f"{a}?PHPSESSID=x",
        site.url("/x/../a.xml"),
        f"{a}#top",
        f"{a}?",
        site.url("/./a.xml"),
    ]
    site.routes["/sitemap.xml"] = reply(200, index(*spellings, f"{b}?p=1&q=2", f"{b}?q=2&p=1", f"{b}?p=2&q=2"))
    site.routes["/a.xml"] = reply(200, urlset("/blog/a"))
    site.routes["/b.xml"] = reply(200, urlset("/blog/b"))
    urls, adoption = adopt(site.url("/sitemap.xml"))
    # Then each is read once; the other spellings are notes, not new files
    assert site.asked == ["/sitemap.xml", "/a.xml", "/b.xml?p=1&q=2", "/b.xml?p=2&q=2"]
    assert adoption.files == 4 and urls == [f"{BASE}/blog/a", f"{BASE}/blog/b", f"{BASE}/blog/b"]
    assert adoption.notes[0] == f"{a}?sid=123 (listed in {site.url('/sitemap.xml')}): already read; not read again"
    assert adoption.notes[-1] == "... and 4 more like the line above"


@pytest.mark.parametrize(("limit", "read"), [(6, 6), (5, 5)])
def test_the_files_limit_stops_the_adoption_naming_it(tmp_path: Path, limit: int, read: int) -> None:
    # Given an index of five sitemaps on disk: six files in all
    for i in range(5):
        (tmp_path / f"s{i}.xml").write_bytes(urlset(f"/s{i}"))
    (tmp_path / "sitemap.xml").write_bytes(index(*[f"{BASE}/s{i}.xml" for i in range(5)]))
    urls, adoption = adopt(str(tmp_path / "sitemap.xml"), max_files=limit)
    assert adoption.files == read and len(urls) == read - 1
    stop = [p for p in adoption.problems if p.startswith("adoption stopped")]
    if read == 6:
        assert stop == []
    else:
        assert stop == [
            f"adoption stopped: 5 files read, the most an adoption reads; {BASE}/s4.xml (listed in "
            f"{tmp_path / 'sitemap.xml'}) and the sitemaps after it not read"
        ]
    assert MAX_FILES == 100_000


@pytest.mark.parametrize("count", [3, 4])
def test_an_index_lists_at_most_the_protocols_count_of_sitemaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    # The protocol's 50,000, as 3 here: a fourth is counted, not kept, and named
    assert MAX_SITEMAPS_PER_INDEX == 50_000
    monkeypatch.setattr(adopt_module, "MAX_SITEMAPS_PER_INDEX", 3)
    for i in range(count):
        (tmp_path / f"s{i}.xml").write_bytes(urlset(f"/s{i}"))
    (tmp_path / "sitemap.xml").write_bytes(index(*[f"{BASE}/s{i}.xml" for i in range(count)]))
    urls, adoption = adopt(str(tmp_path / "sitemap.xml"))
    assert urls == [f"{BASE}/s{i}" for i in range(3)]
    expected = (
        [f"{tmp_path / 'sitemap.xml'}: lists 4 sitemaps, more than the protocol's 3 an index may list: the 1 after "
         "the first 3 not read"] if count == 4 else []
    )  # fmt: skip
    assert adoption.problems == expected


# --- memory and problems -------------------------------------------------------------------------------------
def test_repeated_problems_are_counted_with_the_first_few_shown(tmp_path: Path) -> None:
    # Given 2,000 empty <url/> and 2,000 pages on another host
    path = tmp_path / "sitemap.xml"
    other = "".join(f"<url><loc>https://evil.example.net/{i}</loc></url>" for i in range(2_000))
    path.write_text(f'<urlset xmlns="{SM}">' + "<url/>" * 2_000 + other + "</urlset>", encoding="utf-8")
    urls, adoption = adopt(str(path))
    # Then 4,000 problems are counted, three of each kind shown, and a count of the rest
    assert urls == [] and adoption.problem_count == 4_000
    lines = adoption.problems
    assert len(lines) == 8
    assert lines[:4] == [f"{path}: page without a <loc> skipped"] * 3 + ["... and 1,997 more like the line above"]
    assert lines[4] == (
        f"{path}: page https://evil.example.net/0 skipped: url: host 'evil.example.net' is not the site's host "
        "'www.example.com'"
    )
    assert lines[7] == "... and 1,997 more like the line above"


def test_kinds_of_problem_past_the_limit_are_counted_together() -> None:
    findings = Findings(examples=2, max_kinds=2)
    for text in ["a1", "a2", "a3", "b1", "c1", "d1", "d2"]:
        findings.add(text[0], text)
    assert findings.count == 7
    assert findings.lines == ["a1", "a2", "... and 1 more like the line above", "b1", "c1", "d1",
                              "... and 1 more, of 2+ other kinds"]  # fmt: skip


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
found = []
for path in sys.argv[2:]:
    adoption = Adoption(Site.parse(sys.argv[1]))
    found.append([sum(1 for _ in adoption.events(path)), adoption.problem_count, len(adoption.problems)])
print(json.dumps({"found": found, "grew_kib": peak() - before}))
"""


def test_memory_does_not_grow_with_the_sitemaps_an_index_lists_or_the_problems(tmp_path: Path) -> None:
    # Given an index of 60,000 sitemaps on another host, and a sitemap of 100,000 empty <url/>
    items = "".join(f"<sitemap><loc>https://evil.example.net/s{i:06}.xml</loc></sitemap>" for i in range(60_000))
    (tmp_path / "index.xml").write_text(f'<sitemapindex xmlns="{SM}">{items}</sitemapindex>', encoding="utf-8")
    (tmp_path / "empty.xml").write_text(f'<urlset xmlns="{SM}">' + "<url/>" * 100_000 + "</urlset>", encoding="utf-8")
    # When both are adopted in a process of their own
    paths = [str(tmp_path / "index.xml"), str(tmp_path / "empty.xml")]
    run = subprocess.run([sys.executable, "-c", _MEASURE, BASE, *paths], capture_output=True, text=True, check=True)
    found = json.loads(run.stdout)
    # Then the first 50,000 sitemaps are kept (and named as on another host), the 100,000 pages without a loc
    # counted, a few lines of each kept, and memory grew by a few MB (about 19 MB and 20 MB before they were
    # bounded)
    assert found["found"] == [[0, 50_001, 5], [0, 100_000, 4]]
    assert found["grew_kib"] < 12 * 1024


# --- broken servers and the bad-sitemap corpus ---------------------------------------------------------------
def test_each_broken_server_is_a_problem_and_the_rest_is_adopted(site: Hostile) -> None:
    names = sorted(BROKEN)
    for i, name in enumerate(names):
        site.routes[f"/broken{i}.xml"] = BROKEN[name]
    site.routes["/good.xml"] = reply(200, urlset("/blog/good"))
    children = [site.url(f"/broken{i}.xml") for i in range(len(names))] + [site.url("/good.xml")]
    site.routes["/sitemap.xml"] = reply(200, index(*children))
    urls, adoption = adopt(site.url("/sitemap.xml"), file_seconds=2)
    assert urls == [f"{BASE}/blog/good"]
    for i, name in enumerate(names):  # each named as unreadable ("a body cut short" is also read as text)
        named = f"{site.url(f'/broken{i}.xml')} (listed in {site.url('/sitemap.xml')}): "
        said = [p.removeprefix(named) for p in adoption.problems if p.startswith(named)]
        assert said[-1].startswith(("cannot be read (", "download cut short: ")), (name, said)
        assert all(line.isprintable() for line in said), said  # "HTTP/1.1 OK\r\n" shown escaped


def test_text_from_the_network_is_escaped_in_every_line(site: Hostile) -> None:
    # A line break would forge a line of the report; ESC and CSI (U+009B, allowed in XML) start terminal commands
    forged = site.url("/a\nnot adopted: nothing, all is well\u009b2J")
    site.routes["/sitemap.xml"] = reply(200, index(forged, site.url("/t.txt"), site.url("/moved")))
    site.routes["/t.txt"] = reply(200, f"{BASE}/x\x1b[2J\n".encode())
    site.routes["/moved"] = reply(302, b"", {"Location": "http://evil.example.net/\x1b]0;owned\x07"})
    _, adoption = adopt(site.url("/sitemap.xml"))
    lines = adoption.problems
    assert len(lines) == 3 and all(line.isprintable() for line in lines), lines
    assert lines[0].startswith(f"{site.url('/a')}\\nnot adopted: nothing, all is well\\x9b2J (listed in ")
    assert f"page {BASE}/x\\x1b[2J skipped: " in lines[1]
    assert "redirects to http://evil.example.net/\\x1b]0;owned\\x07, off the site's host" in lines[2]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_bad_sitemap_corpus_is_read_or_refused_with_its_reason(name: str) -> None:
    path = CORPUS / name
    expected = EXPECTED[name]
    urls, adoption = adopt(str(path))
    assert len(urls) == expected["pages"]
    assert BASE not in urls and f"{BASE}/" not in urls  # an entity's text never leaves the site root behind
    for what in ("problems", "notes", "warnings"):
        lines = adoption.warning_lines if what == "warnings" else getattr(adoption, what)
        assert lines == [line.replace("{path}", str(path)) for line in expected.get(what, [])], what


def test_the_corpus_has_a_case_for_each_file() -> None:
    assert {p.name for p in CORPUS.iterdir() if p.name != "expected.json"} == set(EXPECTED)


def test_max_seconds_on_the_command_line_bounds_the_adoption(site: Hostile, capsys: pytest.CaptureFixture[str]) -> None:
    from sitemap_updater.cli_import import _adopt
    from sitemap_updater.cli_parser import command_parser

    # Given sitemaps that arrive a byte at a time, adopted with --max-seconds 0.5
    site.routes["/sitemap.xml"] = reply(200, index(*[site.url(f"/s{i}.xml") for i in range(3)]))
    for i in range(3):
        site.routes[f"/s{i}.xml"] = slow(urlset(f"/s{i}"), 0.05)
    args = command_parser().parse_args(["local", "--site", BASE, "--adopt", site.url("/sitemap.xml"), "--out", "out",
                                 "--max-seconds", "0.5"])  # fmt: skip
    (bodies, status, report), took = elapsed(lambda: _adopt(args.adopt, args.site, args))
    # Then it ends at 0.5 s, saying which limit stopped it, with exit status 1 (nothing adopted)
    assert "not adopted: adoption stopped: it took 0.5 s, the most an adoption takes (--max-seconds)" in (
        capsys.readouterr().err
    )
    assert bodies == [] and status == 1 and report["problems"] == 1 and took < 0.5 + SLACK
    # And the option refuses what is no time
    for wrong in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit):
            command_parser().parse_args(["local", "--site", BASE, "--adopt", "x", "--out", "o", "--max-seconds", wrong])
