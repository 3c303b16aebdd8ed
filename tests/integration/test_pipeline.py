"""The pipeline on a local AWS endpoint: only affected files change, duplicates change nothing,
bad input goes to the dead-letter queue, and the published files match the reference model."""

from __future__ import annotations

import gzip
import json
import threading
from typing import Any

from lxml import etree

from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.sharding import Limits, page_key
from sitemap_updater.service.bulk_import import import_events
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import LocalRunFactory, bodies

NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
SECTIONS = ("blog", "products", "docs", "help")


def site_events(count: int) -> list[dict[str, Any]]:
    return [
        event(f"{BASE}/{SECTIONS[i % 4]}/page-{i}", version=1, lastmod=f"2026-11-{1 + i % 20:02d}")
        for i in range(count)
    ]


def index_names(published: dict[str, bytes]) -> list[str]:
    root = etree.fromstring(published["sitemap.xml"])
    return [(loc.text or "").removeprefix(f"{BASE}/") for loc in root.iterfind("s:sitemap/s:loc", NS)]


def assert_index_names_only_existing_files(published: dict[str, bytes]) -> None:
    missing = [name for name in index_names(published) if name not in published]
    assert not missing, f"the index names files that do not exist: {missing}"


def test_one_update_on_10000_pages_rewrites_one_file_plus_the_index(local_run: LocalRunFactory) -> None:
    # Given 10,000 pages over 4 sections, imported and published (at most 500 URLs per file)
    run = local_run(max_urls_per_file=500)
    pages = site_events(10_000)
    imported = import_events(bodies(pages), run.pipeline)
    assert imported.pages == 10_000
    run.drain()
    before = run.published()
    assert len(before) > 20
    # When one page is updated
    changed = dict(pages[1234], version=2, lastmod="2026-11-21T08:00:00Z", changefreq="daily")
    report = run.send_wave(bodies([changed])).as_dict()
    # Then exactly one sitemap file and the index are rewritten (and nothing is invalidated: the CDN's cache
    # lifetime is short, and the report has no invalidations to show)
    after = run.published()
    rewritten = sorted(name for name in after if after[name] != before.get(name))
    assert len(rewritten) == 2 and "sitemap.xml" in rewritten
    assert sorted(report["s3"]["put"]) == rewritten
    assert "invalidations" not in report
    assert report["changed_urls"] == [changed["url"]]
    # And everything published equals what a full build renders
    assert after == reference_site([*pages, changed], Limits(max_urls=500)).all_bytes()


def test_resending_a_wave_writes_nothing(local_run: LocalRunFactory) -> None:
    run = local_run(max_urls_per_file=10)
    wave = bodies(site_events(60))
    first = run.send_wave(wave).as_dict()
    assert first["events"]["accepted"] == 60
    published = run.published()
    again = run.send_wave(wave).as_dict()
    assert again["events"] == {"accepted": 0, "rejected": 0, "stale": 0, "noop": 60}
    assert again["s3"] == {"put": [], "deleted": []}
    assert again["changed_urls"] == []
    assert run.published() == published


def test_a_wave_in_reverse_order_yields_the_same_bytes(local_run: LocalRunFactory) -> None:
    # Given a wave with updates, deletes and stale events, sent forwards to one stack and backwards to another
    events = site_events(60)
    events += [dict(e, version=2, lastmod="2026-11-20") for e in events[::5]]
    events += [event(e["url"], type="delete", version=3, occurred_at="2026-11-21T00:00:00Z") for e in events[::7]]
    forward, backward = local_run(max_urls_per_file=8), local_run(max_urls_per_file=8)
    forward.send_wave(bodies(events))
    backward.send_wave(bodies(events[::-1]))
    # Then both publish the same bytes, which are what a full build renders
    assert forward.published() == backward.published()
    assert forward.published() == reference_site(events, Limits(max_urls=8)).all_bytes()


def test_malformed_messages_go_to_the_dlq_and_the_rest_is_published(local_run: LocalRunFactory) -> None:
    run = local_run()
    good = [event(f"{BASE}/blog/good-{i}") for i in range(4)]
    bad = [
        "this is not JSON",
        json.dumps(event(f"{BASE}/blog/x", priority="high")),
        json.dumps(event("https://evil.example.net/blog/x")),
        json.dumps(event(f"{BASE}/blog/x", section="a\u0001b")),
    ]
    wave = [json.dumps(good[0]), bad[0], json.dumps(good[1]), bad[1], bad[2], json.dumps(good[2]), bad[3]]
    report = run.send_wave([*wave, json.dumps(good[3])]).as_dict()
    assert report["events"]["accepted"] == 4 and report["events"]["rejected"] == 4
    assert report["dlq"] == 4
    reasons = sorted(r["reason"].split(":", 1)[0] for r in report["rejections"])
    assert reasons == ["(body)", "priority", "section", "url"]
    assert all(any(r["reason"] in line for line in run.logs) for r in report["rejections"])
    blog = gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"])
    assert all(g["url"].encode() in blog for g in good)


def test_stale_and_equal_events_are_ignored_and_tombstones_hold(local_run: LocalRunFactory) -> None:
    run = local_run()
    url = f"{BASE}/blog/a"
    run.send_wave(bodies([event(url, version=5, lastmod="2026-11-10")]))
    report = run.send_wave(bodies([event(url, version=4, lastmod="2026-11-11")])).as_dict()
    assert report["events"]["stale"] == 1 and report["s3"]["put"] == []
    run.send_wave(bodies([event(url, type="delete", version=6, occurred_at="2026-11-12T00:00:00Z")]))
    late = run.send_wave(bodies([event(url, version=5, lastmod="2026-11-13")])).as_dict()
    assert late["events"]["stale"] == 1
    assert "sitemap-blog-00000000.xml.gz" not in run.published()


def test_republishing_unchanged_content_keeps_lastmod_and_writes_nothing(local_run: LocalRunFactory) -> None:
    run = local_run()
    url = f"{BASE}/blog/a"
    run.send_wave(bodies([event(url, version=1, occurred_at="2026-11-10T00:00:00Z")]))
    again = event(url, version=2, occurred_at="2026-11-15T00:00:00Z", lastmod="2026-11-10T00:00:00Z")
    report = run.send_wave(bodies([again])).as_dict()
    assert report["events"]["noop"] == 1 and report["s3"]["put"] == []
    xml = gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"])
    assert b"<lastmod>2026-11-10T00:00:00+00:00</lastmod>" in xml


def test_a_republish_without_lastmod_shows_its_own_moment(local_run: LocalRunFactory) -> None:
    # the newest event alone decides (order-independence): without lastmod, its occurred_at is shown
    run = local_run()
    url = f"{BASE}/blog/a"
    run.send_wave(bodies([event(url, version=1, occurred_at="2026-11-10T00:00:00Z")]))
    report = run.send_wave(bodies([event(url, version=2, occurred_at="2026-11-15T00:00:00Z")])).as_dict()
    assert report["events"]["accepted"] == 1 and report["changed_urls"] == [url]
    xml = gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"])
    assert b"<lastmod>2026-11-15T00:00:00+00:00</lastmod>" in xml


def test_a_page_moving_section_leaves_the_old_file(local_run: LocalRunFactory) -> None:
    run = local_run()
    url = f"{BASE}/blog/moving"
    run.send_wave(bodies([event(url, version=1), event(f"{BASE}/blog/stays", version=1)]))
    report = run.send_wave(bodies([event(url, version=2, section="featured")])).as_dict()
    published = run.published()
    assert url.encode() not in gzip.decompress(published["sitemap-blog-00000000.xml.gz"])
    assert url.encode() in gzip.decompress(published["sitemap-featured-00000000.xml.gz"])
    assert report["changed_urls"] == [url]


def test_splits_and_merges_never_leave_the_index_naming_a_missing_file(local_run: LocalRunFactory) -> None:
    run = local_run(max_urls_per_file=10)
    pages = [event(f"{BASE}/blog/p{i}", version=1) for i in range(60)]
    for start in range(0, 60, 15):  # grow: files split
        run.send_wave(bodies(pages[start : start + 15]))
        assert_index_names_only_existing_files(run.published())
    grown = run.published()
    assert len(index_names(grown)) >= 6
    deletes = [event(p["url"], type="delete", version=2, occurred_at="2026-11-21T00:00:00Z") for p in pages[:55]]
    report = run.send_wave(bodies(deletes)).as_dict()  # shrink: files merge, the retired ones are deleted
    published = run.published()
    assert_index_names_only_existing_files(published)
    assert len(index_names(published)) == 1
    assert report["s3"]["deleted"]
    assert set(published) == {"sitemap.xml", *index_names(published)}
    assert published == reference_site([*pages, *deletes], Limits(max_urls=10)).all_bytes()


def test_a_forced_race_never_publishes_older_bytes_over_newer(local_run: LocalRunFactory) -> None:
    # Given a published page, and a rebuild that has rendered it but is held before it publishes
    run = local_run()
    url = f"{BASE}/blog/raced"
    run.send_wave(bodies([event(url, version=1, lastmod="2026-11-01")]))
    pipeline = run.pipeline
    ingest(json.dumps(event(url, version=2, lastmod="2026-11-02")), pipeline)  # state v2, not yet rebuilt
    held, release = threading.Event(), threading.Event()
    publish = pipeline.bucket.publish_over  # a rewrite: one put If-Match the ETag its record keeps

    def slow_publish(name: str, data: bytes, seq: int, etag: str) -> str | None:
        held.set()
        release.wait(10)
        return publish(name, data, seq, etag)

    object.__setattr__(pipeline.bucket, "publish_over", slow_publish)
    mark = DirtyMark("blog", url=url, key=page_key(url))
    old = threading.Thread(target=rebuild_section, args=(pipeline, "blog", [mark]))
    old.start()
    assert held.wait(10)
    object.__setattr__(pipeline.bucket, "publish_over", publish)
    # When a newer change is ingested and its rebuild publishes first
    ingest(json.dumps(event(url, version=3, lastmod="2026-11-03")), pipeline)
    run.drain()
    release.set()
    old.join(10)
    # Then the held, older rebuild does not overwrite the newer bytes
    xml = gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"])
    assert b"2026-11-03" in xml


def test_many_distinct_first_segments_share_a_few_files_by_default(local_run: LocalRunFactory) -> None:
    # Given a stack with the default Sections setting (every page in root) and files of at most 100 URLs
    run = local_run(max_urls_per_file=100, sections="")
    # When 400 profiles arrive, each under a first path segment of its own
    profiles = [event(f"{BASE}/user-{n}/profile", version=1) for n in range(400)]
    run.send_wave(bodies(profiles))
    published = run.published()
    # Then they share a handful of root files split by key range (not 400 files), each page listed once
    files = [name for name in published if name != "sitemap.xml"]
    assert 4 <= len(files) <= 8 and all(name.startswith("sitemap-root-") for name in files)
    assert sum(gzip.decompress(published[name]).count(b"<url>") for name in files) == 400
    assert_index_names_only_existing_files(published)
