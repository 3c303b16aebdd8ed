"""Benchmark: `sitemap-updater build` against xml-sitemap-writer on exports of several URL shapes (issue 31).

Today's export (`bench/pages.py`) and the shapes of `bench/url_exports.py` (every URL with a query string, percent
escapes, characters above ASCII, a site's mix), at 1,000,000 pages: the two tools in turn (ours first, then theirs
first, and so on), several runs, the ratio taken pair by pair so the machine's drift cancels. Writes its section of
docs/benchmarks.md (``<!-- urls:begin -->``). Figures are printed and recorded, never asserted.

Usage: python -m bench.url_shapes [--pages N] [--runs N] [--no-doc]   (`make bench` runs it at 1,000,000 pages)
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench import sections
from bench.pages import write_pages
from bench.tools import CACHE, Run, Tool, install, measure, tools
from bench.url_exports import SHAPES, write_shape

NAME = "urls"
PAGES = 1_000_000
RUNS = 5
GOAL = 1.25  # issue 31: at least 1.25x xml-sitemap-writer's speed on each shape
DESCRIBED = {
    "today": "today's export (`bench/pages.py`): 1% of URLs with a query string, 1% above ASCII",
    "query": "every URL with `?ref=a&b=c`; 0.4% also `'`, `<`, `>` or a character above ASCII in the query",
    "percent": "every path percent-escaped (`caf%C3%A9`), a tenth in lower case, 2% with `%7E`",
    "unicode": "every path with characters above ASCII as written (`über-straße`, `日本`)",
    "mixed": "a site's mix: 55% plain, 25% with a query (1% a session ID), 8% escaped, 6% above ASCII, 3% with a "
    "fragment, 2% a dot segment or default port, 1% an upper-case host",
}


def export(shape: str, pages: int) -> Path:
    if shape == "today":
        return write_pages(CACHE / f"pages-{pages}.jsonl", pages)
    return write_shape(CACHE / f"shape-{shape}-{pages}.jsonl", shape, pages)


def pair(ours: Tool, theirs: Tool, events: Path, runs: int) -> list[tuple[Run, Run]]:
    """``runs`` pairs of runs of the two tools, the first of each pair alternating."""
    pairs = []
    for attempt in range(runs):
        order = (ours, theirs) if attempt % 2 == 0 else (theirs, ours)
        done = {tool.name: measure(tool, events, CACHE / f"out-urls-{os.getpid()}-{tool is ours}") for tool in order}
        pairs.append((done[ours.name], done[theirs.name]))
    return pairs


def _spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--shapes", default=",".join(["today", *SHAPES]))
    parser.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args()
    install(node=False)
    by_name = {tool.name: tool for tool in tools()}
    ours, theirs = by_name["sitemap-updater build"], by_name["xml-sitemap-writer"]
    rows = []
    loads = [os.getloadavg()[0]]  # other work on the machine: the speed-up needs both cores free (see _section)
    for shape in args.shapes.split(","):
        events = export(shape, args.pages)
        pairs = pair(ours, theirs, events, args.runs)
        for number, (mine, other) in enumerate(pairs, start=1):
            print(f"{args.pages:,} pages, {shape}, pair {number}: ours {mine.wall:.2f} s wall {mine.cpu:.2f} s CPU, "
                  f"theirs {other.wall:.2f} s wall {other.cpu:.2f} s CPU, {other.wall / mine.wall:.2f}x")  # fmt: skip
        walls = [other.wall / mine.wall for mine, other in pairs]
        cpus = [other.cpu / mine.cpu for mine, other in pairs]
        verdict = "met" if statistics.median(walls) >= GOAL else "not met"
        print(f"{args.pages:,} pages, {shape}: {_spread(walls)}x wall, {_spread(cpus)}x CPU (theirs over ours, "
              f"median (min-max) of {len(pairs)} pairs); goal {GOAL}x: {verdict}")  # fmt: skip
        rows.append((shape, events.stat().st_size, pairs))
        loads.append(os.getloadavg()[0])
    print(f"load average (1 min) before and after each shape: {', '.join(f'{load:.1f}' for load in loads)}")
    if not args.no_doc:
        sections.write(NAME, _section(rows, args.pages, args.runs, loads))
        print(f"wrote its section of {sections.DOC.name}")
    return 0


def _section(
    rows: list[tuple[str, int, list[tuple[Run, Run]]]], pages: int, runs: int, loads: list[float]
) -> list[str]:
    lines = [
        "## Full build by URL shape",
        "",
        f"Measured by `make bench` (`bench/url_shapes.py`) on {datetime.now(UTC).date():%Y-%m-%d}: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}. {pages:,} pages of each "
        f"shape (`bench/url_exports.py`: today's export with its URLs made another way), `build` and "
        f"xml-sitemap-writer in turn, {runs} pairs, the first of each pair alternating; the speed-up is theirs over "
        "ours pair by pair, as median (min-max). Goal (issue 31): at least 1.25x xml-sitemap-writer's speed on each. "
        f"The machine's load average (1 minute) before and after each shape: {', '.join(f'{x:.1f}' for x in loads)}.",
        "",
        "| URL shape | JSONL (MB) | our wall (s) | their wall (s) | speed-up (wall) | our CPU (s) | their CPU (s) | "
        "CPU ratio | goal |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for shape, size, pairs in rows:
        ratios = [other.wall / mine.wall for mine, other in pairs]
        lines.append(
            f"| {shape}: {DESCRIBED[shape]} | {size / 1e6:,.0f} | {_spread([m.wall for m, _ in pairs])} | "
            f"{_spread([o.wall for _, o in pairs])} | {_spread(ratios)}x | "
            f"{statistics.median([m.cpu for m, _ in pairs]):.2f} | {statistics.median([o.cpu for _, o in pairs]):.2f} "
            f"| {_spread([o.cpu / m.cpu for m, o in pairs])}x | "
            f"{'met' if statistics.median(ratios) >= GOAL else 'not met'} |"
        )
    lines += [
        "",
        "Our build uses both cores and xml-sitemap-writer one, so the speed-up needs both cores free: on a machine "
        "busy with other work it falls towards the CPU ratio (their CPU over ours, pair by pair). A URL written "
        "with the site's scheme and host is canonicalised without splitting it (`core/fastline.py`, "
        "`core/fasturl.py`): one match finds a canonical URL with or without a query, a query with a session ID is "
        "told apart in the same match (a look-ahead where each pair starts), escapes the rules keep are recognised in "
        "it too, and a URL it finds but for escapes the rules rewrite (lower-case hex, an unreserved character) has "
        "them looked up in a table of the rules' own encoding of each and is matched again; where it finds none, a "
        "second match takes the URL with characters above ASCII (percent-encoded a block of lines at a time, where "
        "many are, else by way of quoted-printable) or a fragment (dropped); other escapes are looked up in that "
        "table, other characters encoded by the rules' function, dot segments removed, session IDs removed "
        "from the query, a scheme and host in capitals or with the default port written as the site's; a URL with a "
        "path parameter is canonicalised by `core/urls.py`; the session IDs either removes are warned about as the "
        "event models word them, so no line of these exports is read by the models (pydantic is not imported).",
    ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
