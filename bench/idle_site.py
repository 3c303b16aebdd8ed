"""What an idle site added at run time costs (issue 32): the hourly functions (sweep, upkeep, reconciliation) and
the notifier's one-minute wake-up each run for every active site, so an idle site of 1,000 pages is charged a
month of them: its share of those invocations (their duration and calls; the invocations themselves are the
stack's, shared by every site), on the simulation's metered AWS (bench/meter.py), beside its storage.

python -m bench.idle_site [--pages 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings

from bench.cost import HOURS_PER_MONTH, LAMBDA_REQUEST, cpu_scale, dollars
from bench.meter import Meter
from bench.traffic import Driver, Scenario
from sitemap_updater.service.batches import notify_batch
from sitemap_updater.service.reconcile import reconcile
from sitemap_updater.service.sites import add_site
from sitemap_updater.service.sweep import sweep, upkeep
from sitemap_updater.sites import SiteConfig
from sitemap_updater.wiring.pipeline import current_notifiers
from sitemap_updater.wiring.sites import site_pipeline
from tests.sim.world import Config, Simulation

ORIGIN = "https://shop.example.de"
WAKE_UP = json.dumps({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})


def measure(pages: int) -> dict[str, float]:
    """A month of one idle site's part of the hourly functions and the wake-ups, in dollars by line."""
    warnings.simplefilter("ignore")
    sim = Simulation(Config(0, max_urls=1000, max_files_per_index=50_000))
    meter = Meter(sim)
    driver = Driver(sim, meter)
    key = "shop-example-de-key" if sim.pipeline.settings.indexnow_key else ""
    site = add_site(sim.pipeline, sim.directory, SiteConfig.parse({"origin": ORIGIN, "indexnow_key": key}))
    bodies = [json.dumps({"url": f"{ORIGIN}/p/{i}", "type": "upsert", "occurred_at": "2026-11-20T10:00:00Z",
                          "lastmod": "2026-11-20", "version": 1}) for i in range(pages)]  # fmt: skip
    pipeline = site_pipeline(sim.pipeline, site)
    memory = driver.memory()
    with contextlib.redirect_stdout(meter.logs):
        driver.run(Scenario("its pages", 100.0, pages), bodies)
        meter.usage = {}
        sim.clock.now += 7200.0  # idle: past every hold and grace
        jobs = (("SweepFunction", lambda: sweep(pipeline, None)), ("UpkeepFunction", lambda: upkeep(pipeline)),
                ("ReconcileFunction", lambda: reconcile(pipeline)))  # fmt: skip
        for name, job in jobs:
            meter.invoke(name, job, cpu_scale(memory.get(name, 512)))
        seconds = {name: u.billed_ms / 1000 for name, u in meter.usage.items()}
        hourly = dollars(meter.usage, memory, {})
        hourly["total"] -= sum(u.invocations for u in meter.usage.values()) * LAMBDA_REQUEST  # the stack's calls
        meter.usage = {}
        record = {"messageId": "w", "body": WAKE_UP, "attributes": {}}
        meter.invoke("NotifyFunction", lambda: notify_batch([record], pipeline, current_notifiers()),
                     cpu_scale(memory.get("NotifyFunction", 512)))  # fmt: skip
        wake = dollars(meter.usage, memory, {})
        seconds |= {name: u.billed_ms / 1000 for name, u in meter.usage.items()}
        wake["total"] -= sum(u.invocations for u in meter.usage.values()) * LAMBDA_REQUEST
    month = {"hourly functions": hourly["total"] * HOURS_PER_MONTH, "wake-ups": wake["total"] * 60 * HOURS_PER_MONTH}
    month["DynamoDB reads"] = (hourly["DynamoDB"] + wake["DynamoDB"] * 60) * HOURS_PER_MONTH
    month["S3 requests"] = (hourly["S3"] + wake["S3"] * 60) * HOURS_PER_MONTH
    month["total"] = month["hourly functions"] + month["wake-ups"]
    return month | {f"{name} s": value for name, value in seconds.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    args = parser.parse_args(argv)
    month = measure(args.pages)
    shown = [f"{line} {v:.3f}" if line.endswith(" s") else f"{line} ${v:.4f}" for line, v in month.items()]
    print(f"an idle site of {args.pages:,} pages, a month (730 h): " + ", ".join(shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
