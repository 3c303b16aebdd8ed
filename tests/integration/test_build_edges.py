"""`sitemap-updater build` at its edges: a line of megabytes, a folder holding files of others, inputs and outputs
that are not what the command expects, a whole export on the wrong host."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site
from sitemap_updater.service import build as build_module
from sitemap_updater.service.build import build
from tests.conftest import AS_OF_US, BASE, SECTIONS, event, reference_site

AS_OF = "2026-11-21T12:00:00Z"


def lines(bodies: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(body) + "\n" for body in bodies).encode()


def run_build(events: Path | str, out: Path, *extra: str, site: str = BASE) -> int:
    args = ["build", "--site", site, "--events", str(events), "--out", str(out), "--as-of", AS_OF]
    return main([*args, "--sections", SECTIONS, *extra])


def published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file() and not p.name.startswith(".")}


def test_a_line_of_megabytes_is_rejected_on_its_line_without_being_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export whose second line is 16 MiB (64 times the largest event), between valid lines, read in chunks
    # of 1 MiB (4 MiB in use: the line is still many chunks long)
    monkeypatch.setattr(build_module, "_CHUNK_BYTES", 1 << 20)
    pages = [event(f"{BASE}/blog/p{i}") for i in range(3)]
    huge = b'{"type": "upsert", "url": "' + BASE.encode() + b"/" + b"x" * (16 << 20) + b'"}\r\n'
    export = tmp_path / "export.jsonl"
    export.write_bytes(lines(pages[:1]) + huge + lines(pages[1:]))
    site = Site.parse(BASE, sections=None)
    build(export, tmp_path / "warm", site, Limits(), AS_OF_US, workers=1, max_rejected_share=1)  # imports, caches
    # When it is built
    tracemalloc.start()
    try:
        result = build(export, tmp_path / "out", site, Limits(), AS_OF_US, workers=1, max_rejected_share=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Then the line is rejected on its own line number, by its size, and the others are built
    assert [(r.line, r.reason) for r in result.rejections] == [
        (2, f"(body): {len(huge) - 2:,} bytes; an event may be at most 262,144 bytes")
    ]
    assert published(tmp_path / "out") == reference_site(pages).all_bytes()
    # And the build held a few MB at most (the line's 16 MiB three times over before)
    assert peak < 6 << 20, f"peak {peak:,} bytes"


def test_a_rebuild_removes_only_files_a_build_of_the_site_wrote(tmp_path: Path) -> None:
    # Given a folder holding files of others beside the sitemaps, some named as sitemaps are
    out = tmp_path / "out"
    out.mkdir()
    theirs = {"sitemap-notes.txt": b"notes", "sitemap-legacy-1.xml.gz": b"legacy", "robots.txt": b"User-agent: *"}
    for name, data in theirs.items():
        (out / name).write_bytes(data)
    # And a build of the site there, then one after its blog moved to posts, with text sitemaps
    old = [event(f"{BASE}/blog/p{i}") for i in range(3)]
    (tmp_path / "1.jsonl").write_bytes(lines(old))
    assert run_build(tmp_path / "1.jsonl", out, "--text-sitemaps") == 0
    new = [event(f"{BASE}/posts/p{i}") for i in range(3)]
    (tmp_path / "2.jsonl").write_bytes(lines(new))
    # When the site is built again
    assert run_build(tmp_path / "2.jsonl", out) == 0
    # Then the files of the blog (its text sitemap too) are gone, and every file of others is as it was
    files = published(out)
    assert {name: files[name] for name in theirs} == theirs
    assert set(files) - set(theirs) == set(reference_site(new).all_bytes())


def test_files_of_another_sites_build_are_left_where_they_are(tmp_path: Path) -> None:
    # Given a folder where builds of two sites wrote in turn (each writing a sitemap.xml)
    out = tmp_path / "out"
    (tmp_path / "a.jsonl").write_bytes(lines([event("https://a.example.org/only-a/x")]))
    (tmp_path / "b.jsonl").write_bytes(lines([event(f"{BASE}/blog/x")]))
    assert run_build(tmp_path / "a.jsonl", out, site="https://a.example.org") == 0
    assert run_build(tmp_path / "b.jsonl", out) == 0
    assert {"sitemap-only-a-00000000.xml.gz", "sitemap-blog-00000000.xml.gz"} <= set(published(out))
    # When the first site is built again, its page moved
    (tmp_path / "a.jsonl").write_bytes(lines([event("https://a.example.org/moved/x")]))
    assert run_build(tmp_path / "a.jsonl", out, site="https://a.example.org") == 0
    # Then the file it no longer has is removed, and the other site's file stays
    assert set(published(out)) == {"sitemap-moved-00000000.xml.gz", "sitemap-blog-00000000.xml.gz", "sitemap.xml"}


def test_a_record_naming_files_elsewhere_is_not_followed(tmp_path: Path) -> None:
    # Given a build's record in --out edited to name a file beside the folder and one in a folder inside it
    out = tmp_path / "out"
    (tmp_path / "e.jsonl").write_bytes(lines([event(f"{BASE}/blog/x")]))
    assert run_build(tmp_path / "e.jsonl", out) == 0
    (tmp_path / "outside.txt").write_text("mine")
    (out / "sub").mkdir()
    (out / "sub" / "x.xml.gz").write_text("mine")
    names = ["../outside.txt", "sub/x.xml.gz", "", ".", "..", "sitemap.xml"]
    (out / ".sitemap-updater-build.json").write_text(json.dumps({"sites": {BASE: names}}))
    # When the site is built again, then neither is removed
    assert run_build(tmp_path / "e.jsonl", out) == 0
    assert (tmp_path / "outside.txt").read_text() == (out / "sub" / "x.xml.gz").read_text() == "mine"
    # And a record that cannot be read removes nothing
    (out / ".sitemap-updater-build.json").write_text("{not json")
    (tmp_path / "e.jsonl").write_bytes(lines([event(f"{BASE}/docs/x")]))
    assert run_build(tmp_path / "e.jsonl", out) == 0
    assert set(published(out)) == {"sitemap-blog-00000000.xml.gz", "sitemap-docs-00000000.xml.gz", "sitemap.xml"}


def test_a_folder_given_as_the_export_is_named_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_build(tmp_path, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"cannot read {tmp_path}: it is a folder" in err and "no such file" not in err
    assert not (tmp_path / "out").exists()


def test_a_file_given_as_out_is_named_a_file_not_an_errno(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines([event()]))
    (tmp_path / "out").write_text("mine")
    assert run_build(export, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"--out {tmp_path / 'out'} is a file; it must name a folder" in err and "Errno" not in err
    assert (tmp_path / "out").read_text() == "mine"


def test_a_system_error_is_worded_without_its_errno(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an --out under a file (a folder cannot be made there)
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines([event()]))
    (tmp_path / "file").write_text("mine")
    assert run_build(export, tmp_path / "file" / "out") == 2
    assert capsys.readouterr().err == f"sitemap-updater: {tmp_path / 'file' / 'out'}: Not a directory\n"


def test_a_build_writing_nothing_leaves_no_folder_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given an export where every event is rejected, and an --out two folders deep that does not exist
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines([event(priority=7)]))
    # When it is built, the build is refused and no folder is made
    assert run_build(export, tmp_path / "new" / "out") == 1
    assert "nothing written" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.jsonl"]


def test_an_export_on_another_host_is_summed_up_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given 300 pages on www.example.com, 10 of them with a bad priority too, built with --site missing "www"
    pages = [event(f"{BASE}/blog/p{i}", **({"priority": 7} if i % 30 == 0 else {})) for i in range(300)]
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines(pages))
    # When it is built
    assert run_build(export, tmp_path / "out", site="https://example.com") == 1
    err = capsys.readouterr().err.splitlines()
    # Then the first 100 rejected lines are shown, then how many more, and how many of each kind there were
    assert [line for line in err if ": rejected: " in line] == [
        f"{export}:{n}: rejected: url: host 'www.example.com' is not the site's host 'example.com'"
        + ("; priority: Input should be less than or equal to 1" if n % 30 == 1 else "")
        for n in range(1, 101)
    ]
    start = err.index(f"{export}: 200 more rejected lines not shown (--show-rejected all shows each)")
    assert err[start + 1 : start + 4] == [
        f"{export}: rejected lines by reason:",
        "        290 like line 2: url: host 'www.example.com' is not the site's host 'example.com'",
        "         10 like line 1: url: host 'www.example.com' is not the site's host 'example.com'; "
        "priority: Input should be less than or equal to 1",
    ]
    # And a hint names the host the pages are on
    assert "hint: 300 of 300 events are on www.example.com: did you mean --site https://www.example.com?" in err


def test_warnings_are_capped_and_counted_like_rejections_and_blank_lines_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given 250 pages whose URLs carry a session ID (each accepted with a warning), and 3 blank lines
    pages = [event(f"{BASE}/blog/p{i}?sessionid=s{i}") for i in range(250)]
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines(pages) + b"\n\n  \n")
    # When it is built
    assert run_build(export, tmp_path / "out") == 0
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    # Then the first 100 warnings are printed, then how many more and of which kind, not 250 lines
    warned = [line for line in err if ": warning: " in line]
    assert len(warned) == 100
    assert warned[0] == f"{export}:1: warning: url: session ID parameter 'sessionid' removed from the query"
    start = err.index(f"{export}: 150 more warnings not shown (--show-rejected all shows each)")
    assert err[start + 1 : start + 3] == [
        f"{export}: warnings by reason:",
        "        250 like line 1: url: session ID parameter 'sessionid' removed from the query",
    ]
    # And the summary accounts for every line read
    assert "253 lines read: 250 events accepted, 0 rejected, 3 blank" in captured.out + captured.err


def test_show_rejected_all_prints_each_and_few_on_another_host_give_no_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an export where 150 of 300 pages (half: not most) are on another host
    pages = [event(f"{BASE}/blog/p{i}" if i % 2 else f"https://cdn.example.com/p{i}") for i in range(300)]
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines(pages))
    # When it is built with every rejected line asked for
    assert run_build(export, tmp_path / "out", "--show-rejected", "all") == 1
    err = capsys.readouterr().err
    # Then each is printed, with no count of the rest and no hint
    assert err.count(": rejected: url: host 'cdn.example.com'") == 150
    assert "not shown" not in err and "hint:" not in err


def test_a_named_pipe_is_read_as_standard_input_is(tmp_path: Path) -> None:
    # Given an export written into a named pipe (as `--events <(zcat pages.jsonl.gz)` gives one)
    pages = [event(f"{BASE}/blog/p{i}") for i in range(20)]
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)

    def write() -> None:
        with pipe.open("wb") as end:
            end.write(lines(pages))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    # When it is built, then it is read and built, as a file would be
    assert run_build(pipe, tmp_path / "out") == 0
    writer.join(5)
    assert published(tmp_path / "out") == reference_site(pages).all_bytes()


def test_a_rebuild_leaves_the_files_whose_bytes_did_not_change_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a site of two sections built into --out
    pages = [event(f"{BASE}/blog/p{i}") for i in range(50)] + [event(f"{BASE}/news/a{i}") for i in range(50)]
    export = tmp_path / "e.jsonl"
    export.write_bytes(lines(pages))
    out = tmp_path / "out"
    assert run_build(export, out) == 0
    before = {p.name: p.stat() for p in out.iterdir() if not p.name.startswith(".")}
    first = published(out)
    # When one blog page changes and the site is built again into the same folder
    pages[3] = event(f"{BASE}/blog/p3", lastmod="2026-11-21T00:00:00Z")
    export.write_bytes(lines(pages))
    capsys.readouterr()
    assert run_build(export, out) == 0
    after = {p.name: p.stat() for p in out.iterdir() if not p.name.startswith(".")}
    again = published(out)
    # Then only the files whose bytes changed were replaced (a new inode); the others are the same files as before
    changed = sorted(name for name in again if again[name] != first.get(name))
    replaced = sorted(name for name in after if (after[name].st_ino, after[name].st_mtime_ns)
                      != (before[name].st_ino, before[name].st_mtime_ns))  # fmt: skip
    assert changed == replaced == ["sitemap-blog-00000000.xml.gz", "sitemap.xml"]
    # And the summary says how many were left as they were
    assert f"{len(after) - 2} of these files already had these bytes in {out}: left as they were" in (
        capsys.readouterr().out
    )
