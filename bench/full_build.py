"""Benchmark: `sitemap-updater build` of 10,000 to 1,000,000 pages against its peers; writes docs/benchmarks.md
(tables at 50,000 and 1,000,000 pages, and a figure of every size: docs/benchmarks/build-time.png).

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

from bench import cold_start, plots, sections, shard_rebuild
from bench.pages import write_pages
from bench.report import section as incremental_section
from bench.tools import CACHE, ROOT, Run, Tool, images_kept, install, measure, tools, validates

DOC = ROOT / "docs" / "benchmarks.md"
LAST_RUN = CACHE / "last-run.pickle"
RUNS = 3
SIZES = (10_000, 50_000, 200_000, 1_000_000)  # the figure's; the tables show TABLES
TABLES = (50_000, 1_000_000)
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
        "memory, both on one core. The figure draws the median wall time at every size measured ("
        + ", ".join(f"{size:,}" for size, *_ in rows)
        + " pages; sitemap.js as its README shows: one run above 100,000), the tables the detail at "
        + " and ".join(f"{size:,}" for size in TABLES)
        + ".",
        "",
    ]
    lines += [f"![{plots.BUILD_TIME_ALT}](benchmarks/{plots.BUILD_TIME.name})", ""]
    for size, input_bytes, results, parse, gz in rows:
        if size not in TABLES:
            continue
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
    plots.build_time(_walls(rows))
    plots.incremental(incremental)
    lines += [
        "## One shard rebuild",
        "",
        "A section of N pages in one file; one page changes; `rebuild_section` reads the file's snapshot and the "
        "changed page, reads its records in place (decoding the changed one), plans, renders and publishes "
        "(in-memory adapters, so no AWS latency; `bench/shard_rebuild.py`). The process peak includes the in-memory "
        "table holding the section, which on Lambda lives in DynamoDB.",
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
    lines += ["", *FINDINGS[:4], _full_build_finding(rows), *FINDINGS[4:]]
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
    "- **Peak RSS: goal met**: 104 MB at a million pages; the build spills to disk and works a run of buckets at a "
    "time.",
    "- **One changed page on a 1,000,000-page site: goal met**: its rebuild reads the file's snapshot and the one "
    "changed page and writes one file (and the index when a lastmod it names moves).",
    "- **Shard rebuild: goals met**: 0.05 s CPU for a 10,000-URL file, 0.5-0.7 s and 218 MB for 50,000, from the "
    "file's snapshot and the changed page.",
    "- **Cold start: every handler under 400 ms** (the table above: the webhook, ingest and the bootstrap's worker "
    "are the heaviest, with the event models, and the Powertools batch utility for ingest). The figures move with "
    "the machine's load: a slower run of this machine measured 464-624 ms. The handlers use no Powertools Tracer (the "
    "X-Ray SDK's import alone cost about 240 ms; `Tracing: Active` still records each invocation), and the "
    "clients come from a plain botocore session (no boto3 or s3transfer).",
    "- **Cost**: see the incremental section: no CloudFront invalidations, reads proportional to the change, "
    "index rebuilds coalesced, a rebuild's files on eight threads, an update's one conditional put, one snapshot "
    "object per rebuild, busy sections paced. The figures per scenario and per freshness setting are the "
    "incremental section's tables, the projections to 100M pages the Scale section's.",
]


def _full_build_finding(rows: list[Row]) -> str:
    """Issue 19's goal, judged from this run: 1.25x xml-sitemap-writer's speed at 1,000,000 pages, ahead at 50,000."""
    walls: dict[int, tuple[float, float, float, float]] = {}
    for size, _bytes, results, _parse, _gz in rows:
        if size not in TABLES:
            continue
        ours = [r.wall for r in results[0][1]]
        theirs = next(([r.wall for r in runs] for tool, runs, _k, _v in results if tool.name == "xml-sitemap-writer"))
        walls[size] = (_median(ours), _median(theirs), min(ours), min(theirs))
    big, small = walls[max(walls)], walls[min(walls)]
    fast, ahead = big[1] / big[0] >= 1.25, small[0] < small[1]
    return (
        f"- **Full build against xml-sitemap-writer: {big[1] / big[0]:.2f}x its speed at {max(walls):,} pages "
        f"({'met' if fast else 'not met'}: goal 1.25x), {'ahead of' if ahead else 'not ahead of'} it at "
        f"{min(walls):,} ({'met' if ahead else 'not met'})**, medians of this run: {big[0]:.2f} s against "
        f"{big[1]:.2f} s, and {small[0]:.3f} s against {small[1]:.3f} s (best {small[2]:.3f} against "
        f"{small[3]:.3f} s). " + BUILD_NOTES
    )


# What makes the build fast, and what remains of its time.
BUILD_NOTES = (
    "Our build uses both cores and xml-sitemap-writer one: while another process holds a core (another "
    "engineer's benchmark, a test suite), ours loses its second core and the margins go, at 50,000 pages first "
    "(where wall time is then about CPU time: 0.40 s of ours against 0.28 s of theirs). Every event is validated, "
    "every image kept. What makes it fast: lines of the common shape are read by msgspec into exact-typed "
    "structs and checked by the "
    "contract's rules in one loop, 256 KiB of lines at a time (one msgspec call each, as a JSON array with a null "
    "and a line break between lines, so no line can be read with its neighbours; any other chunk line by line), "
    "pydantic being imported only for a line the fast path leaves; the URL check and its first segment are one "
    "regular expression match (a query string and percent escapes the rules keep included), and other URLs on the "
    "site are canonicalised without splitting them (`core/fasturl.py`); the spill keeps fixed-size heads apart "
    "from the bytes, a chunk's spill is one write, and a bucket whose "
    "keys are all distinct is reduced by columns; a reduce task reads only its own runs and renders the files of "
    "its own key range (a folded section: no <url> elements written to disk and read back, nor planned by the "
    "main process), the build checking afterwards by the live counts that no wider range would have fit a file; "
    "the worker processes keep the memory their tasks free (glibc mallopt). Fixed costs of a small export: the "
    "process pool (multiprocessing) is imported only by a build that starts one, the records between processes "
    "are NamedTuples (no dataclass generated at import), and the CLI freezes what is alive once its arguments are "
    "read (gc.freeze: the shutdown's collections skip it). What remains, per page at 1,000,000: about 2.8 us in "
    "the fast path's loop (msgspec 0.45, the URL match 0.3, BLAKE2b 0.25), about 1.1 us in the reduce and 0.8 us "
    "in rendering (zlib -6 0.65 of it); at 50,000 pages about 0.07 s of interpreter start and imports (msgspec's "
    "own imports 20 ms, multiprocessing 10 ms), forking the workers and waiting for the pool to end. A faster "
    "deflate was measured and left out: zlib-ng at level 6 takes 0.45x zlib's time and ISA-L at level 2 0.08x, "
    "but zlib-ng's output is known to differ between x86_64 and arm64, and a file the deployed arm64 functions "
    "rebuild must have the bytes `build` wrote."
)


def _walls(rows: list[Row]) -> dict[str, dict[int, float]]:
    """Median wall seconds by tool and size, the floor as a tool (what the build-time figure draws)."""
    walls: dict[str, dict[int, float]] = {}
    for size, _bytes, results, parse, gz in rows:
        for tool, runs, _kept, _valid in results:
            walls.setdefault(tool.name, {})[size] = _median([r.wall for r in runs])
        walls.setdefault("floor: JSON parse + gzip -6", {})[size] = parse + gz
    return walls


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
