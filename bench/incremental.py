"""Incremental updates on a large site and what they cost: import N pages (the full publish), then run traffic
through the real handlers (``bench/traffic.py``) and price every AWS call they made (``bench/meter.py``,
``bench/cost.py``). ``python -m bench.incremental [PAGES]`` measures, prints the figures as JSON (last line) and
rewrites the "Incremental updates" section of docs/benchmarks.md; ``--doc-only`` rewrites it from the last run.
Both draw its figures (``bench/plots.py``)."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import random
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import plots
from bench.meter import Meter
from bench.pages import SECTIONS, write_pages
from bench.report import price_list, section
from bench.traffic import Driver, Scenario, Traffic, changed_bodies
from bench.usage import Usage

ROOT = Path(__file__).resolve().parents[1]
SWEEP_ON = os.environ.get("BENCH_SWEEP", "1") != "0"  # 0: the five scenarios above alone
NOTIFIERS_ON = os.environ.get("BENCH_NOTIFIERS", "1") != "0"  # 0: IndexNow, the feed and Search Console off
CACHE = ROOT / "bench" / ".cache"
LAST = CACHE / "incremental.json"
DOC = ROOT / "docs" / "benchmarks.md"
HEADING = "## Incremental updates"
ONE = Scenario("one changed page", 1.0, 1, sustained=False)
SPREAD = Scenario("1,000 spread changes at 1,000/s", 1000.0, 1000, sustained=False)
ROLES = ("one", "spread", "cost", "cost", "cost")
COST = (
    Scenario("1 event/s", 1.0, 300),
    Scenario("50 events/s", 50.0, 6000),  # two minutes: a sustained rate, past its first rebuild cycles
    Scenario("burst of 1,000/s, one section", 1000.0, 3000, section=SECTIONS[0], sustained=False),
)

# Cost and freshness against the FreshnessSeconds setting: each rate at each setting, long enough to reach its
# steady state (a sustained rate: at least three holds of 1 event/s, or 400 s at 50 events/s, where a section's
# rebuild takes at most ten merged requests of 100 pages, 1,000 pages, about every 160 s).
FRESHNESS = (30, 60, 120, 300, 900)
SWEEP = (
    ("1 event/s", 1.0, lambda f: max(300, 3 * f), None, True),
    ("50 events/s", 50.0, lambda f: 50 * min(max(120, 2 * f), 400), None, True),
    ("burst of 1,000/s, one section", 1000.0, lambda _f: 3000, SECTIONS[0], False),
)


def _usage(usage: Usage) -> dict[str, Any]:
    return {"invocations": usage.invocations, "billed_s": usage.billed_ms / 1000, "cpu_s": round(usage.cpu_s, 3),
            "wait_s": round(usage.wait_s, 3), "rru": usage.rru, "wru": usage.wru, "gsi_wru": usage.gsi_wru,
            "items_read": usage.items_read, "s3": dict(usage.s3), "bytes_up": usage.bytes_up,
            "sqs": dict(usage.sqs), "http": usage.http, "log_bytes": usage.log_bytes,
            "calls": dict(usage.calls)}  # fmt: skip


def _scenario(traffic: Traffic, role: str) -> dict[str, Any]:
    """What one scenario used, by function, and how often each published file was put."""
    scenario = traffic.scenario
    files = [times for name, times in traffic.puts.items() if name.endswith(".gz")]
    gaps = [b - a for times in files for a, b in itertools.pairwise(times)]
    return {"label": scenario.label, "role": role, "rate": scenario.rate, "events": scenario.events,
            "section": scenario.section, "sustained": scenario.sustained, "virtual_s": round(traffic.virtual_s, 1),
            "functions": {name: _usage(used) for name, used in sorted(traffic.usage.items())},
            "puts": {name: len(times) for name, times in sorted(traffic.puts.items())},
            "put_bytes": traffic.put_bytes, "min_gap_s": round(min(gaps), 2) if gaps else None,
            "freshness": _freshness(traffic)}  # fmt: skip


def _freshness(traffic: Traffic) -> dict[str, Any]:
    """Seconds from the CMS's send to the CDN surely serving the change: p50, p99, the slowest page, and every
    page's (to 0.1 s, sorted: the distribution bench/plots.py draws)."""
    found = traffic.freshness_s  # sorted

    def at(q: float) -> float | None:
        return round(found[min(len(found) - 1, math.ceil(q * len(found)) - 1)], 1) if found else None

    return {"pages": len(found), "unshown": traffic.unshown, "p50": at(0.5), "p99": at(0.99), "max": at(1.0),
            "seconds": [round(s, 1) for s in found]}  # fmt: skip


def run(size: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from sitemap_updater.local.stack import load_template
    from tests.sim.world import TEMPLATE, Config, Simulation

    sim = Simulation(Config(0, max_urls=10_000, max_files_per_index=50_000, notifiers=NOTIFIERS_ON))  # as deployed
    meter = Meter(sim)
    driver = Driver(sim, meter)
    with contextlib.redirect_stdout(meter.logs):  # the handlers' EMF metrics
        data = _measure(sim, meter, driver, size)
    data["metrics"] = sorted(meter.logs.metrics)
    data["bench_cpu_s"] = round(time.process_time(), 1)
    resources = load_template(TEMPLATE)["Resources"].values()
    kinds = [spec["Type"] for spec in resources]
    data["resources"] = {"alarms": sum(_alarm_metrics(spec) for spec in resources),
                         "dashboards": sum(1 for spec in resources if spec["Type"] == "AWS::CloudWatch::Dashboard"
                                           and "Condition" not in spec),  # CreateDashboard: off by default
                         "keys": kinds.count("AWS::KMS::Key")}  # fmt: skip
    return data


def _alarm_metrics(spec: dict[str, Any]) -> int:
    """The metrics an alarm is billed for on the default deployment: 1, or each metric a metric math alarm
    reads. A conditional alarm (the webhook endpoint's two) or metric (``!If``) is left out: every condition an
    alarm or a metric of one names is an optional feature, off by default."""
    if spec["Type"] != "AWS::CloudWatch::Alarm" or "Condition" in spec:
        return 0
    metrics = spec["Properties"].get("Metrics")
    return 1 if metrics is None else sum(1 for m in metrics if isinstance(m, dict) and "MetricStat" in m)


def _measure(sim: Any, meter: Meter, driver: Driver, size: int) -> dict[str, Any]:
    from sitemap_updater.service.bulk_import import import_events

    lines = write_pages(CACHE / f"pages-{size}.jsonl", size).read_text(encoding="utf-8").splitlines()
    meter.usage = {}
    done, _ = meter.invoke("import", lambda: import_events(lines, sim.pipeline), 1.0)
    full = meter.usage["import"]
    files = sum(1 for name in sim.s3.objects if name.endswith(".xml.gz"))
    sitemap_bytes = sum(len(o.data) for name, o in sim.s3.objects.items() if name.startswith("sitemap"))
    rng = random.Random(2)
    results = []
    for number, scenario in enumerate((ONE, SPREAD, *COST), start=2):
        pool = [i for i in range(size) if SECTIONS[i % len(SECTIONS)] == scenario.section] if scenario.section else None
        picks = rng.sample(pool or range(size), min(scenario.events, len(pool or range(size))))
        scenario = Scenario(scenario.label, scenario.rate, len(picks), scenario.section, scenario.sustained)
        traffic = driver.run(scenario, changed_bodies(lines, picks, number))
        print(f"{scenario.label}: {len(picks)} events, {traffic.virtual_s:.1f} s virtual", file=sys.stderr)
        results.append(traffic)
    sweep: list[dict[str, Any]] = []
    deployed = sim.pipeline.settings.freshness_seconds
    for freshness in FRESHNESS if SWEEP_ON else ():
        driver.freshness(freshness)
        for label, rate, count, within, sustained in SWEEP:
            within_pool = [i for i in range(size) if SECTIONS[i % len(SECTIONS)] == within] if within else None
            picks = rng.sample(within_pool or range(size), min(count(freshness), len(within_pool or range(size))))
            scenario = Scenario(label, rate, len(picks), within, sustained)
            bodies = changed_bodies(lines, picks, 10 + len(sweep), f"2026-10-{1 + len(sweep):02d}")
            traffic = driver.run(scenario, bodies)
            print(f"{label} at {freshness} s: {len(picks)} events, {traffic.virtual_s:.1f} s", file=sys.stderr)
            sweep.append(_scenario(traffic, "sweep") | {"freshness_setting_s": freshness})
    driver.freshness(deployed)
    hourly = driver.hourly()
    return {"date": f"{datetime.now(UTC).date():%Y-%m-%d}", "pages": done.pages, "files": files,
            "import_sitemap_bytes": sitemap_bytes,
            "import": _usage(full), "hourly": {n: _usage(u) for n, u in hourly.items()}, "memory": driver.memory(),
            "polled": driver.polled(),
            "scenarios": [_scenario(t, role) for t, role in zip(results, ROLES, strict=True)],
            "sweep": sweep}  # fmt: skip


def main(argv: list[str]) -> int:
    if argv[:1] != ["--doc-only"]:
        data = run(int(argv[0]) if argv else 1_000_000)
        data["price_list"] = price_list(data)  # the sweep priced (bench/report.py): what a plot of it reads
        LAST.parent.mkdir(parents=True, exist_ok=True)
        LAST.write_text(json.dumps(data, indent=1), encoding="utf-8")
    data = json.loads(LAST.read_text(encoding="utf-8"))
    if DOC.exists():
        text = DOC.read_text(encoding="utf-8")
        start = text.index(HEADING)
        end = text.find("\n## ", start + len(HEADING))
        rest = text[end + 1 :] if end >= 0 else ""
        DOC.write_text(text[:start] + "\n".join(section(data)) + "\n" + rest, encoding="utf-8")
    plots.incremental(data)
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
