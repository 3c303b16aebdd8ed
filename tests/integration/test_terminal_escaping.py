"""What a server or an input file says reaches the terminal escaped: a `<loc>` holding a line break cannot forge a
line of the report, and an ESC sequence is shown, not run (verify, adoption's report, build's warnings)."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from sitemap_updater.cli_import import _adopt
from sitemap_updater.core.urls import Site
from tests.rawhttp import RawServer, answer

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML = {"Content-Type": "application/xml", "Cache-Control": "max-age=60"}
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]")  # a line break ends each line only


@pytest.fixture
def server() -> Iterator[RawServer]:
    web = RawServer()
    yield web
    web.close()


def hostile_site(server: RawServer) -> None:
    """robots.txt naming another host's sitemap with an ESC sequence, and the site's index; the index names a
    sitemap whose <loc> holds a line break and a C1 CSI, a text sitemap with an ESC sequence, and a file sent with
    an ESC sequence in its Content-Type."""
    base = server.url("")
    server.routes["/robots.txt"] = answer(
        f"Sitemap: https://cdn.example.net/\x1b[31mred.xml\nSitemap: {base}/sitemap.xml\n".encode()
    )
    locs = "".join(f"<sitemap><loc>{base}/{name}</loc></sitemap>" for name in ("s.xml", "t.txt", "h.xml"))
    server.routes["/sitemap.xml"] = answer(f'<sitemapindex xmlns="{NS}">{locs}</sitemapindex>'.encode(), headers=XML)
    server.routes["/s.xml"] = answer(
        f'<urlset xmlns="{NS}"><url><loc>{base}/a&#10;problem: forged&#x9b;2J</loc></url></urlset>'.encode(),
        headers=XML,
    )
    server.routes["/t.txt"] = answer(f"{base}/b\x1b[31mred\n".encode(), headers={"Content-Type": "text/plain"})
    server.routes["/h.xml"] = answer(
        f'<urlset xmlns="{NS}"><url><loc>{base}/c</loc></url></urlset>'.encode(),
        headers={"Content-Type": "text/html\x1b[2J"},
    )


def test_verify_shows_what_the_server_sent_escaped(server: RawServer, capsys: pytest.CaptureFixture[str]) -> None:
    hostile_site(server)
    assert main(["verify", server.url("/"), "--timeout", "1", "--total-timeout", "5"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert not [line for line in lines if RAW.search(line)]
    assert all(re.match(r"(verify |  \S|problem: |note: |\d+ files, )", line) for line in lines), lines
    assert not [line for line in lines if line.startswith("problem: forged")]
    base = server.url("")
    assert f"problem: {base}/s.xml: {base}/a\\nproblem: forged\\x9b2J: tab and line break characters" in out
    assert f"{base}/b\\x1b[31mred: control character U+001B" in out
    assert "Content-Type text/html\\x1b[2J: not a sitemap's" in out
    assert "names https://cdn.example.net/\\x1b[31mred.xml, on another host" in out


def test_verify_json_keeps_the_text_exact(server: RawServer, capsys: pytest.CaptureFixture[str]) -> None:
    hostile_site(server)
    assert main(["verify", server.url("/"), "--json", "--timeout", "1", "--total-timeout", "5"]) == 1
    out = capsys.readouterr().out
    assert not RAW.search(out)  # JSON escapes them itself
    assert any("/a\nproblem: forged\x9b2J: " in p for p in json.loads(out)["problems"])


def test_adoption_shows_each_skipped_page_on_one_line(server: RawServer, capsys: pytest.CaptureFixture[str]) -> None:
    hostile_site(server)
    limits = argparse.Namespace(max_total_bytes=10**7, max_seconds=30.0)
    bodies, _, _ = _adopt(server.url("/sitemap.xml"), Site.parse(server.url("")), limits)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert not [line for line in lines if RAW.search(line)]
    assert all(line.startswith(("not adopted: ", "note: ", "warning")) or "adopted" in line for line in lines), lines
    assert f"page {server.url('/a')}\\nproblem: forged\\x9b2J skipped" in err
    assert len(bodies) == 1  # /c


def test_a_build_warning_naming_an_input_field_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.jsonl"
    event = {"type": "upsert", "url": "https://www.example.com/a", "occurred_at": "2026-01-01T00:00:00Z"}
    events.write_text(json.dumps({**event, "x\n\x1b[31mforged: line": 1}) + "\n", encoding="utf-8")
    argv = ["build", "--site", "https://www.example.com", "--events", str(events), "--out", str(tmp_path / "out")]
    assert main([*argv, "--as-of", "2026-02-01T00:00:00Z", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert f"{events}:1: warning: ignored unknown fields: x\\n\\x1b[31mforged: line" in err.splitlines()


def test_every_corpus_rejection_is_printed_on_its_own_line_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given every one-line case of the bad-input corpus in an export whose file name holds a terminal's
    # set-the-window-title sequence
    from tests.unit.test_bad_events import CORPUS, EXPECTED

    cases = [(CORPUS / name).read_bytes().strip() for name in sorted(EXPECTED)]
    lines = [case for case in cases if case and b"\n" not in case and b"\r" not in case]
    events = tmp_path / "pages\x1b]0;owned\x07.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    # When it is built (and refused: every line is rejected)
    argv = ["build", "--site", "https://www.example.com", "--events", str(events), "--out", str(tmp_path / "out")]
    assert main([*argv, "--workers", "1", "--quiet", "--show-rejected", "all"]) != 0
    # Then each rejection is one line naming the file escaped, and nothing raw reaches the terminal
    printed = capsys.readouterr().err.splitlines()
    assert not [line for line in printed if RAW.search(line)]
    rejected = [line for line in printed if ": rejected: " in line]
    assert len(rejected) == len(lines) >= 150
    name = f"{tmp_path}/pages\\x1b]0;owned\\x07.jsonl"
    numbers = sorted(int(line.removeprefix(f"{name}:").partition(":")[0]) for line in rejected)
    assert numbers == list(range(1, len(lines) + 1))
