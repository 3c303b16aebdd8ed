"""Handlers with the sample SQS events, crash recovery of unqueued changes, and news aging out."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from sitemap_updater.handlers import ingest as ingest_handler
from sitemap_updater.handlers import upkeep
from sitemap_updater.local.runner import LocalContext, LocalRun
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.sweep import sweep
from sitemap_updater.wiring.pipeline import use_pipeline
from tests.conftest import BASE, SECTIONS, event
from tests.integration.conftest import FIXED_NOW, LocalRunFactory, bodies

EVENTS = Path(__file__).resolve().parents[2] / "events"


@pytest.mark.parametrize("sample", sorted(p.name for p in EVENTS.glob("sqs-*.json")))
def test_sample_sqs_events_are_handled_without_batch_failures(local_run: LocalRunFactory, sample: str) -> None:
    run = local_run()
    use_pipeline(run.pipeline)
    try:
        response = ingest_handler.handler(json.loads((EVENTS / sample).read_text()), LocalContext("ingest"))
    finally:
        use_pipeline(None)
    assert response == {"batchItemFailures": []}
    run.drain()
    published = run.published()
    if sample in ("sqs-bad.json", "sqs-unpublish.json"):  # rejected, or removing a page never published
        assert "sitemap.xml" not in published
    else:
        assert "sitemap.xml" in published


def test_a_change_whose_rebuild_was_never_queued_is_recovered(local_run: LocalRunFactory) -> None:
    # Given an ingest that dies after recording the change but before queueing the rebuild
    run = local_run()
    pipeline = run.pipeline
    send = pipeline.rebuild_queue.send_batch

    def crash(*_args: Any, **_kwargs: Any) -> None:
        raise ConnectionError("Lambda died here")

    object.__setattr__(pipeline.rebuild_queue, "send_batch", crash)
    with pytest.raises(ConnectionError):
        ingest(json.dumps(event(f"{BASE}/blog/recovered", version=1)), pipeline)
    object.__setattr__(pipeline.rebuild_queue, "send_batch", send)
    assert "sitemap.xml" not in run.published()
    # When the sweep runs (or SQS redelivers the event): at once it leaves the batch's outbox alone (the batch
    # might still be running); an hour later it queues the change and deletes the outbox
    assert sweep(pipeline).requeued == 0
    later = replace(pipeline, clock=lambda: pipeline.clock() + timedelta(hours=1))
    assert sweep(later).requeued == 1
    assert sweep(later).requeued == 0
    run.drain()
    # Then the page is published
    assert b"/blog/recovered" in gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"])


def test_news_older_than_two_days_leaves_the_file_after_upkeep(moto_endpoint: str) -> None:
    now = [FIXED_NOW]
    with LocalRun(
        BASE, None, moto_endpoint, clock=lambda: now[0], name="news-sweep", parameters={"Sections": SECTIONS}
    ) as run:
        news = {
            "publication_name": "Example Times",
            "publication_language": "en",
            "publication_date": (FIXED_NOW - timedelta(hours=1)).isoformat(),
            "title": "Tram line approved",
        }
        run.send_wave(bodies([event(f"{BASE}/news/tram", news=news)]))
        before = gzip.decompress(run.published()["sitemap-news-00000000.xml.gz"])
        assert b"<news:news>" in before
        now[0] = FIXED_NOW + timedelta(days=2)
        use_pipeline(run.pipeline)
        try:
            with run.iam.acting_as("UpkeepFunction"):  # its own hourly function, under its own policy
                assert upkeep.handler({}, cast(Any, LocalContext("upkeep"))) == {
                    "news_expired": 1,
                    "cleanups": 0,
                    "sites": 1,
                    "sites_left": 0,
                }
        finally:
            use_pipeline(None)
        run.drain()
        after = gzip.decompress(run.published()["sitemap-news-00000000.xml.gz"])
        assert b"<news:news>" not in after and b"/news/tram" in after


@pytest.mark.parametrize(
    ("robots", "warned"),
    [("User-agent: *\nSitemap: https://www.example.com/sitemap.xml\n", False), ("User-agent: *\nDisallow:\n", True)],
)
def test_the_sweep_warns_when_robots_txt_does_not_name_the_index(
    local_run: LocalRunFactory, httpserver: Any, robots: str, warned: bool
) -> None:
    from sitemap_updater.adapters.http import HttpClient
    from sitemap_updater.service.pipeline import Pipeline
    from sitemap_updater.service.sweep import robots_warning

    run = local_run()
    httpserver.expect_request("/robots.txt").respond_with_data(robots)
    site_url = httpserver.url_for("/").rstrip("/")
    settings = run.pipeline.settings.model_copy(update={"site_url": site_url, "robots_check": True})
    pipeline = Pipeline(
        settings, run.pipeline.store, run.pipeline.bucket, run.pipeline.rebuild_queue,
        run.pipeline.index_queue, run.pipeline.notify_queue, run.pipeline.dead_letters,
    )  # fmt: skip
    robots_text = robots.replace("https://www.example.com", site_url)
    httpserver.clear()
    httpserver.expect_request("/robots.txt").respond_with_data(robots_text)
    assert (robots_warning(pipeline, HttpClient()) is not None) is warned
    assert (sweep(pipeline, HttpClient()).robots_warning is not None) is warned


def test_a_rebuild_dying_before_it_queues_the_index_still_reaches_the_index(local_run: LocalRunFactory) -> None:
    # Given a page, and a shard rebuild that dies after recording its new file but before queueing the index
    run = local_run()
    run.send_wave(bodies([event(f"{BASE}/blog/a", version=1)]))
    pipeline = run.pipeline
    send = pipeline.index_queue.send
    failures = [1]

    def die_once(*args: Any, **kwargs: Any) -> None:
        if failures:
            failures.pop()
            raise ConnectionError("Lambda died here")
        send(*args, **kwargs)

    object.__setattr__(pipeline.index_queue, "send", die_once)
    # When a new page arrives and SQS redelivers the failed rebuild
    report = run.send_wave(bodies([event(f"{BASE}/docs/b", version=1)])).as_dict()
    object.__setattr__(pipeline.index_queue, "send", send)
    # Then the index names the new file
    index = run.published()["sitemap.xml"].decode()
    assert "sitemap-docs-00000000.xml.gz" in index
    assert "sitemap.xml" in report["s3"]["put"]
