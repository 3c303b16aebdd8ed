"""`build --site A --site B`: one export, one tree per site (the first in --out, the others in
--out/sites/<host>/, the bucket's layout). The oracle is `build --site X` run alone on X's lines only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from tests.conftest import BASE

SAMPLE = Path(__file__).resolve().parents[2] / "events" / "pages.jsonl"
AS_OF = "2026-11-21T12:00:00Z"
DE, FR = "https://www.example.de", "https://www.example.fr"


def tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def export(tmp: Path) -> tuple[Path, dict[str, list[str]]]:
    """The sample export with its lines spread over three sites (one host written in capitals, one line in an
    EventBridge envelope), one line on a host of no site, one that is not JSON; and each site's lines alone."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    own: list[str] = []
    alone: dict[str, list[str]] = {BASE: own, DE: [], FR: []}
    written: list[str] = []
    for number, line in enumerate(lines):
        origin = (BASE, DE, FR)[number % 3]
        moved = line.replace(BASE, origin)
        alone[origin].append(moved)
        if number == 1:
            moved = moved.replace(DE, "https://WWW.Example.DE")
        if number == 4:
            moved = json.dumps({"detail-type": "page", "source": "cms", "detail": json.loads(moved)})
        written.append(moved)
    written[3:3] = [lines[0].replace(BASE, "https://www.example.org"), "not json"]
    path = tmp / "all.jsonl"
    path.write_text("\n".join(written) + "\n", encoding="utf-8")
    return path, alone


def build(events: Path, out: Path, *sites: str, share: str = "0.25") -> int:
    args = [arg for site in sites for arg in ("--site", site)]
    when = ["--as-of", AS_OF, "--max-rejected-share", share, "--quiet"]
    return main(["build", *args, "--events", str(events), "--out", str(out), *when])


def test_each_site_gets_the_tree_its_own_lines_alone_would_build_and_foreign_lines_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events, alone = export(tmp_path)
    # When one export is built for three sites
    assert build(events, tmp_path / "out", BASE, DE, FR) == 0
    captured = capsys.readouterr()
    # Then each site's tree has exactly the bytes of a build of its lines alone, in the bucket's layout
    expected: dict[str, bytes] = {}
    for origin, lines in alone.items():
        own = tmp_path / f"alone-{origin.rsplit('.', 1)[1]}.jsonl"
        own.write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert build(own, tmp_path / f"alone-{origin}".replace("://", "-"), origin) == 0
        prefix = "" if origin == BASE else f"sites/{origin.removeprefix('https://')}/"
        expected |= {prefix + k: v for k, v in tree(tmp_path / f"alone-{origin}".replace("://", "-")).items()}
    assert tree(tmp_path / "out") == expected
    assert {k.split("/")[1] for k in expected if k.startswith("sites/")} == {"www.example.de", "www.example.fr"}
    assert b"<loc>https://www.example.de/sitemap-" in expected["sites/www.example.de/sitemap.xml"]
    # And the lines of no site are rejected naming the host (or as today), by their line in the export
    assert "all.jsonl:4: rejected: url: host 'www.example.org' is not one of the sites given with --site" in (
        captured.err
    )
    assert "all.jsonl:5: rejected: (body): not valid JSON" in captured.err
    for origin in (BASE, DE, FR):
        assert f"Sitemap: {origin}/sitemap.xml" in captured.out


def test_a_site_with_no_lines_is_left_as_it_was_and_the_run_fails_after_building_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events, _ = export(tmp_path)
    out = tmp_path / "out"
    assert build(events, out, BASE, DE, "https://www.example.it", share="0.9") == 1
    assert "https://www.example.it: no events in" in capsys.readouterr().err
    assert (out / "sitemap.xml").exists() and (out / "sites/www.example.de/sitemap.xml").exists()
    assert not (out / "sites/www.example.it").exists()


def test_too_many_lines_of_no_site_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events, _ = export(tmp_path)
    assert build(events, tmp_path / "two", "https://www.example.org", DE) == 1
    assert "nothing written, " in capsys.readouterr().err
    assert not (tmp_path / "two").exists()


def test_a_host_given_twice_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events, _ = export(tmp_path)
    assert build(events, tmp_path / "out", DE, "https://WWW.example.de") == 2
    assert "--site names a host twice" in capsys.readouterr().err
