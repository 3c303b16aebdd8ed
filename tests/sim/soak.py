"""``make soak``: run many simulated sequences on every core and record the result in docs/reliability.md.

python -m tests.sim.soak --sequences 10000 [--first-seed 1] [--workers 2] [--write docs/reliability.md]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from tests.sim.world import Config, Result, Simulation

BEGIN, END = "<!-- soak:begin -->", "<!-- soak:end -->"


def _run(seed: int) -> Result:
    warnings.simplefilter("ignore")  # Powertools warns when an invocation published no metric
    return Simulation(Config.for_soak(seed)).run()


@dataclass
class Totals:
    sequences: int = 0
    several_sites: int = 0  # sequences over the stack's own site and sites added at run time
    removed_sites: int = 0
    events: int = 0
    invocations: int = 0
    steps: int = 0
    s3_puts: int = 0
    posts: int = 0
    dead_lettered: int = 0
    virtual_s: float = 0.0
    faults: Counter[str] = field(default_factory=Counter)
    failed: dict[int, list[str]] = field(default_factory=dict)
    freshness_s: list[float] = field(default_factory=list)

    def add(self, result: Result) -> None:
        self.sequences += 1
        self.several_sites += result.sites > 1
        self.removed_sites += result.removed_sites
        self.events += result.events_sent
        self.invocations += result.invocations
        self.steps += result.steps
        self.s3_puts += result.s3_puts
        self.posts += result.posts
        self.dead_lettered += result.dead_lettered
        self.virtual_s += result.virtual_s
        self.faults.update(result.faults)
        self.freshness_s += result.freshness_s
        if result.violations:
            self.failed[result.seed] = result.violations


def _percentiles(totals: Totals) -> str:
    ordered = sorted(totals.freshness_s)
    if not ordered:
        return "-"
    return " / ".join(f"{ordered[min(len(ordered) - 1, int(len(ordered) * q))]:,.1f}" for q in (0.5, 0.9, 0.99))


def report(totals: Totals, first: int, wall_s: float, workers: int, day: date) -> str:
    raised, died, aws = totals.faults["raised"], totals.faults["died"], totals.faults["aws"]
    shapes = sorted(((n, w.removeprefix("shape ")) for w, n in totals.faults.items() if w.startswith("shape ")),
                    reverse=True)  # fmt: skip
    places = sorted(((n, w) for w, n in totals.faults.items() if w.startswith(("before ", "after "))), reverse=True)
    lines = [
        f"Measured by `make soak` on {day:%Y-%m-%d}, seeds {first}..{first + totals.sequences - 1}: "
        f"**{totals.sequences:,} sequences**, "
        f"{len(totals.failed)} with a broken invariant. {wall_s:,.0f} s on {workers} worker(s).",
        "",
        "| | total |",
        "|---|---:|",
        f"| sequences over several sites (2 or 3 added at run time; `Config.for_soak`) | {totals.several_sites:,} |",
        f"| sites removed during a sequence (each checked to leave nothing behind) | {totals.removed_sites:,} |",
        f"| events sent (incl. duplicates and malformed) | {totals.events:,} |",
        f"| handler invocations | {totals.invocations:,} |",
        f"| AWS calls (interleaving points) | {totals.steps:,} |",
        f"| virtual time simulated | {totals.virtual_s / 3600:,.0f} h |",
        f"| faults injected: AWS error shapes (below) | {aws:,} |",
        f"| faults injected: other exception (a call timed out, maybe applied) | {raised:,} |",
        f"| faults injected: invocation died (timeout, crash) | {died:,} |",
        f"| events that failed on every receive, dead-lettered with their reason | {totals.dead_lettered:,} |",
        f"| S3 puts | {totals.s3_puts:,} |",
        f"| IndexNow requests | {totals.posts:,} |",
        f"| freshness, accepted change to surely served by the CDN: p50 / p90 / p99 (s) | {_percentiles(totals)} |",
        "",
        "AWS error shapes:",
        "",
        ", ".join(f"{shape} {count:,}" for count, shape in shapes),
        "",
        "Faults by place (before or after the call; AWS error shapes strike before it):",
        "",
        ", ".join(f"{where} {count:,}" for count, where in places),
    ]
    for seed, violations in sorted(totals.failed.items())[:20]:
        lines += ["", f"- seed {seed}: " + "; ".join(violations[:5])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", type=int, default=10_000)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--write", type=Path, help="replace the soak section of this Markdown file")
    args = parser.parse_args(argv)
    seeds = range(args.first_seed, args.first_seed + args.sequences)
    totals = Totals()
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        for done, result in enumerate(pool.imap_unordered(_run, seeds, chunksize=20), 1):
            totals.add(result)
            if result.violations:
                print(f"seed {result.seed}: {'; '.join(result.violations[:3])}", file=sys.stderr, flush=True)
            if done % 500 == 0 or done == len(seeds):
                print(f"{done:,}/{len(seeds):,} sequences, {len(totals.failed)} failed", file=sys.stderr)
    text = report(totals, args.first_seed, time.perf_counter() - started, args.workers, datetime.now(UTC).date())
    print(text)
    if args.write:
        document = args.write.read_text(encoding="utf-8")
        block = f"{BEGIN}\n{text}\n{END}"
        document = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: block, document, flags=re.S)
        args.write.write_text(document, encoding="utf-8")
    return 1 if totals.failed else 0


if __name__ == "__main__":
    sys.exit(main())
