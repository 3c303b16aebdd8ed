"""Sites of 1M, 10M and 100M pages at 1 and 50 events a second, projected from what the other benchmarks measured
and cached in bench/.cache (nothing here is measured at those sizes): cost per million events, freshness, the
headroom to DynamoDB's per-key and per-table limits, and the first limit each would meet.

Inputs: ``incremental.json`` (``python -m bench.incremental``: the sustained rates at the deployed freshness
setting, every AWS call priced), ``partitions.json`` (``python -m bench.partitions``: 50 events a second into one
section, second by second against DynamoDB's limits), ``shard_rebuild.json`` (one file's rebuild, 10,000 and 50,000
URLs; measured here when absent) and the template (memory, timeouts). ``python -m bench.scale`` measures what is
missing and rewrites the "Scale" section of docs/benchmarks.md; ``--doc-only`` rewrites it from the caches alone.

The model, each step printed in the section:

- files grow with the site at the measured fill: ``F = F0 * P / N``;
- rewrites per event follow from coalescing: over a window ``h`` each of ``S`` sections takes ``k = r * h / S``
  events spread over ``m = F / S`` files and rewrites the ``m * (1 - (1 - 1/m) ** k)`` it touched; ``h`` is solved
  so that the formula gives the rewrites per event measured at ``F0``;
- the rebuilds' bill scales with rewrites per event, the index's with ``F`` (it reads every file record), the
  crawlers' fetches with the files rewritten; ingest, notify and the hourly jobs are per event or per hour;
- a rebuild's run is its files times the measured seconds per file; p99 freshness grows by the run's growth;
- DynamoDB's load per key and per table follows the rate only: a rebuild reads the changed pages' entries and the
  files' snapshots from S3, not the section's entries (``bench/shard_rebuild.py`` checks: one entry read)."""

from __future__ import annotations

import functools
import json
import math
import sys
from typing import Any

from bench import cost, report, sections, shard_rebuild
from bench.cost import CRAWLERS, CRAWLS_PER_HOUR
from bench.pages import SECTIONS
from bench.tools import ROOT
from sitemap_updater.core.sharding import DEFAULT_URLS_PER_FILE
from tests.sim.throughput import PARTITION_UNITS, TABLE_INITIAL_UNITS

CACHE = ROOT / "bench" / ".cache"
SIZES = (1_000_000, 10_000_000, 100_000_000)
RATES = {1.0: "1 event/s", 50.0: "50 events/s"}
SHARD, INDEX = "RebuildShardFunction", "RebuildIndexFunction"
# AWS's documented limits (docs/benchmarks.md, "Scale", cites each); the defaults of an account and a stack.
LAMBDA_CONCURRENCY = 1_000  # concurrent executions a Region, by default
S3_PUT_PER_PREFIX, S3_GET_PER_PREFIX = 3_500, 5_500  # requests a second a partitioned prefix takes
FIFO_TPS = 300  # a FIFO queue's calls a second per API action (SendMessage, ReceiveMessage, DeleteMessage)
FILES_PER_INDEX = 50_000  # the sitemap protocol's: past it the stack writes another index file


def load() -> dict[str, Any]:
    """The cached measurements this projection reads."""
    found = {}
    for name in ("incremental", "partitions", "shard_rebuild"):
        path = CACHE / f"{name}.json"
        found[name] = json.loads(path.read_text(encoding="utf-8"))
    return found


@functools.cache
def template() -> dict[str, Any]:
    """The rebuild function's memory and timeout, as deployed."""
    from sitemap_updater.local.stack import load_template
    from tests.sim.world import TEMPLATE

    spec = load_template(TEMPLATE)
    props = spec["Resources"][SHARD]["Properties"]
    return {"memory_mb": int(props["MemorySize"]), "timeout_s": int(props["Timeout"]),
            "freshness_s": int(spec["Parameters"]["FreshnessSeconds"]["Default"])}  # fmt: skip


def files_for(pages: int, sections_: int, max_urls: int = DEFAULT_URLS_PER_FILE) -> int:
    """The files of a site of ``pages`` spread evenly over ``sections_``: a section's key range is halved until
    each part holds at most ``max_urls`` (``core/sharding.py``), and page keys are hashes, so each section has the
    power of two of files just above its pages over ``max_urls``."""
    per_section = pages / sections_
    return (
        sections_ * (1 << max(0, math.ceil(math.log2(per_section / max_urls)))) if per_section > max_urls else sections_
    )


def touched(files: float, events: float) -> float:
    """Distinct files of ``files`` that ``events`` uniformly spread changes touch (the expected count)."""
    if files <= 1:
        return min(1.0, events)
    return files * (1.0 - math.pow(1.0 - 1.0 / files, events))


def rewrites_per_event(files: float, rate: float, window_s: float, sections_: int) -> float:
    """Files rewritten per event when each of ``sections_`` sections is rebuilt once per ``window_s``."""
    k = rate * window_s / sections_
    return touched(files / sections_, k) / k if k > 0 else 1.0


def solve_window(files: float, rate: float, measured: float, sections_: int) -> float:
    """The coalescing window that gives the measured rewrites per event (bisection: fewer with a longer one)."""
    low, high = 1e-3, 86_400.0
    if measured >= rewrites_per_event(files, rate, low, sections_):
        return low
    for _ in range(200):
        mid = math.sqrt(low * high)
        if rewrites_per_event(files, rate, mid, sections_) > measured:
            low = mid
        else:
            high = mid
    return math.sqrt(low * high)


def measured_rate(data: dict[str, Any], rate: float) -> dict[str, Any]:
    """What the incremental benchmark measured for one sustained rate at the deployed setting."""
    scenario = next(s for s in data["scenarios"] if s["label"] == RATES[rate])
    events = scenario["events"]
    files_put = sum(n for name, n in scenario["puts"].items() if name.startswith("sitemap-") and name.endswith(".gz"))
    other_puts = sum(scenario["puts"].values()) - files_put
    shard = scenario["functions"].get(SHARD, {})
    bill = report.per_million(data, scenario)
    shard_bill = report.per_million(data, scenario, SHARD)["total"] if SHARD in scenario["functions"] else 0.0
    index_lines = report.per_million(data, scenario, INDEX) if INDEX in scenario["functions"] else {}
    index_bill = index_lines.get("total", 0.0)
    index = scenario["functions"].get(INDEX)
    index_grows = 0.0  # what grows with the files: its reads of every file record and its CPU
    if index:
        gb = data["memory"].get(INDEX, 512) / 1024
        index_grows = (index["rru"] * cost.DDB_RRU + index["cpu_s"] * cost.cpu_scale(int(gb * 1024)) * gb
                       * cost.LAMBDA_GB_S) * 1e6 / events  # fmt: skip
    puts = sum(scenario["puts"].values())
    per_fetch = scenario["put_bytes"] / puts if puts else 0.0
    totals = report.total(scenario)
    return {
        "events": events, "rate": rate, "files": data["files"], "pages": data["pages"],
        "rewrites": files_put / events, "other_puts": other_puts / events, "bytes_per_fetch": per_fetch,
        "total": bill["total"], "shard": shard_bill, "index": index_bill, "index_grows": index_grows,
        "rebuild_s": float(shard.get("billed_s", 0.0)), "rebuilds": int(shard.get("invocations", 0)),
        "files_put": files_put,
        "fixed": report.fixed_part(data, scenario)["total"],
        "billed_s": sum(float(f["billed_s"]) for f in scenario["functions"].values()) / events,
        "shard_billed_s": float(shard.get("billed_s", 0.0)) / events,
        "index_billed_s": float(scenario["functions"].get(INDEX, {}).get("billed_s", 0.0)) / events,
        "s3_put": totals["s3"].get("PUT", 0) / events, "s3_get": totals["s3"].get("GET", 0) / events,
        "shard_put": shard.get("s3", {}).get("PUT", 0) / events,
        "shard_get": shard.get("s3", {}).get("GET", 0) / events,
        "fifo": totals["sqs"].get("fifo", 0) / events,
        "wru": (totals["wru"] + totals["gsi_wru"]) / events,
        "p99": scenario["freshness"]["p99"],
    }  # fmt: skip


def rebuild_seconds(data: dict[str, Any]) -> tuple[float, float]:
    """A rebuild's billed seconds as a fixed part per invocation and a part per file rewritten, solved from the two
    sustained rates (which rewrite different numbers of files per invocation); when that has no positive solution,
    everything per file (an upper bound for rebuilds of many files)."""
    (i1, f1, s1), (i2, f2, s2) = ((m["rebuilds"], m["files_put"], m["rebuild_s"]) for m in
                                  (measured_rate(data, rate) for rate in RATES))  # fmt: skip
    det = i1 * f2 - i2 * f1
    if det:
        fixed_s, file_s = (s1 * f2 - s2 * f1) / det, (i1 * s2 - i2 * s1) / det
        if fixed_s >= 0 and file_s > 0:
            return fixed_s, file_s
    return 0.0, (s1 + s2) / max(1, f1 + f2)


def crawl_usd(m: dict[str, Any], files: float, rewrites: float) -> float:
    """The crawlers' fetches per million events (``bench/report.py``'s rule): each rewritten file and the index
    fetched by each crawler, at most ``CRAWLS_PER_HOUR`` times an hour per file."""
    from bench.cost import CF_GB, CF_REQUEST, S3_PRICE

    puts = rewrites + float(m["other_puts"])
    fetches = min(CRAWLERS * puts, CRAWLERS * (files + 1) * CRAWLS_PER_HOUR / (float(m["rate"]) * 3600))
    return 1e6 * fetches * (CF_REQUEST + float(m["bytes_per_fetch"]) / 1e9 * CF_GB + S3_PRICE["GET"])


def project(inputs: dict[str, Any], pages: int, rate: float, deployed: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row: a site of ``pages`` at ``rate`` events a second, at the measured freshness setting; ``deployed``:
    the rebuild's memory and timeout and the freshness setting (the template's when not given)."""
    m = measured_rate(inputs["incremental"], rate)
    s = len(SECTIONS)
    window = solve_window(m["files"], rate, m["rewrites"], s)
    files = float(files_for(pages, s))
    rewrites = rewrites_per_event(files, rate, window, s)
    grow = rewrites / m["rewrites"] if m["rewrites"] else 1.0
    index_grow = files / m["files"]
    crawl0 = crawl_usd(m, m["files"], m["rewrites"])
    usd = (m["total"] - m["shard"] - m["index_grows"] - crawl0) + m["shard"] * grow + m["index_grows"] * index_grow
    usd += crawl_usd(m, files, rewrites)
    per_rebuild0 = touched(m["files"] / s, rate * window / s)
    per_rebuild = touched(files / s, rate * window / s)
    fixed_s, file_s = rebuild_seconds(inputs["incremental"])
    run0, run = fixed_s + per_rebuild0 * file_s, fixed_s + per_rebuild * file_s
    p99 = (m["p99"] or 0.0) + max(0.0, run - run0)
    ddb = dynamo(_busiest(inputs["partitions"]), m["wru"], rate)
    deployed = deployed or template()
    concurrency = rate * (m["billed_s"] + m["shard_billed_s"] * (grow - 1) + m["index_billed_s"] * (index_grow - 1))
    puts = rate * (m["s3_put"] + m["shard_put"] * (grow - 1))
    gets = rate * (m["s3_get"] + m["shard_get"] * (grow - 1))
    own_mb = _peak_mb(inputs, 10_000)
    limits = {  # the share of each limit the row uses: the largest is the first it would meet
        "a section's key, writes (one key)": ddb["key_write"] / PARTITION_UNITS["write"],
        "a section's key, reads (one key)": ddb["key_read"] / PARTITION_UNITS["read"],
        "a new table, writes": ddb["table_write"] / TABLE_INITIAL_UNITS["write"],
        "Lambda concurrency": concurrency / LAMBDA_CONCURRENCY,
        "S3 PUTs a prefix": puts / S3_PUT_PER_PREFIX,
        "S3 GETs a prefix": gets / S3_GET_PER_PREFIX,
        "FIFO calls a queue": rate * m["fifo"] / (3 * FIFO_TPS),
        "files per index": files / FILES_PER_INDEX,
        "p99 freshness within the setting": p99 / deployed["freshness_s"],
        "a rebuild's run within its timeout": run / deployed["timeout_s"],
        "the rebuild's memory (10,000-URL files)": own_mb / deployed["memory_mb"],
    }  # fmt: skip
    first = max(limits, key=lambda k: limits[k])
    return {
        "pages": pages, "rate": rate, "files": files, "window_s": window, "rewrites": rewrites,
        "measured_rewrites": m["rewrites"], "usd": usd, "measured_usd": m["total"], "p99": p99,
        "measured_p99": m["p99"], "run_s": run, "measured_run_s": run0, "files_per_rebuild": per_rebuild,
        "headroom_key_write": ddb["key_write_headroom"], "headroom_table_write": ddb["table_write_headroom"],
        "dynamo": ddb,
        "limits": limits, "first": first, "concurrency": concurrency,
    }  # fmt: skip


def _busiest(partitions: dict[str, Any]) -> dict[str, float]:
    """DynamoDB's load from the partitions benchmark (one section on one key, a new table): the busiest second's
    units on the section's key and on the table at 50 and at 1,000 events a second."""
    runs = partitions["runs"]["1"]
    fifty = next(r for r in runs if r["label"].startswith("50 events/s"))
    burst = next(r for r in runs if r["label"].startswith("burst"))
    found = {"rate_50": float(fifty["rate"]), "rate_burst": float(burst["rate"])}
    for name, row in (("50", fifty), ("burst", burst)):
        found[f"key_write_{name}"] = float(row["busiest_key"]["write"][1])
        found[f"key_read_{name}"] = float(row["busiest_key"]["read"][1])
        found[f"table_write_{name}"] = float(row["table_peak"]["write"])
    return found


def dynamo(busy: dict[str, float], wru_per_event: float, rate: float) -> dict[str, float]:
    """A section's key and the table at ``rate`` events a second, every event in one section (the default site:
    every page in ``root``), as units in the busiest second:

    - the key's writes: an event writes its entry under the key; per event a second, the larger of the two
      measured (at 50 events/s ingest's windows bunch events into fewer seconds), times the rate;
    - the key's reads: a rebuild reads its changed pages' entries at once, at most its merged requests' 1,000
      pages, and a section has one rebuild at a time: the busiest second measured at either rate, whatever the rate;
    - the table's writes: every write unit of an event (ingest, rebuild, notify: the incremental benchmark's
      average) times the rate, or the busiest second measured at 50 events/s (notify's batches), the larger."""
    key_w = max(busy["key_write_50"] / busy["rate_50"], busy["key_write_burst"] / busy["rate_burst"])
    return {
        "key_write_per_event": key_w,
        "key_write": rate * key_w,
        "key_read": max(busy["key_read_50"], busy["key_read_burst"]),
        "table_write": max(rate * wru_per_event, busy["table_write_50"]),
        "key_write_headroom": PARTITION_UNITS["write"] / key_w,
        "table_write_headroom": TABLE_INITIAL_UNITS["write"] / wru_per_event if wru_per_event else math.inf,
    }  # fmt: skip


def _pct(share: float) -> str:
    return f"{share * 100:,.1f}%" if share < 10 else f"{share:,.0f}x"


def section(inputs: dict[str, Any]) -> list[str]:
    inc, part = inputs["incremental"], inputs["partitions"]
    deployed = template()
    rows = [project(inputs, pages, rate) for rate in RATES for pages in SIZES]
    busy = _busiest(part)
    s = len(SECTIONS)
    lines = [
        "## Scale",
        "",
        f"Projected by `python -m bench.scale` (`--doc-only` recomputes it from `bench/.cache`) from three "
        f"measurements, none made at these sizes: the incremental benchmark on {inc['pages']:,} pages in "
        f"{inc['files']:,} files (measured on {inc['date']}, each sustained rate at the deployed "
        f"{deployed['freshness_s']} s freshness setting), the partitions benchmark on {part['pages']:,} pages "
        f"(measured on {part['date']}, 50 events a second into one section on one key, second by second "
        "against DynamoDB's limits) and one file's rebuild "
        "(`bench/shard_rebuild.py`). Every figure below is an extrapolation from those, by the steps shown.",
        "",
        "| pages | events/s | files | rewrites per event | cost per 1M events (USD) | p99 freshness (s) | "
        "a rebuild's run (s) | a section's key: write units in the busiest second (share of 1,000) | its read "
        "units (share of 3,000) | the table's write units (share of a new table's 4,000) | first limit it would "
        "meet (share of it used) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        d = r["dynamo"]
        lines.append(
            f"| {r['pages']:,} | {r['rate']:g} | {r['files']:,.0f} | {r['rewrites']:.3f} | {r['usd']:,.2f} | "
            f"{r['p99']:,.1f} | {r['run_s']:,.1f} | {d['key_write']:,.0f} ({_pct(d['key_write'] / 1000)}) | "
            f"{d['key_read']:,.0f} ({_pct(d['key_read'] / 3000)}) | {d['table_write']:,.0f} "
            f"({_pct(d['table_write'] / 4000)}) | {r['first']} ({_pct(r['limits'][r['first']])}) |"
        )
    lines += ["", "Every limit, as the share of it each row uses:", ""]
    names = list(rows[0]["limits"])
    lines += ["| pages | events/s | " + " | ".join(names) + " |", "|---:|---:|" + "---:|" * len(names)]
    for r in rows:
        lines.append(f"| {r['pages']:,} | {r['rate']:g} | " + " | ".join(_pct(r["limits"][n]) for n in names) + " |")
    example = rows[-1]
    fixed_s, file_s = rebuild_seconds(inc)
    m = measured_rate(inc, example["rate"])
    k = example["rate"] * example["window_s"] / s
    lines += [
        "",
        "### How each figure is computed",
        "",
        f"The measured inputs, per event at each rate ({inc['pages']:,} pages, {inc['files']:,} files, {s} sections):",
        "",
        "| events/s | rewrites per event | USD per 1M: all | of which the rebuilds | the index (its reads and "
        "CPU) | the hourly jobs and idle polls | p99 freshness (s) | rebuilds, files rewritten, billed seconds | "
        "billed Lambda seconds per event | S3 PUTs, GETs per event | FIFO requests per event |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rate in RATES:
        mr = measured_rate(inc, rate)
        lines.append(
            f"| {rate:g} | {mr['rewrites']:.3f} | {mr['total']:.2f} | {mr['shard']:.2f} | "
            f"{mr['index']:.2f} ({mr['index_grows']:.4f}) | "
            f"{mr['fixed']:.2f} | {mr['p99']} | {mr['rebuilds']}, {mr['files_put']}, {mr['rebuild_s']:.1f} | "
            f"{mr['billed_s']:.3f} | "
            f"{mr['s3_put']:.2f}, {mr['s3_get']:.2f} | {mr['fifo']:.2f} |"
        )
    lines += [
        "",
        f"Worked through for {example['pages']:,} pages at {example['rate']:g} events a second "
        "(`tests/unit/test_scale.py` checks this row against its own arithmetic):",
        "",
        f"1. **Files**: a section's key range is halved until each part holds at most "
        f"{DEFAULT_URLS_PER_FILE:,} URLs (the default) and keys are hashes, so each of the {s} sections has the "
        f"power of two of files just above its pages over {DEFAULT_URLS_PER_FILE:,}: F = {s} x "
        f"{example['files'] / s:,.0f} = {example['files']:,.0f} "
        f"({math.ceil(example['files'] / FILES_PER_INDEX)} index file). The rule gives "
        f"{files_for(inc['pages'], s):,} files for the {inc['pages']:,} pages measured, which had {inc['files']:,}.",
        f"2. **Rewrites per event.** Each of the {s} sections is rebuilt about once per window h, so a rebuild "
        f"takes k = r x h / {s} events spread over m = F / {s} files and rewrites the m x (1 - (1 - 1/m)^k) it "
        f"touched. h = {example['window_s']:.1f} s is the window at which this gives the "
        f"{m['rewrites']:.3f} rewrites per event measured at {inc['files']:,} files; at F = "
        f"{example['files']:,.0f}: k = {k:,.1f}, m = {example['files'] / s:,.0f}, "
        f"{example['files_per_rebuild']:,.1f} files a rebuild, {example['rewrites']:.3f} per event.",
        f"3. **Cost**: the measured ${m['total']:.2f} per million, with the rebuilds' ${m['shard']:.2f} scaled "
        f"by the rewrites ({example['rewrites']:.3f} / {m['rewrites']:.3f}), the part of the index's "
        f"${m['index']:.2f} that reads every file record and renders it (its read units and CPU: "
        f"${m['index_grows']:.4f}) by the files ({example['files']:,.0f} / {inc['files']:,}) and "
        f"the crawlers' fetches recomputed for the files rewritten (`bench/report.py`'s rule): "
        f"${example['usd']:.2f}. Ingest, notify, the queues and the hourly jobs (the reconciliation reads 200 "
        "files an hour whatever the site) are per event or per hour: unchanged.",
        "4. **Freshness**: a rebuild's billed seconds, "
        + (
            f"split into {fixed_s:.3f} s an invocation and {file_s:.3f} s a file rewritten (solved from the two "
            "rates, which rewrite different numbers of files an invocation)"
            if fixed_s
            else f"{file_s:.3f} s a file rewritten, all of it counted per file (the two rates rewrite about as many "
            "files an invocation, so they do not separate a part per invocation: an upper bound)"
        )
        + ". The files of a rebuild are mostly CPU, which its threads share, so they add up: "
        f"{example['measured_run_s']:.1f} s a rebuild measured, {example['run_s']:.1f} s at F; the measured p99 of "
        f"{m['p99']} s grows by the difference: {example['p99']:.1f} s.",
        f"5. **DynamoDB** (`python -m bench.partitions`: every event in one section, on one key, a new table). "
        f"A section's key took {busy['key_write_50']:,.0f} write units in its busiest second at "
        f"{busy['rate_50']:g} events/s and {busy['key_write_burst']:,.0f} at {busy['rate_burst']:,.0f}/s: "
        f"{example['dynamo']['key_write_per_event']:.2f} per event a second at most (ingest's windows bunch "
        f"events), so one key takes {PARTITION_UNITS['write']:,.0f} / "
        f"{example['dynamo']['key_write_per_event']:.2f} = {example['headroom_key_write']:,.0f} events a second "
        f"into one section (the default: every page in `root`) and `SectionPartitions` 16 about "
        f"{16 * example['headroom_key_write']:,.0f}. Its reads are a rebuild's reads of its changed pages' "
        f"entries, at most the 1,000 pages of its merged requests, one rebuild a section at a time: "
        f"{max(busy['key_read_50'], busy['key_read_burst']):,.0f} units in the busiest second at either rate, "
        "whatever the rate (a rebuild reads the files' snapshots from S3, not the section's entries). The table "
        f"takes every event's {measured_rate(inc, example['rate'])['wru']:.2f} write units (ingest, rebuild, "
        f"notify), or the {busy['table_write_50']:,.0f} of notify's batches in the busiest second measured, the "
        f"larger: a new table's {TABLE_INITIAL_UNITS['write']:,.0f} last to about "
        f"{example['headroom_table_write']:,.0f} events a second, and it grows with use (or "
        "`ManifestWarmWriteUnits`). None of this depends on the site's size.",
        f"6. **The other limits**: Lambda concurrency = r x billed seconds per event (Little's law), the rebuilds' "
        f"and the index's scaled as their bills: {example['concurrency']:,.1f} of {LAMBDA_CONCURRENCY:,}; S3 "
        f"requests a second against one prefix's {S3_PUT_PER_PREFIX:,} PUTs and {S3_GET_PER_PREFIX:,} GETs (every "
        f"file under one prefix: the worst case); FIFO requests a second against {3 * FIFO_TPS} (a FIFO queue's "
        f"{FIFO_TPS} calls a second for each of SendMessage, ReceiveMessage and DeleteMessage, without high "
        "throughput; the three FIFO queues counted as one: the worst case); a rebuild's run against its "
        f"{deployed['timeout_s']} s timeout; the rebuild's memory for a 10,000-URL file "
        f"({_peak_mb(inputs, 10_000):,.0f} MB: the process peak of `bench/shard_rebuild.py`, the in-memory table "
        f"included, so an upper bound) against its {deployed['memory_mb']:,} MB; with `MaxUrlsPerFile` 50,000 it is "
        f"{_peak_mb(inputs, 50_000):,.0f} MB. A file's size is capped, so none of these memory figures grows with "
        "the site.",
        "",
        'Limits as documented by AWS (looked up on 2026-11-26; docs/architecture.md, "Partitions and '
        'throughput", has the detail):',
        "",
        "- DynamoDB: a partition serves at most 1,000 write and 3,000 read units a second "
        "([warm throughput scenarios](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
        "warm-throughput-scenarios.html)); a new on-demand table takes 4,000 write and 12,000 read units a second "
        "at once and up to twice its previous peak, and may throttle past twice that peak within 30 minutes "
        "([on-demand capacity mode](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
        "on-demand-capacity-mode.html), [on-demand table throttling](https://repost.aws/knowledge-center/"
        "on-demand-table-throttling-dynamodb)); `WarmThroughput` raises what a table takes at once "
        "([warm throughput](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html)); "
        "a table takes 40,000 units a second by default (a quota AWS raises on request).",
        f"- Lambda: {LAMBDA_CONCURRENCY:,} concurrent executions a Region by default "
        "([Lambda quotas](https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)).",
        f"- S3: at least {S3_PUT_PER_PREFIX:,} PUT and {S3_GET_PER_PREFIX:,} GET requests a second per partitioned "
        "prefix, more as S3 partitions a busy prefix ([S3 performance](https://docs.aws.amazon.com/AmazonS3/"
        "latest/userguide/optimizing-performance.html)).",
        f"- SQS FIFO: {FIFO_TPS} transactions a second per API action, 3,000 messages with batches of 10, more in "
        "high-throughput mode ([FIFO throttling](https://docs.aws.amazon.com/AWSSimpleQueueService/latest/"
        "SQSDeveloperGuide/troubleshooting-fifo-throttling-issues.html)).",
        f"- Sitemaps: at most 50,000 URLs a file and {FILES_PER_INDEX:,} files an index "
        "([sitemaps.org](https://www.sitemaps.org/protocol.html)); past that the stack writes another index file.",
        "",
        "What this says. The changes here are spread evenly over the site (`bench/pages.py` picks pages at random), "
        "the worst case for coalescing: a larger site's changes land in more files, so fewer share a rewrite, and "
        "the site's size moves the cost and the freshness through the rewrites alone. "
        + " ".join(
            f"At {r['pages']:,} pages and {RATES[r['rate']]} the nearest limit is {r['first']}: "
            f"{_pct(r['limits'][r['first']])} of it{' (past it)' if r['limits'][r['first']] > 1 else ''}."
            for r in rows
            if r["pages"] == SIZES[-1]
        )
        + " Where the freshness promise is the first limit, a rebuild's files take longer than the hold leaves: "
        "more sections (each has a rebuild of its own at a time) or a longer `FreshnessSeconds` for the busy "
        "ones keep it. DynamoDB's load follows the rate into one section, not the site: a section's one key "
        f"takes about {example['headroom_key_write']:,.0f} events a second before it throttles, `SectionPartitions` "
        "16 sixteen times that. Not modelled: sections of unequal size or heat (a hot section's files coalesce "
        "better, its key is busier), DynamoDB splitting a hot key, and the bootstrap, which the Bootstrap section "
        "projects.",
    ]
    return lines


def _peak_mb(inputs: dict[str, Any], urls: int) -> float:
    """The process peak of one file's rebuild: an upper bound (it holds the in-memory table as well)."""
    return float(next(r for r in inputs["shard_rebuild"] if int(r["urls"]) == urls)["peak_mb"])


def main(argv: list[str]) -> int:
    shards = CACHE / "shard_rebuild.json"
    if argv[:1] != ["--doc-only"] and not shards.exists():
        shards.parent.mkdir(parents=True, exist_ok=True)
        shards.write_text(json.dumps(shard_rebuild.measure(), indent=1), encoding="utf-8")
    inputs = load()
    sections.write("scale", section(inputs))
    print(json.dumps([project(inputs, p, r) for r in RATES for p in SIZES]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
