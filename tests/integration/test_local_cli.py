"""`sitemap-updater local` as a user runs it: moto in the process, the files copied out, nothing else touched."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.copy_out import WRITTEN
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory


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
    from sitemap_updater.local.inputs import wave_bodies

    body = json.dumps(event(f"{BASE}/blog/a", images=[{"loc": "https://cdn.example.com/a.jpg", "title": "x\u2028y"}]),
                      ensure_ascii=False)  # fmt: skip
    path = tmp_path / "wave.jsonl"
    path.write_bytes(f"{body}\r\n\n{json.dumps(event(f'{BASE}/blog/b'))}\r".encode())
    with path.open("rb") as stream:
        assert wave_bodies(stream) == [body, json.dumps(event(f"{BASE}/blog/b"))]


def _padded(url: str, size: int) -> bytes:
    """A valid event of ``size`` bytes (JSON white space after the object)."""
    raw = json.dumps(event(url)).encode()
    return raw + b" " * (size - len(raw))


def test_lines_sqs_cannot_carry_are_rejected_alone_with_build_s_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sitemap_updater.core.sharding import Limits
    from sitemap_updater.core.urls import Site
    from sitemap_updater.service.build import build
    from tests.conftest import AS_OF_US

    # Given a wave of ten valid 120 KB events (1.2 MB: past one SendMessageBatch), a 4 MB line, a line that is not
    # UTF-8 and a valid event holding U+FFFF (which SQS does not carry as it is), and an export with such lines too
    big = [f"{BASE}/blog/big-{i}" for i in range(10)]
    odd = json.dumps(event(f"{BASE}/blog/odd", note="x\uffff"), ensure_ascii=False).encode()
    not_utf8 = json.dumps(event(f"{BASE}/blog/bad")).encode().replace(b"/bad", b"/b\xffd")
    wave_lines = [*(_padded(url, 120_000) for url in big), b"x" * 4_000_000, not_utf8, odd]
    wave = tmp_path / "wave.jsonl"
    wave.write_bytes(b"\n".join(wave_lines) + b"\n")
    export = tmp_path / "export.jsonl"
    export.write_bytes(b"\n".join([json.dumps(event(f"{BASE}/docs/a")).encode(), not_utf8, b" " * 2_000_000 + b"{}"]))
    out = tmp_path / "out"
    # When local imports the export and sends the wave
    argv = ["local", "--site", BASE, "--import", str(export), "--events", str(wave), "--out", str(out)]
    assert main([*argv, "--sections", "blog,docs"]) == 0
    captured = capsys.readouterr()
    # Then each bad line is rejected alone, with the reason build gives the same line, and nothing crashes
    built = build(wave, tmp_path / "built", Site.parse(BASE, sections=None), Limits(), AS_OF_US, workers=1)
    assert sorted(r.line for r in built.rejections) == [11, 12]
    wave_rejected = [line for line in captured.out.splitlines() if "rejected (not sent" in line]
    assert wave_rejected == [f"  rejected (not sent: SQS cannot carry it): {r.reason}" for r in built.rejections]
    assert "wave 1" in captured.out and "11 accepted, 2 rejected" in captured.out
    assert [line for line in captured.err.splitlines() if "rejected" in line] == [
        f"{export}:2: rejected: (body): not valid UTF-8",
        f"{export}:3: rejected: (body): 2,000,002 bytes; an event may be at most 262,144 bytes",
    ]
    assert "import (" in captured.out and "1 pages" in captured.out
    # And every accepted page is published
    blog = gzip.decompress((out / "sitemap-blog-00000000.xml.gz").read_bytes()).decode()
    assert all(f"<loc>{url}</loc>" in blog for url in [*big, f"{BASE}/blog/odd"])
    assert (out / "sitemap-docs-00000000.xml.gz").is_file()


def test_what_local_sends_is_within_sqs_s_limits(local_run: LocalRunFactory) -> None:
    # Given a run whose SendMessageBatch requests are recorded (moto checks the total size in characters, not
    # in bytes, and no character set: these are checked here as SQS documents them)
    run = local_run()
    sent: list[list[str]] = []
    send = run._sqs.send_message_batch

    def recording(**request: Any) -> Any:
        sent.append([entry["MessageBody"] for entry in request["Entries"]])
        return send(**request)

    run._sqs.send_message_batch = recording  # type: ignore[method-assign]
    # When a wave of 100 KB events of two-byte characters and an event with U+FFFE and U+FFFF is sent
    heavy = [json.dumps(event(f"{BASE}/blog/h{i}", note="\u00e9" * 60_000), ensure_ascii=False) for i in range(12)]
    odd = json.dumps(event(f"{BASE}/blog/odd", note="\ufffe\uffff"), ensure_ascii=False)
    report = run.send_wave([*heavy, odd]).as_dict()
    # Then every event is accepted, in requests of at most 10 messages and 1 MiB of UTF-8 bytes, every character
    # one SQS accepts
    assert report["events"]["accepted"] == 13
    assert all(len(batch) <= 10 and sum(len(b.encode()) for b in batch) <= 1_048_576 for batch in sent)
    assert sum(len(batch) for batch in sent) == 13
    assert not any(c in body for batch in sent for body in batch for c in "\ufffe\uffff")
