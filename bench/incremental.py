"""Incremental updates on a large site: import N pages, then change one page, then 1,000 pages spread over the
site; count what each costs (DynamoDB items read and written, S3 puts and bytes, SQS messages, CloudFront paths,
CPU seconds) against the import's full publish. The real service code runs on the in-memory adapters of
tests/sim, which count every call the DynamoDB, S3, SQS and CloudFront adapters would make."""

from __future__ import annotations

import json
import random
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.pages import write_pages

CACHE = Path(__file__).resolve().parent / ".cache"
SITE = "https://www.example.com"
# Items each store method reads or writes (callables get the call's arguments and result).
READS = {"get_page": 1, "section_seq": 1, "index_sha": 1, "entries": len, "entries_for": len, "files": len}
WRITES = {"record_rank": 1, "clear_pending": 1, "put_file": 1, "move_file_state": 1, "clear_pending_index": 1,
          "delete_file": 1, "mark_unsettled": 1, "next_index_generation": 1, "put_index_sha": 1}  # fmt: skip


@dataclass
class Ops:
    reads: int = 0
    writes: int = 0
    s3_puts: int = 0
    s3_bytes: int = 0
    s3_heads: int = 0
    sqs_sends: Counter[str] = field(default_factory=Counter)
    cdn_paths: int = 0
    cpu_s: float = 0.0
    files: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"reads": self.reads, "writes": self.writes, "s3_puts": self.s3_puts, "s3_bytes": self.s3_bytes,
                "s3_heads": self.s3_heads, "sqs": dict(self.sqs_sends), "cdn_paths": self.cdn_paths,
                "cpu_s": round(self.cpu_s, 3)}  # fmt: skip


def _instrument(sim: Any, ops: list[Ops]) -> None:
    store = sim.store
    for name, count in {**READS, **WRITES}.items():
        original = getattr(store, name)

        def counted(*args: Any, _o: Any = original, _n: str = name, _c: Any = count, **kwargs: Any) -> Any:
            result = _o(*args, **kwargs)
            amount = _c(result) if callable(_c) else _c
            if _n in READS:
                ops[-1].reads += amount
            else:
                ops[-1].writes += amount
            return result

        setattr(store, name, counted)
    record_change, import_pages = store.record_change, store.import_pages

    def change(write: Any, expected: Any, old_section: Any) -> bool:
        ops[-1].writes += 3 + (2 if old_section not in (None, write.section) else 0)  # page, entry, sequence(s)
        return bool(record_change(write, expected, old_section))

    def load(writes: list[Any]) -> None:
        ops[-1].writes += 2 * len(writes) + len({w.section for w in writes})
        import_pages(writes)

    store.record_change, store.import_pages = change, load
    watch = sim.s3.watch

    def put(name: str, old: Any, new: Any) -> None:
        if new is not None:
            ops[-1].s3_puts += 1
            ops[-1].s3_bytes += len(new.data)
        watch(name, old, new)

    sim.s3.watch = put
    head = sim.s3.head_object

    def counted_head(**kwargs: Any) -> Any:
        ops[-1].s3_heads += 1
        return head(**kwargs)

    sim.s3.head_object = counted_head
    for queue in sim.queues.values():
        add = queue.add

        def send(*args: Any, _a: Any = add, _q: str = queue.name, **kwargs: Any) -> None:
            ops[-1].sqs_sends[_q] += 1
            _a(*args, **kwargs)

        queue.add = send


def run(size: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from sitemap_updater.service.bulk_import import import_events
    from sitemap_updater.service.index import rebuild_index
    from sitemap_updater.service.ingest import ingest
    from sitemap_updater.service.rebuild import DirtyMark, rebuild_section
    from tests.sim.world import Config, Simulation

    sim = Simulation(Config(0, max_urls=10_000))
    pipeline = sim.pipeline
    ops: list[Ops] = [Ops()]
    _instrument(sim, ops)
    events = write_pages(CACHE / f"pages-{size}.jsonl", size)
    lines = events.read_text(encoding="utf-8").splitlines()
    started = time.process_time()
    done = import_events(lines, pipeline)
    ops[-1].cpu_s = time.process_time() - started
    ops[-1].files = len(sim.s3.objects)
    full = ops[-1]
    rebuild = sim.queues["RebuildQueue"]

    def changes(count: int, rng: random.Random) -> Ops:
        ops.append(Ops())
        for queue in sim.queues.values():
            queue.messages.clear()
        started = time.process_time()
        for i in rng.sample(range(size), count):
            body = json.loads(lines[i])
            body.update(version=2, lastmod="2026-11-21")
            ingest(json.dumps(body), pipeline)
        marks = [mark for m in rebuild.messages for mark in DirtyMark.from_message(json.loads(m.body))]
        by_section: dict[str, list[DirtyMark]] = {}
        for mark in marks:
            by_section.setdefault(mark.section, []).append(mark)
        for section, section_marks in sorted(by_section.items()):
            for start in range(0, len(section_marks), 10):  # FIFO batches of 10, as the event source delivers
                rebuild_section(pipeline, section, section_marks[start : start + 10])
        rebuild_index(pipeline)
        ops[-1].cpu_s = time.process_time() - started
        return ops[-1]

    one = changes(1, random.Random(1))
    many = changes(1000, random.Random(2))
    return {"pages": done.pages, "full": full.as_dict(), "files": full.files, "one": one.as_dict(),
            "thousand": many.as_dict()}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)))
