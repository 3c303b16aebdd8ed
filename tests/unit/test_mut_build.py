"""``build`` run in this process (one worker, no CLI) against the reference model: deletes and news through the
model path, news sections whose pages fall in several buckets, and rejection line numbers in an export of
several 4 MiB chunks (issue 13's survivors of service/build.py)."""

from __future__ import annotations

import concurrent.futures.process
import json
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.core.sharding import Limits, page_key
from sitemap_updater.core.urls import Site
from sitemap_updater.service import build as build_module
from sitemap_updater.service import build_pool
from sitemap_updater.service.build import build
from tests.conftest import AS_OF_US, BASE, event, reference_site

SITE = Site.parse(BASE, sections=None)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}  # not the record


def _news(i: int, fresh: bool) -> dict[str, Any]:
    when = "2026-11-21T08:00:00Z" if fresh else "2026-11-01T08:00:00Z"
    return {"publication_name": "Daily", "publication_language": "en", "title": f"N{i}", "publication_date": when}


def test_deletes_and_news_through_the_model_path_build_the_reference(tmp_path: Path) -> None:
    # Given pages of one section spread over the key space: news on a few (fresh or stale), plain pages around
    # them, and deletes the fast path declines (an alias to map, an unknown field)
    bodies: list[dict[str, Any]] = []
    for i in range(200):
        fields: dict[str, Any] = {"version": 1, "lastmod": "2026-11-02"}
        if i % 40 == 0:
            fields["news"] = _news(i, fresh=i % 80 == 0)
        bodies.append(event(f"{BASE}/news/p{i}", **fields))
    bodies += [event(f"{BASE}/news/p{i}", type="Unpublish", version=2) for i in range(1, 200, 17)]
    bodies += [event(f"{BASE}/news/p{i}", type="delete", version=2, extra="x") for i in range(3, 200, 19)]
    events = _write(tmp_path / "events.jsonl", [json.dumps(b) for b in bodies])
    # When it is built
    result = build(events, tmp_path / "out", SITE, Limits(max_urls=20), AS_OF_US, workers=1)
    # Then every file equals, byte for byte, what the reference model renders
    assert result.rejections == []
    assert _published(tmp_path / "out") == reference_site(bodies, Limits(max_urls=20)).all_bytes()


def test_stale_news_is_left_out_of_a_section_whose_news_is_in_its_last_bucket_only(tmp_path: Path) -> None:
    # Given a section whose only news page (two days old and more) sorts after all its plain pages
    bodies = [event(f"{BASE}/daily/p{i}", version=1, lastmod="2026-11-02") for i in range(60)]
    last = max(bodies, key=lambda b: page_key(b["url"]))
    last["news"] = _news(0, fresh=False)
    events = _write(tmp_path / "events.jsonl", [json.dumps(b) for b in bodies])
    build(events, tmp_path / "out", SITE, Limits(max_urls=1000), AS_OF_US, workers=1)
    # Then no news is shown, as the reference renders it
    out = _published(tmp_path / "out")
    assert out == reference_site(bodies, Limits(max_urls=1000)).all_bytes()


def test_rejected_lines_are_numbered_across_4_mib_chunks(tmp_path: Path) -> None:
    # Given an export of about 10 MiB (three chunks of 4 MiB) with a bad line in each chunk
    line = json.dumps(event(f"{BASE}/blog/" + "x" * 180, version=1))
    count = 10 * 2**20 // (len(line) + 1)
    lines = [line] * count
    bad = [5, count // 2, count - 3]  # 1-based numbers of the bad lines
    for number in bad:
        lines[number - 1] = '{"type": "upsert"}'
    events = _write(tmp_path / "events.jsonl", lines)
    result = build(events, tmp_path / "out", SITE, Limits(), AS_OF_US, workers=1)
    assert [r.line for r in result.rejections] == bad
    assert result.lines == count and result.accepted == count - 3


class _NoProcesses:
    """Stands in for the process pool: a build that should run in this process must never start one."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a process pool was started")


def test_a_small_export_or_one_worker_builds_without_starting_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(concurrent.futures.process, "ProcessPoolExecutor", _NoProcesses)
    small = _write(tmp_path / "small.jsonl", [json.dumps(event(f"{BASE}/blog/p{i}")) for i in range(50)])
    assert build(small, tmp_path / "a", SITE, Limits(), AS_OF_US, workers=4).urls == 50
    line = json.dumps(event(f"{BASE}/blog/" + "x" * 200))
    large = _write(tmp_path / "large.jsonl", [line] * (5 * 2**20 // len(line)))  # over one 4 MiB chunk
    assert build(large, tmp_path / "b", SITE, Limits(), AS_OF_US, workers=1).urls == 1


def test_progress_ends_at_the_exports_size(tmp_path: Path) -> None:
    events = _write(tmp_path / "events.jsonl", [json.dumps(event(f"{BASE}/blog/p{i}")) for i in range(50)])
    seen: list[tuple[int, int]] = []
    build(events, tmp_path / "out", SITE, Limits(), AS_OF_US, workers=1, progress=lambda *p: seen.append(p))
    size = events.stat().st_size
    assert seen == [(size, size)]


def test_worker_processes_that_keep_freed_memory_build_the_bytes_one_process_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export of several chunks, with images on some pages
    monkeypatch.setattr(build_module, "_CHUNK_BYTES", 4096)
    bodies = [event(f"{BASE}/s{i % 3}/p{i}") for i in range(300)]
    for body in bodies[::7]:
        body["images"] = [{"loc": f"https://cdn.example.com/{body['url'][-4:]}.jpg"}]
    events = _write(tmp_path / "events.jsonl", [json.dumps(body) for body in bodies])
    # When it is built by two worker processes (which keep the memory their tasks free) and in this process
    build(events, tmp_path / "two", SITE, Limits(max_urls=40), AS_OF_US, workers=2)
    build(events, tmp_path / "one", SITE, Limits(max_urls=40), AS_OF_US, workers=1)
    # Then both write the same files
    assert _published(tmp_path / "two") == _published(tmp_path / "one")


def test_without_glibcs_mallopt_a_worker_starts_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    def no_library(name: object) -> object:
        raise OSError("no such library")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    build_pool._mallopt.cache_clear()
    try:
        build_pool._keep_freed_memory()  # does not raise
        assert build_pool._mallopt() is None
    finally:
        build_pool._mallopt.cache_clear()
