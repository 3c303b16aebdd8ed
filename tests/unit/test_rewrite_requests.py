"""What a rewrite of one sitemap file asks of S3, which is most of its cost at low rates: the put of its bytes,
``If-Match`` the ETag its record kept from the last put, with no HEAD first; the object is read only when it is
not the one the record names (another put came between)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from sitemap_updater.core.events import parse_event
from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.service.ingest import page_write
from sitemap_updater.service.rebuild import rebuild_section
from tests.sim.world import Config, Simulation

SITE = "https://www.example.com"


def _section(pages: int) -> tuple[Simulation, Counter[str], Any]:
    sim = Simulation(Config(0, max_urls=10_000, max_files_per_index=50_000))
    sim.s3.watch = lambda _name, _old, _new: None
    calls: Counter[str] = Counter()
    for method in ("head_object", "put_object", "get_object"):
        original = getattr(sim.s3, method)

        def counted(*args: Any, _o: Any = original, _m: str = method, **kw: Any) -> Any:
            calls[_m if _m != "put_object" or not str(kw.get("Key", "")).startswith("_state/") else "snapshot"] += 1
            return _o(*args, **kw)

        setattr(sim.s3, method, counted)
    pipeline = sim.pipeline

    def change(i: int, version: int) -> DirtyMark:
        body = json.dumps({"type": "upsert", "url": f"{SITE}/blog/page-{i}", "occurred_at": "2026-11-20T10:00:00Z",
                           "version": version, "lastmod": f"2026-11-{version:02d}"})  # fmt: skip
        write = page_write(state_from_event(parse_event(body, pipeline.site, pipeline.horizon()).event))
        pipeline.store.import_pages([write])
        return DirtyMark("blog", write.url, write.key, "updated")

    marks = [change(i, 1) for i in range(pages)]
    rebuild_section(pipeline, "blog", marks)
    return sim, calls, change


def test_a_rewritten_file_is_one_put_if_match_its_recorded_etag_and_no_head() -> None:
    # Given a section of one file, published
    sim, calls, change = _section(50)
    [record] = sim.pipeline.store.files("blog")
    assert record.etag == sim.s3.objects[record.name].etag  # the ETag S3 answered its put
    # When one page changes and its file is rebuilt
    calls.clear()
    done = rebuild_section(sim.pipeline, "blog", [change(7, 2)])
    # Then the file's bytes are one put, with no HEAD, after one ranged GET of its snapshot and the snapshot's put
    assert done.put == [record.name]
    assert calls == Counter({"put_object": 1, "get_object": 1, "snapshot": 1})
    [rewritten] = sim.pipeline.store.files("blog")
    assert rewritten.etag == sim.s3.objects[record.name].etag != record.etag


def test_a_file_put_by_someone_else_since_its_record_is_read_before_it_is_written() -> None:
    # Given a published file whose object was overwritten out of band (its record's ETag is no longer the object's)
    sim, calls, change = _section(50)
    [record] = sim.pipeline.store.files("blog")
    sim.s3.put_object(Bucket="b", Key=record.name, Body=b"someone else's", Metadata={"seq": "1"})
    calls.clear()
    # When a page changes: the put over the kept ETag fails, the object is read (a HEAD), and the file is put over it
    done = rebuild_section(sim.pipeline, "blog", [change(7, 2)])
    assert done.put == [record.name] and calls["head_object"] == 1 and calls["put_object"] == 2
    assert sim.s3.objects[record.name].data != b"someone else's"
