"""A `build` stopped part-way, as a user or a system stops it: Ctrl-C at the terminal, SIGTERM, SIGKILL, in its
parse step (worker processes running) and in its publish step (files moving into --out). What a reader of --out
finds, what is left running and what is left on disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from sitemap_updater.cli import main
from tests.conftest import BASE, SECTIONS, event

AS_OF = "2026-11-21T12:00:00Z"
NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}

# Runs `build` in a process of its own, stopped by `how` (INT: Ctrl-C as a terminal sends it, to the whole process
# group; TERM; KILL) at `where`: "parse" once every line is parsed (printing the worker processes' ids first), or
# "publish" at the `count`-th file moved into --out. Exports of a few KB are cut into 4 KB chunks for two workers.
DRIVER = """
import os, signal, sys
from pathlib import Path
import sitemap_updater.service.build as build_module
from sitemap_updater.cli import main

where, how, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
# As a terminal runs a command in the foreground: Ctrl-C interrupts it, even when the tests themselves were started
# in the background (whose commands inherit SIGINT ignored, and Python then installs no handler of its own).
signal.signal(signal.SIGINT, signal.default_int_handler)
build_module._CHUNK_BYTES = 4096


def stop():
    if how == "INT":
        os.killpg(os.getpgrp(), signal.SIGINT)
    else:
        os.kill(os.getpid(), getattr(signal, "SIG" + how))


if where == "parse":
    reduce_all = build_module._reduce_all

    def stopping(executor, *args, **kwargs):
        print(*executor._processes, flush=True)
        stop()
        return reduce_all(executor, *args, **kwargs)

    build_module._reduce_all = stopping
else:
    replace, moved = Path.replace, []

    def replace_stopping(self, target):
        into_out = not Path(target).parent.name.startswith(".sitemap-build-")
        if self.parent.name.startswith(".sitemap-build-") and into_out:
            moved.append(self.name)
            if len(moved) == count:
                stop()
        return replace(self, target)

    Path.replace = replace_stopping
sys.exit(main(sys.argv[4:]))
"""


def write_jsonl(path: Path, bodies: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(body) + "\n" for body in bodies), encoding="utf-8")
    return path


def build_args(events: Path, out: Path) -> list[str]:
    return ["build", "--site", BASE, "--events", str(events), "--out", str(out), "--as-of", AS_OF]


def everything(out: Path) -> dict[str, bytes]:
    """Every file in ``out``, the build's record of what it wrote included."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def stopped_build(
    tmp_path: Path, events: Path, out: Path, where: str, how: str, count: int = 0
) -> tuple[int, str, str]:
    """``build`` in its own process group (as a terminal runs a command), stopped as DRIVER says."""
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    args = [*build_args(events, out), "--sections", SECTIONS, "--workers", "2"]
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, where, how, str(count), *args],
        capture_output=True,
        env=env,
        start_new_session=True,
        timeout=60,
        check=False,
    )
    return run.returncode, run.stdout.decode(), run.stderr.decode()


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie, dead and waiting to be reaped, is not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def gone_within(pids: list[int], seconds: float) -> bool:
    """Whether every process of ``pids`` ends within ``seconds``; those that do not are killed (by this test)."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            for pid in filter(alive, pids):
                os.kill(pid, signal.SIGKILL)
            return False
        time.sleep(0.02)
    return True


def scratch(tmp_path: Path, out: Path) -> list[str]:
    """The build's scratch folders left: spill folders in TMPDIR, staging folders in --out."""
    spill = [p.name for p in (tmp_path / "tmp").iterdir()]
    return spill + ([p.name for p in out.iterdir() if p.is_dir()] if out.is_dir() else [])


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, bytes], Path]:
    """A published site (blog and docs) in out/, and an export of its next version: blog changed, news new, docs
    gone; each a few KB so that two workers parse it. Temporary folders, here and in the driven builds, in tmp/."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    out = tmp_path / "out"
    old = [event(f"{BASE}/{s}/page-{i}", lastmod="2026-11-01") for s in ("blog", "docs") for i in range(40)]
    assert main([*build_args(write_jsonl(tmp_path / "old.jsonl", old), out), "--sections", SECTIONS, "--quiet"]) == 0
    new = [event(f"{BASE}/{s}/page-{i}", lastmod="2026-11-02") for s in ("blog", "news") for i in range(40)]
    return out, tmp_path / "old.jsonl", everything(out), write_jsonl(tmp_path / "new.jsonl", new)


@pytest.mark.parametrize(("how", "status", "said"), [("INT", 130, "interrupted"), ("TERM", 143, "terminated")])
def test_ctrl_c_or_sigterm_while_workers_run_stops_at_once_in_one_line_and_leaves_nothing(
    tmp_path: Path, site: tuple[Path, Path, dict[str, bytes], Path], how: str, status: int, said: str
) -> None:
    out, _old, before, new = site
    # When the build is stopped while its two worker processes run
    code, stdout, stderr = stopped_build(tmp_path, new, out, "parse", how)
    workers = [int(pid) for pid in stdout.split()]
    # Then it says so in one line, no traceback (the workers' own output included), with the shell's status
    assert len(workers) == 2
    assert (code, stderr) == (status, f"sitemap-updater: {said}: nothing written, {out} left as it was\n")
    # And no worker is left running, no scratch folder is left, and --out is as it was
    assert gone_within(workers, 2)
    assert scratch(tmp_path, out) == []
    assert everything(out) == before


def test_sigkill_leaves_no_worker_running_and_the_next_build_sweeps_what_it_left(
    tmp_path: Path, site: tuple[Path, Path, dict[str, bytes], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _old, before, new = site
    # When the build is killed while its workers run
    code, stdout, _ = stopped_build(tmp_path, new, out, "parse", "KILL")
    workers = [int(pid) for pid in stdout.split()]
    # Then its workers end with it, and --out is as it was
    assert code == -signal.SIGKILL and len(workers) == 2
    assert gone_within(workers, 2)
    assert everything(out) == before
    assert len(scratch(tmp_path, out)) == 2  # its spill and staging folders, which nothing could remove
    # And the next build removes them, with nothing to put back (the killed build had not begun to publish)
    capsys.readouterr()
    assert main([*build_args(new, out), "--sections", SECTIONS, "--quiet"]) == 0
    assert scratch(tmp_path, out) == []
    assert "put back" not in capsys.readouterr().out


def named_by_index(out: Path) -> list[str]:
    index = etree.fromstring((out / "sitemap.xml").read_bytes())
    return [str(loc.text).rsplit("/", 1)[1] for loc in index.iterfind("s:sitemap/s:loc", NS)]


@pytest.mark.parametrize("count", [2, 3])  # stopped once the new file (news) moved in; once blog's was replaced too
def test_sigterm_during_the_publish_puts_every_file_back_as_it_was(
    tmp_path: Path, site: tuple[Path, Path, dict[str, bytes], Path], count: int
) -> None:
    out, _old, before, new = site
    # When the build is stopped by SIGTERM while it moves its files into --out
    code, _, stderr = stopped_build(tmp_path, new, out, "publish", "TERM", count)
    # Then every file is as it was, and nothing is left behind
    assert (code, stderr) == (143, f"sitemap-updater: terminated: nothing written, {out} left as it was\n")
    assert everything(out) == before
    assert scratch(tmp_path, out) == []


@pytest.mark.parametrize("count", [2, 3, 4])  # killed once news moved in; blog replaced; the index replaced
def test_sigkill_during_the_publish_never_shows_an_index_naming_a_missing_file_and_the_next_build_undoes_it(
    tmp_path: Path, site: tuple[Path, Path, dict[str, bytes], Path], count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    out, old, before, new = site
    # When the build is killed while it moves its files into --out, nothing being able to run after it
    code, _, _ = stopped_build(tmp_path, new, out, "publish", "KILL", count)
    assert code == -signal.SIGKILL
    # Then the index --out holds names only files that are there
    assert all((out / name).is_file() for name in named_by_index(out))
    # And the next build, even one that is refused (nothing in its export), first puts back the previous output
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert main(build_args(tmp_path / "empty.jsonl", out)) == 1
    assert "every file put back as it was before it" in capsys.readouterr().out
    assert everything(out) == before
    assert scratch(tmp_path, out) == []
    # And a build of the new export then publishes it whole: the docs file, no longer part of the site, removed
    assert main([*build_args(new, out), "--sections", SECTIONS, "--quiet"]) == 0
    assert named_by_index(out) == ["sitemap-blog-00000000.xml.gz", "sitemap-news-00000000.xml.gz"]
    assert sorted(everything(out)) == [".sitemap-updater-build.json", *named_by_index(out), "sitemap.xml"]
    assert old.is_file()
