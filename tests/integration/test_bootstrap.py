"""The bootstrap state machine of template.yaml, run by the local harness over the real handler on a local stack:
chunks of an export in, the same files as the reference build out, whatever the chunks' order and failures."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from sitemap_updater.core.sharding import Limits
from sitemap_updater.local.bootstrap import LocalStateMachine
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import LocalRunFactory, bodies
from tests.integration.test_dead_letters import _dead_letters

MAX_URLS = 10


def _pages(count: int, version: int = 1) -> list[dict[str, Any]]:
    return [
        event(f"{BASE}/{section}/p{i}", version=version, lastmod=f"2026-11-{10 + version:02d}")
        for section in ("blog", "docs", "news")
        for i in range(count)
    ]


def _chunks(pages: list[dict[str, Any]], parts: int) -> list[bytes]:
    lines = bodies(pages)
    return [("\n".join(lines[i::parts]) + "\n").encode() for i in range(parts)]


def test_a_bootstrap_publishes_what_a_build_of_the_export_does(local_run: LocalRunFactory) -> None:
    # Given an export of 600 pages in three sections, in four chunks (one gzip), where some pages appear twice
    # and the older line comes in a later chunk
    run = local_run(MAX_URLS)
    pages = _pages(200)
    older = [event(p["url"], version=0, lastmod="2026-11-01") for p in pages[::7]]
    machine = LocalStateMachine(run)
    machine.upload("first", [*_chunks(pages, 3), "\n".join(bodies(older)).encode()], gzipped=[1])
    # When the state machine runs
    execution = machine.execute("first")
    run.drain()  # the index function names the ranges' files
    # Then every chunk and range ran once, and the bucket holds what a build of the newest lines renders
    assert execution.maps["LoadChunks"].items == 4
    assert execution.maps["LoadChunks"].retried == []
    assert execution.maps["RenderRanges"].items == 12  # 200 URLs a section: 4 ranges of about 50 each
    assert run.published() == reference_site(pages, Limits(max_urls=MAX_URLS)).all_bytes()
    stale = sum(r["outcomes"].get("stale", 0) for r in execution.maps["LoadChunks"].results)
    assert stale == len(older)
    assert execution.output["release"]["replayed"] == 0


def test_a_failed_chunk_is_retried_alone(local_run: LocalRunFactory) -> None:
    # Given an export in three chunks, the second of which fails on its first two attempts
    run = local_run(MAX_URLS)
    pages = _pages(60)
    machine = LocalStateMachine(run)
    names = machine.upload("retry", _chunks(pages, 3))

    def inject(state: str, payload: dict[str, Any], attempt: int) -> None:
        if state == "LoadChunk" and payload["key"] == names[1] and attempt <= 2:
            raise RuntimeError("the worker died")

    # When the state machine runs
    execution = machine.execute("retry", inject=inject)
    run.drain()
    # Then only that chunk ran again, and the site is complete
    chunks = execution.maps["LoadChunks"]
    assert chunks.items == 3
    assert chunks.attempts == 5
    assert [json.loads(p)["key"] for p in chunks.retried] == [names[1]]
    assert run.published() == reference_site(pages, Limits(max_urls=MAX_URLS)).all_bytes()


def test_a_chunk_failing_on_every_attempt_fails_the_execution_before_anything_is_published(
    local_run: LocalRunFactory,
) -> None:
    run = local_run(MAX_URLS)
    machine = LocalStateMachine(run)
    names = machine.upload("broken", _chunks(_pages(20), 2))

    def inject(state: str, payload: dict[str, Any], attempt: int) -> None:
        if state == "LoadChunk" and payload["key"] == names[1]:
            raise RuntimeError("the object cannot be read")

    failed = machine.execute("broken", inject=inject)
    assert failed.status == "FAILED"
    assert failed.error is not None and failed.error["Error"] == "States.ExceedToleratedFailureThreshold"
    assert "the object cannot be read" in failed.error["Cause"]
    assert failed.states[-3:] == ["WaitAfterFailure", "ReleaseAfterFailure", "Failed"]
    # The failure ended the import: nothing stays parked, no rebuild is held back
    assert not run.pipeline.store.import_running()
    run.drain()
    assert run.published() == {}
    # Run again once the cause is fixed: it completes, recording nothing twice (the first chunk's 30 pages)
    execution = machine.execute("broken")
    run.drain()
    assert run.published() == reference_site(_pages(20), Limits(max_urls=MAX_URLS)).all_bytes()
    assert [r["outcomes"].get("noop", 0) for r in execution.maps["LoadChunks"].results] == [30, 0]


def test_changes_arriving_during_a_bootstrap_are_published_and_never_overwritten_by_the_export(
    local_run: LocalRunFactory,
) -> None:
    # Given an export, and live events sent while it loads: one newer than its line, one older
    run = local_run(MAX_URLS)
    pages = _pages(60, version=2)
    newer = event(pages[5]["url"], version=3, lastmod="2026-11-20")
    older = event(pages[6]["url"], version=1, lastmod="2026-11-02")
    fresh = event(f"{BASE}/blog/only-live", version=1)
    machine = LocalStateMachine(run)
    machine.upload("live", _chunks(pages, 2))
    sent: dict[str, Any] = {}

    def before(state: str) -> None:
        if state == "LoadChunks":  # before the export is recorded: the older event is recorded first
            sent["early"] = run.send_wave(bodies([older, newer]))
        if state == "RenderRanges":  # after: a page only the CMS knows, its rebuild request parked
            sent["late"] = run.send_wave(bodies([fresh]))

    # When the state machine runs, and then the queues drain
    execution = machine.execute("live", before=before)
    run.drain()
    # Then the site shows the newest state of every page, the live-only page included
    assert execution.output["release"]["replayed"] >= 1
    expected = [p for p in pages if p["url"] != newer["url"]] + [newer, fresh]
    assert run.published() == reference_site(expected, Limits(max_urls=MAX_URLS)).all_bytes()


def test_rejected_lines_go_to_the_dead_letter_queue_with_their_reason(local_run: LocalRunFactory) -> None:
    run = local_run(MAX_URLS)
    pages = _pages(5)
    machine = LocalStateMachine(run)
    bad = [json.dumps(event(f"{BASE}/blog/x", occurred_at="yesterday")), "{not json"]
    machine.upload("bad", ["\n".join([*bodies(pages), *bad]).encode()])
    execution = machine.execute("bad")
    run.drain()
    assert execution.maps["LoadChunks"].results[0]["rejected"] == 2
    reasons = [m["MessageAttributes"]["reason"]["StringValue"] for m in _dead_letters(run, "IngestDeadLetterQueue")]
    assert len(reasons) == 2
    assert any("occurred_at" in r for r in reasons)
    assert run.published() == reference_site(pages, Limits(max_urls=MAX_URLS)).all_bytes()


def test_an_object_that_is_not_an_export_of_page_events_fails_with_its_reason_and_floods_nothing(
    local_run: LocalRunFactory,
) -> None:
    run = local_run(MAX_URLS)
    machine = LocalStateMachine(run)
    machine.upload("wrong", [b"id,title\n1,Home\n2,About\n" + json.dumps(event(f"{BASE}/blog/a")).encode()])
    failed = machine.execute("wrong")
    assert failed.status == "FAILED" and failed.error is not None
    assert "3 of 4 events were rejected" in failed.error["Cause"] and "line 1: " in failed.error["Cause"]
    assert _dead_letters(run, "IngestDeadLetterQueue") == []
    assert not run.pipeline.store.import_running()


def test_a_run_that_failed_while_rendering_resumes_with_its_plan(local_run: LocalRunFactory) -> None:
    # Given a bootstrap whose second range fails on every attempt
    run = local_run(MAX_URLS)
    pages = _pages(100)
    machine = LocalStateMachine(run)
    machine.upload("resume", _chunks(pages, 2))
    calls: list[str] = []

    def inject(state: str, payload: dict[str, Any], attempt: int) -> None:
        if state == "RenderRange":
            calls.append(f"{payload['section']}:{payload['start']}")
            if calls[0] != calls[-1] and len(set(calls)) == 2:
                raise RuntimeError("the worker died")

    assert machine.execute("resume", inject=inject).status == "FAILED"
    run.drain()
    written = {name: data for name, data in run.published().items() if name != "sitemap.xml"}
    assert written  # the first range's files are out, and named by the index
    # When it runs again with the same name, it keeps its plan and writes only what is missing
    execution = machine.execute("resume")
    run.drain()
    assert run.published() == reference_site(pages, Limits(max_urls=MAX_URLS)).all_bytes()
    first = execution.maps["RenderRanges"].results[0]
    assert first["put"] == 0 and first["files"] > 0


def test_a_parked_batch_of_ten_large_rebuild_requests_fits_dynamodb_s_item_limit(local_run: LocalRunFactory) -> None:
    # Ten rebuild requests of 200 KB each (SQS takes 256 KB a message): 2 MB, five times one item's 400 KB
    run = local_run(MAX_URLS)
    store = run.pipeline.store
    store.set_import_running(True)
    messages = [("blog", json.dumps({"pad": "x" * 200_000, "n": i})) for i in range(10)]
    assert store.park("0000000000000001#m-1", messages)
    parked = store.parked()
    assert [m for _, batch in parked for m in batch] == messages
    for parked_id, _ in parked:
        store.unpark(parked_id)
    assert store.parked() == []


@pytest.mark.parametrize(("before", "after"), [(10, 4), (4, 10)])
def test_a_bootstrap_of_an_empty_export_moves_a_live_site_to_a_new_max_urls_per_file_at_once(
    local_run: LocalRunFactory, before: int, after: int
) -> None:
    # Given a live site of 200 pages published with files of `before` URLs
    run = local_run(before)
    pages = [event(f"{BASE}/{s}/p{i}", version=1, lastmod="2026-11-11") for s in ("blog", "docs") for i in range(100)]
    run.send_wave(bodies(pages))
    assert run.published() == reference_site(pages, Limits(max_urls=before)).all_bytes()
    # When the stack is updated to `after` URLs a file (every function's settings) and a bootstrap runs on an
    # empty export
    run.pipeline = replace(run.pipeline, settings=run.pipeline.settings.model_copy(update={"max_urls_per_file": after}))
    execution = LocalStateMachine(run).execute("relayout")
    run.drain()
    # Then every file is the one a build with the new limit makes, and no file of the old layout is left
    assert execution.status == "SUCCEEDED" and execution.maps["LoadChunks"].items == 0
    assert run.published() == reference_site(pages, Limits(max_urls=after)).all_bytes()
