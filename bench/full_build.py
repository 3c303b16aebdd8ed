"""Benchmark: `sitemap-updater build` of 50,000 and 1,000,000 pages; writes docs/benchmarks.md.

Run with `make bench`. Figures are printed and recorded, never asserted.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import time
import zlib
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from bench import cold_start, cost, sections, shard_rebuild
from bench.pages import write_pages
from bench.tools import CACHE, ROOT, Run, Tool, images_kept, install, measure, tools, validates

DOC = ROOT / "docs" / "benchmarks.md"
LAST_RUN = CACHE / "last-run.pickle"
RUNS = 3
SIZES = (50_000, 1_000_000)
INCREMENTAL_PAGES = 1_000_000


def _floor(events: Path, out: Path) -> tuple[float, float]:
    """The floor: reading and parsing the JSONL alone, and gzip level 6 of the XML we wrote."""
    started = time.perf_counter()
    with events.open("rb") as handle:
        for line in handle:
            json.loads(line)
    parse = time.perf_counter() - started
    xml = b"".join(gzip.decompress(p.read_bytes()) for p in sorted(out.glob("*.xml.gz")))
    started = time.perf_counter()
    zlib.compress(xml, 6)
    return parse, time.perf_counter() - started


def main() -> int:
    install()
    rows = []
    for size in SIZES:
        events = write_pages(CACHE / f"pages-{size}.jsonl", size)
        results: list[tuple[Tool, list[Run], int, str]] = []
        for tool in tools():
            slow = tool.name.endswith("README shows") and size > 100_000
            runs = []
            for attempt in range(1 if slow else RUNS):
                out = CACHE / f"out-{size}"
                run = measure(tool, events, out)
                runs.append(run)
                print(f"{size:>9,} pages, {tool.name}, run {attempt + 1}: {run.wall:6.2f} s wall, "
                      f"{run.cpu:6.2f} s CPU, {run.peak_rss_mb:6.1f} MB peak RSS, {run.files} files, "
                      f"{run.out_bytes:,} bytes")  # fmt: skip
            kept, valid = images_kept(out), validates(out)
            print(f"    images kept: {kept:,}; validates: {valid}")
            if not results:  # the floor gzips our XML
                parse, gz = _floor(events, out)
            results.append((tool, runs, kept, valid))
        rows.append((size, events.stat().st_size, results, parse, gz))
    print("one shard rebuild:")
    shards = shard_rebuild.measure()
    print("cold start:")
    cold = cold_start.measure()
    print(f"incremental on {INCREMENTAL_PAGES:,} pages (import, then 1 and 1,000 changes):")
    done = subprocess.run([sys.executable, "-m", "bench.incremental", str(INCREMENTAL_PAGES)], capture_output=True,
                          text=True, check=True)  # fmt: skip
    incremental = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(incremental))
    with LAST_RUN.open("wb") as saved:  # so the document's text can be rewritten without measuring again
        pickle.dump((rows, shards, cold, incremental), saved)
    _write_doc(rows, shards, cold, incremental)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


def _median(values: list[float]) -> float:
    return statistics.median(values)


Row = tuple[int, int, list[tuple[Tool, list[Run], int, str]], float, float]


def _write_doc(
    rows: list[Row],
    shards: list[dict[str, float]],
    cold: list[Any],
    incremental: dict[str, Any],
    day: date | None = None,
) -> None:
    lines = [
        "# Benchmarks",
        "",
        f"Measured by `make bench` on {day or datetime.now(UTC).date():%Y-%m-%d}: {platform.machine()}, "
        f"{os.cpu_count()} cores, "
        f"Python {platform.python_version()}, Node {_node_version()}. Median of {RUNS} runs each (one run where "
        "marked); figures are recorded, never asserted. Every tool runs as a child process on the same machine in "
        "the same run; CPU is user + system time of the process tree, peak RSS the largest resident set of any of "
        "its processes.",
        "",
        "## Full build",
        "",
        "Synthetic export (`bench/pages.py`): 8 sections, 10% of pages with an image, about 1% non-ASCII URLs and "
        "1% with `&` in the query. Each tool writes gzip sitemap files of at most 10,000 URLs (xml-sitemap-writer: "
        "its fixed 15,000) plus an index. Peers: npm `sitemap` 8 (`SitemapAndIndexStream` with gzip, "
        "`bench/peers/sitemapjs.mjs`) and PyPI `xml-sitemap-writer` (`bench/peers/xsw_build.py`), installed into "
        "`bench/.cache`. The floor is reading and parsing the JSONL alone plus gzip -6 of our XML already in "
        "memory, both on one core.",
        "",
    ]
    for size, input_bytes, results, parse, gz in rows:
        ours = _median([r.wall for r in results[0][1]])
        lines += [
            f"### {size:,} pages ({input_bytes / 1e6:,.0f} MB of JSONL)",
            "",
            "| tool | wall (s) | CPU (s) | peak RSS (MB) | files | output bytes | images kept | byte-stable | "
            "validates | our wall / theirs |",
            "|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
        ]
        for tool, runs, kept, valid in results:
            wall = _median([r.wall for r in runs])
            stable = "yes" if len({r.digest for r in runs}) == 1 else "no"
            if len(runs) == 1:
                stable = "(1 run)"
            mark = " (1 run)" if len(runs) == 1 else ""
            lines.append(
                f"| {tool.name}{mark} | {wall:.2f} | {_median([r.cpu for r in runs]):.2f} | "
                f"{_median([r.peak_rss_mb for r in runs]):.0f} | {runs[0].files:,} | {runs[0].out_bytes:,} | "
                f"{kept:,} | {stable} | {valid} | {ours / wall:.2f} |"
            )
        lines += [
            f"| floor: JSON parse + gzip -6 | {parse + gz:.2f} | | | | | | | | {ours / (parse + gz):.2f} |",
            "",
        ]
    lines += _incremental_section(incremental)
    lines += [
        "## One shard rebuild",
        "",
        "A section of N pages in one file; one page changes; `rebuild_section` reads the file's manifest, plans, "
        "renders and publishes (in-memory adapters, so no AWS latency; `bench/shard_rebuild.py`). The process "
        "peak includes the in-memory table holding the section, which on Lambda lives in DynamoDB.",
        "",
        "| URLs in the file | CPU (s) | wall (s) | process RSS before (MB) | process peak (MB) | bytes put |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in shards:
        lines.append(
            f"| {row['urls']:,.0f} | {row['cpu_s']:.3f} | {row['wall_s']:.3f} | {row['rss_before_mb']:.0f} | "
            f"{row['peak_mb']:.0f} | {row['bytes_put']:,.0f} |"
        )
    lines += [
        "",
        "## Cold start",
        "",
        f"Import time of each handler module in a fresh interpreter (`python -X importtime`), median of "
        f"{cold_start.RUNS}, and the packages that dominate it (self time of their modules, one run).",
        "",
        "| handler | import (ms) | heaviest imports (ms) |",
        "|---|---:|---|",
    ]
    for handler, total, heaviest in cold:
        lines.append(
            f"| {handler} | {total * 1000:.0f} | " + ", ".join(f"{k} {v * 1000:.0f}" for k, v in heaviest) + " |"
        )
    lines += ["", *FINDINGS]
    old = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    for name in sections.KEPT:  # measured by bench.local_scale and bench.webhooks, which `make bench` runs after
        section = sections.kept(old, name)
        if section:
            lines += ["", *section]
    DOC.write_text("\n".join(lines) + "\n", encoding="utf-8")


# What the figures mean and what remains; kept with the code that measures it (update when they change).
FINDINGS = [
    "## Against the goals, and what remains",
    "",
    "The last column of the full-build tables is our wall time over the tool's: above 1, we are slower.",
    "",
    "- **Full build: within 2x of the floor (met), faster than every peer but one (missed by about 13%).** At "
    "1,000,000 pages `sitemap-updater build` takes 11.7 s on both cores (22 s CPU, 89 MB peak), validating every "
    "event and keeping every image: 1.19x the floor, 2.8x faster than sitemap.js with coalesced writes and 9x "
    "faster than sitemap.js as its README shows, but 1.13x the time of xml-sitemap-writer, which parses the JSON "
    "without validating it, writes only `<loc>` (every image and lastmod dropped) and is not byte-stable. At "
    "50,000 pages process start and imports weigh more (1.14 s against 0.70 s). The previous run took 51.5 s. "
    "What changed: a fast path from JSON line to spill record (`core/fastline.py`: one pydantic-core pass checks "
    "the common shape, the same rendering functions write the bytes, the pydantic models stay the contract for "
    "everything else, and a differential test holds the two paths to the same bytes); the reduce works on the "
    "records in place; files of sections without news are gzipped straight from contiguous runs of `<url>` "
    "elements the reduce wrote. What remains (py-spy on one worker): about 13 us a line in the fast path, spread "
    "thin — pydantic-core's JSON validation about 3.4 us, the BLAKE2b page key 1.3, packing the record 1.3, the "
    "canonical-URL check 1.2, the element text 0.7, the 2% of URLs that need canonicalising 1.1 averaged over all "
    "lines — then about 4 us a page in the reduce and 1.5 in gzip. The next step is a build spill format with "
    "fixed-size headers apart from the bytes, so the reduce unpacks headers in C (`struct.iter_unpack`) and "
    "de-duplicates by key (about 2 us a page, roughly the gap).",
    "- **Peak RSS: goal met**: 89 MB at a million pages; the build spills to disk and works bucket by bucket.",
    "- **One changed page on a 1,000,000-page site: goal met**: it reads one file's manifest and writes one "
    "file (and the index when a lastmod it names moves).",
    "- **Many spread changes cost more than a full rebuild**: 1,000 changes rebuilt in FIFO batches of 10 "
    "re-read each touched file once per batch, about 6x the items a full publish reads. Coalescing all marks "
    "of a section waiting in the queue into one rebuild, or rebuilding a section whole when a batch touches "
    "most of its files, would bound it by the full publish.",
    "- **Shard rebuild: goals met** (0.2 s CPU for 10,000 URLs, 1 s and 256 MB for 50,000): entries and page "
    "states are named tuples decoded by direct slicing, and the benchmark no longer counts the simulation's "
    "own invariant checks (the previous run's 0.31 s and 1.68 s included them). Decoding the manifest and the "
    "in-memory store's query are most of what remains; on Lambda, reading the items from DynamoDB will "
    "dominate. The process peak includes building the in-memory table that stands in for DynamoDB.",
    "- **Cold start: met for three handlers, at the line for one, missed for ingest** (goal 500 ms): "
    "rebuild_shard, rebuild_index and notify import in 464-489 ms; sweep, which imports the same modules, took "
    "518 ms in this run and 477 ms in the run before it (this machine varies by about 30 ms); ingest 624 ms "
    "(previous run: 690-770 ms for every handler). The handlers no longer use the Powertools Tracer: "
    "importing the X-Ray SDK cost about "
    "240 ms (it builds a botocore session for sampling at import), and the template's `Tracing: Active` still "
    "records each invocation without per-call subsegments. On Lambda the clients come from a plain botocore "
    "session, which spares importing boto3 and s3transfer (about 100 ms); only the ingest path imports the event "
    "models; the XML character check compiles in microseconds instead of 10 ms. What remains is botocore "
    "(its client module pulls in `botocore.docs`), pydantic's first model build (the settings) and urllib3; "
    "ingest adds the event models (about 40 ms) and the Powertools batch utility behind "
    "`BatchProcessor(model=SqsRecordModel)` (about 140 ms measured alone: it imports asyncio and the models of "
    "every batch source). The other four handlers answer partial batches themselves; doing the same in ingest "
    "would bring it near the others, at the price of leaving the Powertools batch pattern, so it is left as is.",
    "- **Cost: CloudFront invalidations are gone.** They were 91-98% of the cost (about 2.6 million paths a "
    "month at one event per second, at $0.005 each beyond the free 1,000). Files and index now carry a 5 s cache "
    "lifetime and the index waits it out (docs/architecture.md), so a change costs no invalidation. What "
    "remains is DynamoDB: a rebuild reads the whole manifest of each file it renders, so at one event per "
    "second each change reads a whole file; a snapshot per file, updated by the changed entries only, would make "
    "it proportional to the change.",
    "",
]


def _incremental_section(data: dict[str, Any]) -> list[str]:
    full, one, many = data["full"], data["one"], data["thousand"]
    lines = [
        "## Incremental updates",
        "",
        f"A site of {data['pages']:,} pages (the full-build export) loaded with the `import` use case, then one "
        "changed page, then 1,000 changes spread over the site, rebuilt in FIFO batches of 10 per section "
        "(`bench/incremental.py`). The real service code runs on the in-memory adapters of `tests/sim`, which "
        "count every DynamoDB item, S3 request, SQS message and CloudFront path the AWS adapters would use "
        "(moto cannot hold a million-page table in reasonable time here). CPU is the whole use case in one process.",
        "",
        "| | DynamoDB items read | items written | S3 PUTs | bytes uploaded | SQS messages | CloudFront paths | "
        "CPU (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, ops in (("full publish (import)", full), ("one changed page", one), ("1,000 changed pages", many)):
        lines.append(
            f"| {name} | {ops['reads']:,} | {ops['writes']:,} | {ops['s3_puts']:,} | {ops['s3_bytes']:,} | "
            f"{sum(ops['sqs'].values()):,} | {ops['cdn_paths']:,} | {ops['cpu_s']:.2f} |"
        )
    ratio = (one["reads"] + one["writes"]) / max(1, full["reads"] + full["writes"])
    lines += [
        "",
        f"One changed page reads and writes {ratio:.4f} of what the full publish does (goal: at most 1/50 = 0.02).",
        "",
        "### Cost per million events",
        "",
        "At AWS list prices (us-east-1; constants and assumptions in `bench/cost.py`), from the counts above: at "
        "1 event/s each change is rebuilt alone (the one-page figures); at 50 events/s SQS batches of 10 fill "
        "(the 1,000-page figures per event).",
        "",
        "| rate | Lambda | SQS | DynamoDB | S3 | CloudFront invalidations | total (USD per 1M events) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, ops, events, batch, rate in (("1 event/s", one, 1, 1, 1.0), ("50 events/s", many, 1000, 10, 50.0)):
        c = cost.per_million(ops, events, batch, rate)
        lines.append(
            f"| {label} | {c['lambda']:,.2f} | {c['sqs']:,.2f} | {c['dynamodb']:,.2f} | {c['s3']:,.2f} | "
            f"{c['cloudfront']:,.2f} | {c['total']:,.2f} |"
        )
    lines.append("")
    return lines


def _node_version() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def rewrite_doc() -> int:
    """Write docs/benchmarks.md again from the figures of the last run (after editing FINDINGS)."""
    with LAST_RUN.open("rb") as source:
        rows, shards, cold, incremental = pickle.load(source)  # our own file in bench/.cache
    _write_doc(rows, shards, cold, incremental, datetime.fromtimestamp(LAST_RUN.stat().st_mtime, UTC).date())
    print(f"wrote {DOC.relative_to(ROOT)} from {LAST_RUN.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(rewrite_doc() if sys.argv[1:] == ["--doc-only"] else main())
