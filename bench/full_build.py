"""Benchmark: `sitemap-updater build` of 50,000 and 1,000,000 pages; writes docs/benchmarks.md.

Run with `make bench`. Figures are printed and recorded, never asserted.
"""

from __future__ import annotations

import compileall
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

from bench import cold_start, sections, shard_rebuild
from bench.pages import write_pages
from bench.report import section as incremental_section
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


def _compile_ours() -> None:
    """Our package's bytecode, as installing it writes (pip compiles what it installs, as it did for the peers in
    bench/.cache): run from a checkout with PYTHONDONTWRITEBYTECODE set, each start would compile every module again
    (about 25 ms of a 50,000-page build)."""
    compileall.compile_dir(ROOT / "functions" / "sitemap_updater", quiet=1)


def main() -> int:
    install()
    _compile_ours()
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
    lines += [*incremental_section(incremental), ""]  # as bench.incremental writes it
    lines += [
        "## One shard rebuild",
        "",
        "A section of N pages in one file; one page changes; `rebuild_section` reads the file's snapshot and the "
        "changed page, decodes the states, plans, renders and publishes (in-memory adapters, so no AWS latency; "
        "`bench/shard_rebuild.py`). The process peak includes the in-memory table holding the section, which on "
        "Lambda lives in DynamoDB.",
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
    "- **Full build: within 2x of the floor (met); 1.25x faster than xml-sitemap-writer at 1,000,000 pages (met "
    "when both cores are the build's), level with it at 50,000 (not ahead).** The run of 2026-11-25 that wrote "
    "these tables had the machine to itself: 1,000,000 pages in 2.80 s (5.4 s CPU, 107 MB peak) against "
    "xml-sitemap-writer's 3.79 s, 1.35x faster; 50,000 pages in 0.33 s against 0.30 s (median of 3; 0.28 against "
    "0.29 s at best), about 0.09 s of ours being the interpreter's start and imports. An earlier run that day, while "
    "another engineer's test suite held one of the two cores, showed us 1.80x xml-sitemap-writer's time (7.53 s, "
    "before the second round of issue 19's work); measured back to back between the two rounds of work, alternating "
    "before, after and xml-sitemap-writer (best of 4), 2.85 s against 3.36 s before and 3.83 s. With another "
    "run on one core, our build loses its second core and xml-sitemap-writer, on one core anyway, does not: the "
    "goal holds only on an otherwise idle machine. Every event is validated, every image kept, and the output bytes "
    "are the same as before. What changed (issue 19): lines of the common shape are read by msgspec into "
    "exact-typed structs and checked by the contract's rules in one loop, a 4 MiB chunk of them in one msgspec call "
    "(as a JSON array with a null and a line break between lines, so no line can be read with its neighbours; any "
    "other chunk line by line), pydantic being imported only for a line the fast path leaves; the URL check and "
    "its first segment are one regular expression match, and a URL clean but for characters above ASCII is "
    "percent-encoded by one quote() call; the spill keeps fixed-size heads apart from the bytes, a chunk's spill is "
    "one write, and a bucket whose keys are all distinct is reduced by columns (its keys ordered as floats, checked "
    "to ascend); a reduce task renders the files of its own key range (a folded section: no <url> elements written "
    "to disk and read back, nor planned by the main process), the build checking afterwards by the live counts "
    "that no wider range would have fit a file (else that section is reduced and rendered again the usual way), "
    "and an export one task could take whole gives each worker the whole key space of a share of the sections; "
    "the worker processes keep the memory their tasks free (glibc mallopt: about 85,000 page faults instead of "
    "360,000-420,000 at 1,000,000 pages). What remains, per page at 1,000,000: about 2.8 us in the fast path's "
    "loop (msgspec 0.45, the URL match 0.3, BLAKE2b 0.25, rendering, packing and routing the rest), about 1.1 us "
    "in the reduce and 0.8 us in rendering (zlib -6 0.65 of it). A faster deflate was measured and left out: "
    "zlib-ng at level 6 takes 0.45x zlib's time and ISA-L at level 2 0.08x, but zlib-ng's output is known to "
    "differ between x86_64 and arm64 (ISA-L has assembly of its own for each), and a file the deployed arm64 "
    "functions rebuild must have the bytes `build` wrote. At 50,000 pages a third of the time is the interpreter "
    "and its imports (about 0.09 s).",
    "- **Peak RSS: goal met**: 107 MB at a million pages; the build spills to disk and works a run of buckets at a "
    "time.",
    "- **One changed page on a 1,000,000-page site: goal met**: its rebuild reads the file's snapshot and the one "
    "changed page and writes one file (and the index when a lastmod it names moves).",
    "- **Shard rebuild: goals met**: 0.07 s CPU for a 10,000-URL file, 0.5-0.7 s and 218 MB for 50,000, from the "
    "file's snapshot and the changed page.",
    "- **Cold start: every handler under 400 ms** (the table above: the webhook, ingest and the bootstrap's worker "
    "are the heaviest, with the event models, and the Powertools batch utility for ingest). 464-624 ms on "
    "2026-11-22 on a slower run of this machine: the "
    "figures move with the machine, about 2x between these two runs. The handlers use no Powertools Tracer (the "
    "X-Ray SDK's import alone cost about 240 ms; `Tracing: Active` still records each invocation), and the "
    "clients come from a plain botocore session (no boto3 or s3transfer).",
    "- **Cost**: see the incremental section: no CloudFront invalidations, reads proportional to the change, "
    "index rebuilds coalesced; $31 per million events at one event per second, $8 at 50 a second.",
]


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
