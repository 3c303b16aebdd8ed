"""`sitemap-updater local` as a user runs it: moto in the process, the files copied out, nothing else touched."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.runner import WRITTEN
from tests.conftest import BASE, event


def _events(path: Path, count: int, section: str = "blog", version: int = 1, **fields: object) -> Path:
    lines = [json.dumps(event(f"{BASE}/{section}/p{i}", version=version, **fields)) for i in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_local_run_copies_what_a_crawler_can_read_and_replaces_only_its_own_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "robots.txt").write_text("User-agent: *\n", encoding="utf-8")  # the user's own file
    first = _events(tmp_path / "first.jsonl", 3)
    # When a wave runs and is copied out
    sections = ["--sections", "blog,docs"]
    assert main(["local", "--site", BASE, "--events", str(first), "--out", str(out), *sections]) == 0
    printed = capsys.readouterr().out
    # Then the resources created are named, and out/ holds the index, the file and the key file, no snapshot
    assert "ManifestTable: " in printed and "IngestQueue: https://" in printed
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        WRITTEN,
        "local-indexnow-key-0001.txt",
        "robots.txt",
        "sitemap-blog-00000000.xml.gz",
        "sitemap.xml",
    ]
    # When a later run publishes another section only, the earlier files it no longer has are removed
    second = _events(tmp_path / "second.jsonl", 2, section="docs")
    assert main(["local", "--site", BASE, "--events", str(second), "--out", str(out), *sections]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "sitemap-docs-00000000.xml.gz" in names and "sitemap-blog-00000000.xml.gz" not in names
    # And the user's own file is untouched
    assert (out / "robots.txt").read_text(encoding="utf-8") == "User-agent: *\n"


def test_a_file_a_local_run_did_not_write_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "public"
    out.mkdir()
    (out / "sitemap.xml").write_text("<mine/>", encoding="utf-8")
    events = _events(tmp_path / "events.jsonl", 2)
    assert main(["local", "--site", BASE, "--events", str(events), "--out", str(out)]) == 1
    assert "sitemap.xml" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["sitemap.xml"]
    assert (out / "sitemap.xml").read_text(encoding="utf-8") == "<mine/>"


def test_a_site_is_imported_and_updated_in_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = _events(tmp_path / "export.jsonl", 5)
    update = _events(tmp_path / "update.jsonl", 1, version=2, priority=0.3)
    out = tmp_path / "out"
    argv = ["local", "--site", BASE, "--import", str(export), "--events", str(update), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "import (" in printed and "5 pages" in printed
    assert "wave 1" in printed and "1 accepted" in printed  # the update, on the imported site


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8"))


def test_a_wave_can_be_read_from_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, _events(tmp_path / "wave.jsonl", 2, section="docs").read_text(encoding="utf-8"))
    after = _events(tmp_path / "after.jsonl", 1, section="news")
    out = tmp_path / "out"
    argv = ["local", "--site", BASE, "--events", "-", "--events", str(after), "--out", str(out)]
    assert main([*argv, "--sections", "docs,news"]) == 0
    printed = capsys.readouterr().out
    assert "wave 1 (<stdin>): 2 accepted" in printed and f"wave 2 ({after}): 1 accepted" in printed
    assert {"sitemap-docs-00000000.xml.gz", "sitemap-news-00000000.xml.gz"} <= {p.name for p in out.iterdir()}


@pytest.mark.parametrize("second", [["--events", "-"], ["--import", "-"]])
def test_standard_input_can_be_given_only_once(
    tmp_path: Path, second: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["local", "--site", BASE, "--events", "-", *second, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "standard input can be read only once: give - to one --events or --import" in captured.err
    assert captured.out == "" and not out.exists()  # refused before a stack was started


def test_an_import_from_standard_input_names_its_rejected_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = [json.dumps(event(f"{BASE}/blog/p{i}")) for i in range(3)]
    _stdin(monkeypatch, "\n".join(["", pages[0], "", pages[1], json.dumps(event(priority=3)), pages[2]]) + "\n")
    assert main(["local", "--site", BASE, "--import", "-", "--out", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert [line for line in captured.err.splitlines() if "rejected" in line] == [
        "<stdin>:5: rejected: priority: Input should be less than or equal to 1"
    ]
    assert "import (<stdin>): 3 pages" in captured.out


def test_an_events_file_is_split_into_lines_as_build_splits_it(tmp_path: Path) -> None:
    # a title holding U+2028 stays one event; \r\n and \r end lines; blank lines are skipped
    from sitemap_updater.local.runner import events_from_bytes

    body = json.dumps(event(f"{BASE}/blog/a", images=[{"loc": "https://cdn.example.com/a.jpg", "title": "x\u2028y"}]),
                      ensure_ascii=False)  # fmt: skip
    path = tmp_path / "wave.jsonl"
    path.write_bytes(f"{body}\r\n\n{json.dumps(event(f'{BASE}/blog/b'))}\r".encode())
    assert events_from_bytes(path.read_bytes()) == [body, json.dumps(event(f"{BASE}/blog/b"))]
