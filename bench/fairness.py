"""Fairness between the sites of one stack (issue 32): a burst on one site while the others get a steady trickle,
through the real handlers batched as ``template.yaml`` configures them (``bench/traffic.py``), in virtual time.

Each site's freshness (from the CMS's send to the CDN surely serving the change) is reported against the promise
(``FreshnessSeconds``, 60 s). ``--shared-groups`` runs the same traffic with every site's FIFO message groups
collapsed onto the stack's own (``<section>`` instead of ``<host>#<section>``): what isolation prevents.

python -m bench.fairness [--burst-rate 1000] [--burst-seconds 5] [--trickle 1] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from unittest import mock

from bench.markdown import write_block
from bench.meter import Meter
from bench.traffic import Driver, Scenario
from bench.traffic import receive as fifo_receive
from sitemap_updater.service.sites import add_site
from sitemap_updater.sites import SiteConfig
from tests.sim.fakes import Message, SimQueueState
from tests.sim.world import Config, Simulation

BURST = "https://shop.example.de"
OTHERS = ("https://www.example.com", "https://news.example.fr", "https://blog.example.it")  # the first: the stack's
SECTIONS = ("blog", "docs", "shop", "news")
BEGIN, END = "<!-- fairness:begin -->", "<!-- fairness:end -->"


@dataclass(frozen=True)
class Figures:
    """Freshness by site: (events, p50, p99, slowest) in seconds; changes never shown; the run's virtual span."""

    by_site: dict[str, tuple[int, float, float, float]]
    # The longest a site's rebuild request waited, visible, behind messages of its FIFO group (by host).
    group_wait_s: dict[str, float]
    unshown: int
    virtual_s: float
    promise_s: int


def _body(origin: str, i: int) -> str:
    section = SECTIONS[i % len(SECTIONS)]
    return json.dumps({"url": f"{origin}/{section}/p{i}", "type": "upsert", "occurred_at": "2026-11-20T10:00:00Z",
                       "lastmod": "2026-11-20", "version": 1})  # fmt: skip


def traffic(burst_rate: float, burst_s: float, trickle: float, span_s: float) -> tuple[list[str], list[float]]:
    """The burst site's events at ``burst_rate`` a second for ``burst_s`` from 10 s on; each other site's at
    ``trickle`` a second over ``span_s``; in time order."""
    timed = [(10.0 + i / burst_rate, _body(BURST, i)) for i in range(int(burst_rate * burst_s))]
    for origin in OTHERS:
        timed += [(i / trickle, _body(origin, i)) for i in range(int(trickle * span_s))]
    timed.sort(key=lambda t: t[0])
    return [body for _, body in timed], [at for at, _ in timed]


@contextlib.contextmanager
def shared_groups() -> Iterator[None]:
    """Every site's messages in the stack's own FIFO groups (isolation broken on purpose)."""
    with mock.patch("sitemap_updater.wiring.site_ports.site_group", lambda _host, group: group):
        yield


def measure(burst_rate: float = 1000, burst_s: float = 5, trickle: float = 1, span_s: float = 60,
            shared: bool = False, settle_pages: int | None = None) -> Figures:  # fmt: skip
    """One run on a fresh stack with the burst site and two more added at run time beside the stack's own
    (``settle_pages``: REBUILD_SETTLE_PAGES, the changed pages that make a quiet section's rebuild wait for the
    rest of a burst; None: the default)."""
    warnings.simplefilter("ignore")
    sim = Simulation(Config(0, max_urls=1000, max_files_per_index=50_000, notifiers=False))
    if settle_pages is not None:
        settings = sim.pipeline.settings.model_copy(update={"rebuild_settle_pages": settle_pages})
        sim.pipeline = replace(sim.pipeline, settings=settings)
    meter = Meter(sim)
    driver = Driver(sim, meter)
    promise = sim.pipeline.settings.freshness_seconds
    for origin in (BURST, *OTHERS[1:]):
        add_site(sim.pipeline, sim.directory, SiteConfig.parse({"origin": origin, "sections": "*"}))
    bodies, offsets = traffic(burst_rate, burst_s, trickle, span_s)
    waits: dict[str, float] = {}

    def receive(queue: SimQueueState, limit: int, now: float) -> list[Message]:
        """SQS's FIFO receive, noting how long each rebuild request was visible before it was taken."""
        taken = fifo_receive(queue, limit, now)
        for message in taken if queue.name == "RebuildQueue" else []:
            host = str(json.loads(message.body).get("site", OTHERS[0].removeprefix("https://")))
            waits[host] = max(waits.get(host, 0.0), now - message.available_at)
        return taken

    with (contextlib.redirect_stdout(meter.logs), shared_groups() if shared else contextlib.nullcontext(),
          mock.patch("bench.traffic.receive", receive)):  # fmt: skip
        run = driver.run(Scenario("fairness", 1.0, len(bodies)), bodies, offsets)
    by_site: dict[str, tuple[int, float, float, float]] = {}
    for origin in (BURST, *OTHERS):
        found = sorted(s for url, s in run.freshness_by_url.items() if url.startswith(f"{origin}/"))
        if found:
            p50, p99 = found[len(found) // 2], found[min(len(found) - 1, int(0.99 * len(found)))]
            by_site[origin.removeprefix("https://")] = (len(found), p50, p99, found[-1])
    return Figures(by_site, waits, run.unshown, run.virtual_s, promise)


def table(figures: Figures, burst: str) -> list[str]:
    lines = ["| site | traffic | changes | p50 (s) | p99 (s) | slowest (s) | p99 within 60 s |",
             "|---|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for host, (count, p50, p99, slowest) in figures.by_site.items():
        load = burst if host == BURST.removeprefix("https://") else "1 event/s"
        ok = "yes" if p99 <= figures.promise_s else "**no**"
        lines.append(f"| {host} | {load} | {count:,} | {p50:.1f} | {p99:.1f} | {slowest:.1f} | {ok} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--burst-rate", type=float, default=1000)
    parser.add_argument("--burst-seconds", type=float, default=5)
    parser.add_argument("--trickle", type=float, default=1)
    parser.add_argument("--span", type=float, default=60)
    parser.add_argument("--write", type=Path, help="replace the fairness section of this Markdown file")
    args = parser.parse_args(argv)
    burst = f"{args.burst_rate:,.0f} events/s for {args.burst_seconds:g} s"
    text = [
        f"Measured by `python -m bench.fairness` on {time.strftime('%Y-%m-%d', time.gmtime())}: one stack, four "
        f"sites (the stack's own and three added at run time); {burst} on one (from 10 s on), 1 event/s on each "
        f"other over {args.span:g} s; every change a new page; FreshnessSeconds 60 (the default). Virtual time, "
        "the real handlers batched as the template configures them (bench/traffic.py: every visible batch is "
        "taken at once, so Lambda's concurrency is not the limit here). Freshness: from the CMS's send to the CDN "
        "surely serving the change.",
        "",
    ]
    for label, shared in (("isolated (as built: each site's own FIFO groups)", False),
                          ("**shared FIFO groups** (every site's messages in the stack's own groups: what "
                           "isolation prevents)", True)):  # fmt: skip
        started = time.process_time()
        figures = measure(args.burst_rate, args.burst_seconds, args.trickle, args.span, shared)
        cpu = time.process_time() - started
        text += [f"{label}: {figures.virtual_s:,.0f} s virtual, {figures.unshown} changes never shown, "
                 f"{cpu:,.0f} s CPU to simulate.", "", *table(figures, burst), ""]  # fmt: skip
    out = "\n".join(text).rstrip()
    print(out)
    if args.write:
        write_block(args.write, BEGIN, END, out, "Fairness between sites")
    return 0


if __name__ == "__main__":
    sys.exit(main())
