"""Races: parallel shard and index rebuilds (threads against the moto server) while pages change."""

from __future__ import annotations

import json
import threading

from lxml import etree

from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.sharding import Limits, page_key
from sitemap_updater.service.index import StaleIndex, rebuild_index
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import LocalRunFactory, bodies

NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def test_parallel_rebuilds_never_leave_older_bytes_or_a_missing_file(local_run: LocalRunFactory) -> None:
    # Given a section of 40 pages at 8 per file
    run = local_run(max_urls_per_file=8)
    pages = [event(f"{BASE}/blog/p{i}", version=1, lastmod="2026-11-01") for i in range(40)]
    run.send_wave(bodies(pages))
    pipeline = run.pipeline
    marks = [DirtyMark("blog", url=p["url"], key=page_key(p["url"])) for p in pages]
    errors: list[BaseException] = []
    stop = threading.Event()

    def rebuilder(which: str) -> None:
        while not stop.is_set():
            try:
                if which == "index":
                    rebuild_index(pipeline)
                else:
                    rebuild_section(pipeline, "blog", marks)
            except StaleIndex:
                pass  # lost a race to a newer index: the real handler retries
            except Exception as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=rebuilder, args=(w,)) for w in ("shard", "shard", "index", "index")]
    for thread in threads:
        thread.start()
    # When pages change and disappear while those rebuilds run
    changes = [dict(p, version=2, lastmod="2026-11-09") for p in pages[::3]]
    changes += [event(p["url"], type="delete", version=3, occurred_at="2026-11-10T00:00:00Z") for p in pages[::4]]
    for change in changes:
        ingest(json.dumps(change), pipeline)
    stop.set()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    run.drain()  # the queued rebuilds run after the racing ones
    # Then what is published is exactly the newest state, and the index names only files that exist
    published = run.published()
    assert published == reference_site([*pages, *changes], Limits(max_urls=8)).all_bytes()
    named = [loc.text or "" for loc in etree.fromstring(published["sitemap.xml"]).iterfind("s:sitemap/s:loc", NS)]
    assert all(name.removeprefix(f"{BASE}/") in published for name in named)
