"""DynamoDB's per-partition and per-table limits under the pipeline's heaviest scenarios: import N pages, then run a
one-section burst of 1,000 events a second and 50 events a second into one section through the real handlers
(``bench/traffic.py``), every DynamoDB call taken from its partition keys' and the table's limits second by second
(``tests/sim/throughput.py``: a new on-demand table, 1,000 write and 3,000 read units a second per key, botocore's
retries). Once with ``SectionPartitions`` 1 (every entry of a section under one key) and once with 16.
``python -m bench.partitions [PAGES]`` measures, prints JSON (last line) and rewrites the "Partitions" section of
docs/benchmarks.md; ``--doc-only`` rewrites it from the last run."""

from __future__ import annotations

import contextlib
import json
import random
import sys
import warnings
from datetime import UTC, datetime
from typing import Any

from bench import sections
from bench.meter import Meter
from bench.pages import SECTIONS, write_pages
from bench.tools import ROOT
from bench.traffic import Driver, Scenario, changed_bodies
from bench.usage import Usage
from tests.sim.throughput import PARTITION_UNITS, TABLE_INITIAL_UNITS, Throughput

CACHE = ROOT / "bench" / ".cache"
LAST = CACHE / "partitions.json"
SPREADS = (1, 16)


def burst_one_section() -> Scenario:
    """The issue's burst: a republish of 3,000 pages of one section at 1,000 events a second."""
    return Scenario("burst of 1,000/s, one section", 1000.0, 3000, section=SECTIONS[0], sustained=False)


def fifty_one_section() -> Scenario:
    """50 events a second for two minutes, every one in the same section."""
    return Scenario("50 events/s, one section", 50.0, 6000, section=SECTIONS[0])


def _scenario(throughput: Throughput, traffic: Any, events: int, meter: Meter) -> dict[str, Any]:
    usage = Usage()
    for used in traffic.usage.values():
        usage.add(used)
    busiest = {kind: throughput.busiest(kind, 1) for kind in ("write", "read")}
    table = {kind: max((u for (_s, k), u in throughput.table.items() if k == kind), default=0.0)
             for kind in ("write", "read")}  # fmt: skip
    fresh = traffic.freshness_s
    fullest = {}  # what filled the table's busiest second: the largest (key prefix, function) and its units
    for kind in ("write", "read"):
        second = max((s for (s, k) in throughput.table if k == kind), key=lambda s: throughput.table[(s, kind)])
        (prefix, function), units = max(meter.sources[(second, kind)].items(), key=lambda item: item[1])
        fullest[kind] = [prefix, function, units]
    return {
        "table_fullest": fullest,
        "label": traffic.scenario.label, "rate": traffic.scenario.rate, "events": events,
        "virtual_s": round(traffic.virtual_s, 1), "wru": usage.wru, "rru": usage.rru,
        "throttled": dict(throughput.throttled), "failed": throughput.failed,
        "busiest_key": {k: (v[0] if v else ["", 0.0]) for k, v in busiest.items()}, "table_peak": table,
        "freshness_p99_s": round(fresh[min(len(fresh) - 1, int(len(fresh) * 0.99))], 1) if fresh else None,
    }  # fmt: skip


def run(size: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from sitemap_updater.service.bulk_import import import_events
    from tests.sim.world import Config, Simulation

    lines = write_pages(CACHE / f"pages-{size}.jsonl", size).read_text(encoding="utf-8").splitlines()
    results: dict[str, Any] = {"date": f"{datetime.now(UTC).date():%Y-%m-%d}", "pages": size, "runs": {}}
    for spread in SPREADS:
        sim = Simulation(Config(0, max_urls=10_000, max_files_per_index=50_000, section_partitions=spread))
        meter = Meter(sim)  # the import is not paced in virtual time here: its rate is the bootstrap's section
        driver = Driver(sim, meter)
        found = []
        pipeline = sim.pipeline
        with contextlib.redirect_stdout(meter.logs):
            meter.invoke("import", lambda: import_events(lines, pipeline), 1.0)  # noqa: B023 (called at once)
            rng = random.Random(7)
            pool = [i for i in range(size) if SECTIONS[i % len(SECTIONS)] == SECTIONS[0]]
            for number, scenario in enumerate((burst_one_section(), fifty_one_section()), start=2):
                picks = rng.sample(pool, min(scenario.events, len(pool)))
                meter.throughput = throughput = Throughput()  # a new on-demand table: the strictest case
                traffic = driver.run(scenario, changed_bodies(lines, picks, number))
                found.append(_scenario(throughput, traffic, len(picks), meter))
                meter.sources.clear()
                print(f"partitions {spread}, {scenario.label}: {found[-1]['throttled']}", file=sys.stderr)
        results["runs"][str(spread)] = found
        del sim, meter, driver
    return results


def headroom(row: dict[str, Any]) -> dict[str, float]:
    """Events a second the scenario's shape could take before its busiest key, or the new table, throttles:
    its rate scaled by each limit over the busiest second's units."""
    rate, out = float(row["rate"]), {}
    for kind in ("write", "read"):
        key_units = float(row["busiest_key"][kind][1])
        table_units = float(row["table_peak"][kind])
        out[f"key_{kind}"] = rate * PARTITION_UNITS[kind] / key_units if key_units else float("inf")
        out[f"table_{kind}"] = rate * TABLE_INITIAL_UNITS[kind] / table_units if table_units else float("inf")
    return out


def section(data: dict[str, Any]) -> list[str]:
    lines = [
        "## Partitions",
        "",
        f"Measured by `python -m bench.partitions` on {data['date']}: {data['pages']:,} pages imported, then each "
        "scenario through the real handlers with every DynamoDB call taken from DynamoDB's documented limits second "
        "by second (`tests/sim/throughput.py`: 1,000 write and 3,000 read units a second per partition key; a new "
        "on-demand table's 4,000 and 12,000, doubling at most every 30 minutes; a throttled attempt waits "
        "botocore's backoff, four attempts in all; AWS's pages for each limit are listed under Scale). "
        "`SectionPartitions` 1 keeps every entry of a section under one "
        "key (`sec#<section>`); 16 spreads them by key range.",
        "",
        "| SectionPartitions | scenario | events | throttled attempts | failed after retries | busiest key "
        "(write units in its busiest second) | busiest key for reads: units in its busiest second | "
        "table's busiest second (write, read) | p99 freshness (s) | events/s before one key throttles (writes, "
        "reads) | events/s before a new table throttles (writes, reads) |",
        "|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for spread, rows in data["runs"].items():
        for row in rows:
            room = headroom(row)
            key_w, units_w = row["busiest_key"]["write"]
            _key_r, units_r = row["busiest_key"]["read"]
            throttled = sum(row["throttled"].values())
            lines.append(
                f"| {spread} | {row['label']} | {row['events']:,} | {throttled:,} | {row['failed']:,} | "
                f"`{key_w}` ({units_w:,.0f}) | {units_r:,.0f} | {row['table_peak']['write']:,.0f}, "
                f"{row['table_peak']['read']:,.0f} | {row['freshness_p99_s']} | "
                f"{room['key_write']:,.0f}, {room['key_read']:,.0f} | "
                f"{room['table_write']:,.0f}, {room['table_read']:,.0f} |"
            )
    lines += [
        "",
        "The headroom columns scale each scenario's rate by a limit over its busiest second (the same shape of "
        "traffic, faster): a key's 1,000 write and 3,000 read units, a new table's 4,000 and 12,000. A change "
        "writes about one unit under its section's key (its entry), so with one key a section takes about "
        "1,000 changes a second. The other load on the key is its rebuilds' reads: a rebuild reads its changed "
        "pages' entries at once (BatchGetItem, a unit each), at most the 1,000 pages of its merged requests, and a "
        "section has one rebuild at a time, so the key's reads stay near 1,000 units in a second at either rate "
        "(the files' snapshots come from S3); the reads' headroom columns, which scale that linearly, understate "
        "it. With 16 keys each holds a sixteenth of the section, and the table's own limit (which grows with use, "
        "or `ManifestWarmWriteUnits`) comes first. The table's busiest second is notify's batch of `sent#` items, "
        "about 1,000 units at either rate (below), so the table's headroom columns, which scale it linearly, "
        "understate it too; the Scale section projects the table from the write units per event. What filled the "
        "table's busiest second of writes:",
        "",
    ]
    for spread, rows in data["runs"].items():
        for row in rows:
            if "table_fullest" not in row:
                continue
            wp, wf, wu = row["table_fullest"]["write"]
            lines.append(f"- {spread}, {row['label']}: `{wp}#` items written by {wf}, {wu:,.0f} write units.")
    lines += [
        "",
        f"Measured at {data['pages']:,} pages. What a change writes and a rebuild reads under a section's keys is "
        "the changed pages' entries, whatever the site's size: the load on a key follows the rate of changes into "
        "its section, not the pages in it (the Scale section projects it).",
    ]
    return lines


def main(argv: list[str]) -> int:
    if argv[:1] != ["--doc-only"]:
        data = run(int(argv[0]) if argv else 1_000_000)
        LAST.parent.mkdir(parents=True, exist_ok=True)
        LAST.write_text(json.dumps(data, indent=1), encoding="utf-8")
    data = json.loads(LAST.read_text(encoding="utf-8"))
    sections.write("partitions", section(data))
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
