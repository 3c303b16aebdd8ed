"""A reduce task renders the files of its own key range (folded sections), and what it renders is what the whole
plan renders: the same files, bytes and results as the unfolded build and the reference model, including when the
spilled states foretold a fold that the live entries then did not allow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.spill import BUCKETS
from sitemap_updater.core.urls import Site
from sitemap_updater.service import build as build_module
from sitemap_updater.service.build import BuildResult, build
from tests.conftest import AS_OF_US, BASE, event, reference_site

SITE = Site.parse(BASE, sections=None)


def _write(path: Path, bodies: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(body) + "\n" for body in bodies), encoding="utf-8")
    return path


def _published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}  # not the record


def _export() -> list[dict[str, Any]]:
    """Three sections of distinct pages (images on some, deletes of a few), one small, one with a news page."""
    bodies: list[dict[str, Any]] = []
    for i in range(600):
        section = ("big", "other", "tiny")[i % 3] if i < 590 else "tiny"
        body = event(f"{BASE}/{section}/p{i}", version=1, lastmod=f"2026-11-{1 + i % 19:02d}")
        if i % 7 == 0:
            body["images"] = [{"loc": f"https://cdn.example.com/{i}.jpg", "title": "A & B"}]
        bodies.append(body)
    bodies += [event(f"{BASE}/big/p{i}", type="delete", version=2) for i in range(0, 600, 31)]
    bodies.append(
        event(
            f"{BASE}/daily/n0",
            news={
                "publication_name": "Daily",
                "publication_language": "en",
                "title": "N",
                "publication_date": "2026-11-21T08:00:00Z",
            },
        )
    )
    bodies += [event(f"{BASE}/daily/p{i}", lastmod="2026-11-02") for i in range(40)]
    return bodies


def _build(events: Path, out: Path, limits: Limits, fold: bool, monkeypatch: pytest.MonkeyPatch) -> BuildResult:
    with monkeypatch.context() as patch:
        if not fold:
            patch.setattr(build_module, "_fold_sections", lambda *args: frozenset())
        return build(events, out, SITE, limits, AS_OF_US, workers=1)


@pytest.mark.parametrize("task_states", [10, 60, 1000, 150_000])
@pytest.mark.parametrize("max_urls", [7, 20, 50_000])
def test_folded_sections_build_what_the_unfolded_build_and_the_reference_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task_states: int, max_urls: int
) -> None:
    # Given an export, reduce tasks of a few states (so many tasks, each a narrow key range) or of all of them
    monkeypatch.setattr(build_module, "_TASK_STATES", task_states)
    bodies = _export()
    events = _write(tmp_path / "events.jsonl", bodies)
    limits = Limits(max_urls=max_urls)
    rendered: list[str] = []
    render_folded = build_module._render_folded

    def spy(section: str, *args: Any) -> Any:
        rendered.append(section)
        return render_folded(section, *args)

    monkeypatch.setattr(build_module, "_render_folded", spy)
    # When it is built with folding and without
    folded = _build(events, tmp_path / "folded", limits, True, monkeypatch)
    plain = _build(events, tmp_path / "plain", limits, False, monkeypatch)
    # Then both publish the reference's bytes, and report the same files in the same order
    assert (
        _published(tmp_path / "folded") == _published(tmp_path / "plain") == reference_site(bodies, limits).all_bytes()
    )
    assert (folded.files, folded.urls, folded.gzip_bytes, folded.xml_bytes) == (
        plain.files,
        plain.urls,
        plain.gzip_bytes,
        plain.xml_bytes,
    )
    # and a section with news is never folded, a section whose file would span tasks neither
    assert "daily" not in rendered
    if max_urls == 7 and task_states == 60:
        assert {"big", "other"} <= set(rendered)
    if max_urls == 50_000:
        # (every section fits one file: folded only where one task takes the whole key space)
        assert bool(rendered) is (build_module._buckets_per_task(folded.accepted, 1) == BUCKETS)


def test_a_fold_the_live_entries_do_not_allow_is_built_again_the_usual_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a section of 40 pages, each sent in 12 versions, and deletes of most: many states, few live pages
    monkeypatch.setattr(build_module, "_TASK_STATES", 10)
    bodies = [event(f"{BASE}/s/p{i}", version=v) for v in range(12) for i in range(40)]
    bodies += [event(f"{BASE}/s/p{i}", type="delete", version=20) for i in range(40) if i % 4]
    events = _write(tmp_path / "events.jsonl", bodies)
    limits = Limits(max_urls=5)
    reduced: list[set[str] | None] = []
    reduce_all = build_module._reduce_all

    def spy(*args: Any, **kwargs: Any) -> Any:
        reduced.append(kwargs.get("only"))
        return reduce_all(*args, **kwargs)

    monkeypatch.setattr(build_module, "_reduce_all", spy)
    # When it is built: the states foretell files within each task's range, but the 10 live pages fit a few files
    folded = _build(events, tmp_path / "folded", limits, True, monkeypatch)
    # Then the section is reduced again unfolded, and the output is the reference's, with no file left behind
    assert reduced == [None, {"s"}]
    assert _published(tmp_path / "folded") == reference_site(bodies, limits).all_bytes()
    assert folded.urls == 10 and 1 < len(folded.files) < 5


def _chunk(runs: dict[int, list[tuple[str, int]]], accepted: int) -> build_module._ChunkResult:
    bucket_runs: list[list[tuple[str, int, int, int]]] = [[] for _ in range(BUCKETS)]
    for bucket, pairs in runs.items():
        bucket_runs[bucket] = [(section, count, 0, 0) for section, count in pairs]
    return build_module._ChunkResult("spill", bucket_runs, accepted, accepted, [], [], set())


def test_a_small_export_of_several_sections_gives_each_worker_a_share_of_the_sections() -> None:
    # Given a small export of four sections of unequal sizes
    chunks = [_chunk({0: [("a", 50), ("b", 20)], 40: [("c", 30), ("d", 10)], 63: [("a", 40)]}, 150)]
    # When it is planned for two workers, then each task takes the whole key space of sections of about equal states
    tasks = build_module._tasks(chunks, 2)
    assert tasks == [(0, BUCKETS - 1, frozenset({"a"})), (0, BUCKETS - 1, frozenset({"b", "c", "d"}))]
    # and every section can be folded, having no range wider than its task's
    assert build_module._fold_sections(chunks, 2, Limits(max_urls=10)) == {"a", "b", "c", "d"}
    # but one worker, or fewer sections than workers, or more states than a task takes, keep runs of buckets
    assert all(taken is None for *_, taken in build_module._tasks(chunks, 1))
    assert all(taken is None for *_, taken in build_module._tasks(chunks[:1], 5))
    big = [_chunk({0: [("a", 100_000), ("b", 60_000)]}, 160_000)]
    assert all(taken is None for *_, taken in build_module._tasks(big, 2))


def test_two_workers_with_a_share_of_the_sections_each_build_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export of several chunks, so that two worker processes take it
    monkeypatch.setattr(build_module, "_CHUNK_BYTES", 8192)
    bodies = _export()
    events = _write(tmp_path / "events.jsonl", bodies)
    # When it is built by them, then the files are the reference's
    limits = Limits(max_urls=20)
    result = build(events, tmp_path / "two", SITE, limits, AS_OF_US, workers=2)
    assert _published(tmp_path / "two") == reference_site(bodies, limits).all_bytes()
    assert result.files == _build(events, tmp_path / "one", limits, True, monkeypatch).files


def test_a_task_reads_the_runs_of_its_sections_as_spans_of_adjacent_runs() -> None:
    # Given the runs a task takes from a chunk's file, in file order, some of them next to each other
    runs = [("a", 1, 0, 10), ("b", 2, 10, 5), ("a", 1, 40, 8), ("c", 3, 60, 4), ("a", 1, 64, 6)]
    # When they are grouped for reading, then each span is one read of adjacent runs, and no byte between is read
    assert list(build_module._spans(runs)) == [runs[:2], runs[2:3], runs[3:]]
    assert list(build_module._spans(runs[:1])) == [runs[:1]]
