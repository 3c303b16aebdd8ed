"""One shard rebuild: a section of N pages in one file, one page changes; CPU time and memory of the rebuild
(the real service code on the in-memory adapters of tests/sim, so no AWS latency is counted). The rebuild reads
the file's snapshot and the one changed page, reads the N records in place and renders the file. This sizes the rebuild
function's memory setting. Each size runs in a fresh process."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

SIZES = (10_000, 50_000)
SITE = "https://www.example.com"


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def _one(size: int) -> dict[str, float]:
    warnings.simplefilter("ignore")
    from sitemap_updater.core.events import parse_event
    from sitemap_updater.core.messages import DirtyMark, read_rebuild_request
    from sitemap_updater.core.reduce import state_from_event
    from sitemap_updater.service.ingest import ingest, page_write
    from sitemap_updater.service.rebuild import rebuild_section
    from tests.sim.world import Config, Simulation

    sim = Simulation(Config(0, max_urls=50_000, max_files_per_index=50_000))
    sim.s3.watch = lambda _name, _old, _new: None  # the simulation's invariant checks are not the rebuild's cost
    pipeline, site = sim.pipeline, sim.pipeline.site

    def body(i: int, lastmod: str, version: int = 1) -> str:
        image = [{"loc": f"https://cdn.example.com/{i}.jpg"}] if i % 10 == 0 else []
        return json.dumps({"type": "upsert", "url": f"{SITE}/blog/page-{i}", "occurred_at": "2026-11-20T10:00:00Z",
                           "version": version, "lastmod": lastmod, "images": image})  # fmt: skip

    horizon = pipeline.horizon()
    states = (state_from_event(parse_event(body(i, "2026-01-01"), site, horizon).event) for i in range(size))
    writes = [page_write(state) for state in states]
    pipeline.store.import_pages(writes)
    first = rebuild_section(pipeline, "blog", [DirtyMark("blog", writes[0].url, writes[0].key, "added")])
    assert len(first.put) == 1, first.put
    queue = sim.queues["RebuildQueue"]
    queue.messages.clear()
    changed = body(size // 2, "2026-11-21", version=2)  # the one change: a new lastmod for one page
    ingest(changed, pipeline)
    marks = [mark for m in queue.messages for mark in read_rebuild_request(json.loads(m.body))]
    before_rss = _rss_mb()
    cpu, wall = time.process_time(), time.perf_counter()
    done = rebuild_section(pipeline, "blog", marks)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert done.put and (done.entries_read, done.snapshots_read) == (1, 1), (done.entries_read, done.snapshots_read)
    return {"urls": size, "cpu_s": cpu, "wall_s": wall, "rss_before_mb": before_rss, "peak_mb": peak_after,
            "entries_read": done.entries_read, "snapshots_read": done.snapshots_read,
            "bytes_put": len(sim.s3.objects[done.put[0]].data)}  # fmt: skip


def measure() -> list[dict[str, float]]:
    rows = []
    for size in SIZES:
        done = subprocess.run([sys.executable, "-m", "bench.shard_rebuild", str(size)], capture_output=True,
                              text=True, check=True)  # fmt: skip
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{size:>7,}-URL file rebuild: {row['cpu_s']:.3f} s CPU, {row['wall_s']:.3f} s wall, "
              f"process peak {row['peak_mb']:.0f} MB ({row['rss_before_mb']:.0f} MB before it, most of it the "
              f"in-memory table), {row['bytes_put']:,} bytes put")  # fmt: skip
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(json.dumps(_one(int(sys.argv[1]))))
    else:
        measure()
