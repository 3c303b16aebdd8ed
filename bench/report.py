"""The "Incremental updates" section of docs/benchmarks.md, priced from what ``bench/incremental.py`` measured
(so prices and assumptions in ``bench/cost.py`` can change without measuring again)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench import cost, plots
from bench.usage import Usage


def usage(raw: dict[str, Any]) -> Usage:
    """A ``Usage`` back from its JSON form."""
    return Usage(invocations=raw["invocations"], billed_ms=round(raw["billed_s"] * 1000), cpu_s=raw["cpu_s"],
                 wait_s=raw["wait_s"], calls=Counter(raw["calls"]), rru=raw["rru"], wru=raw["wru"],
                 gsi_wru=raw["gsi_wru"], items_read=raw["items_read"], s3=Counter(raw["s3"]),
                 bytes_up=raw["bytes_up"], sqs=Counter(raw["sqs"]), http=raw["http"],
                 log_bytes=raw.get("log_bytes", 0))  # fmt: skip


def total(scenario: dict[str, Any]) -> dict[str, Any]:
    """Every function's use in a scenario, added up (JSON form)."""
    sum_ = Usage()
    for raw in scenario["functions"].values():
        sum_.add(usage(raw))
    return {"invocations": sum_.invocations, "billed_s": sum_.billed_ms / 1000, "cpu_s": round(sum_.cpu_s, 3),
            "wait_s": sum_.wait_s, "rru": sum_.rru, "wru": sum_.wru, "gsi_wru": sum_.gsi_wru,
            "items_read": sum_.items_read, "s3": dict(sum_.s3), "bytes_up": sum_.bytes_up, "sqs": dict(sum_.sqs),
            "http": sum_.http, "log_bytes": sum_.log_bytes, "calls": dict(sum_.calls)}  # fmt: skip


def fixed_part(data: dict[str, Any], scenario: dict[str, Any]) -> dict[str, float]:
    """What a sustained rate's million events carry whatever they do: the hourly sweep and upkeep, the event
    sources' idle long polls, the custom metrics, alarms and dashboard (nothing for a burst)."""
    if not scenario["sustained"]:
        return dict.fromkeys((*cost.LINES, "total"), 0.0)
    hours = 1e6 / (scenario["rate"] * 3600)
    hourly = cost.dollars({n: usage(r) for n, r in data["hourly"].items()}, data["memory"], {})
    resources = data.get("resources", {})
    idle = cost.fixed(data["polled"], len(data.get("metrics", [])), resources.get("alarms", 0),
                      resources.get("dashboards", 0), hours, resources.get("keys", 0))  # fmt: skip
    return {k: hourly[k] * hours + idle[k] for k in hourly}


def crawl(data: dict[str, Any], scenario: dict[str, Any]) -> dict[str, float]:
    """What the crawlers fetch (``bench/cost.py``): each changed file and the index, at most
    ``CRAWLS_PER_HOUR`` times an hour each at a sustained rate, once after a burst."""
    puts = sum(scenario["puts"].values())
    if not puts:
        return {"fetches": 0.0, "bytes": 0.0}
    per_fetch = scenario["put_bytes"] / puts
    fetches = float(cost.CRAWLERS * len(scenario["puts"]))
    if scenario["sustained"]:
        hourly = cost.CRAWLERS * (data["files"] + 1) * cost.CRAWLS_PER_HOUR
        fetches = scenario["events"] * min(cost.CRAWLERS * puts / scenario["events"],
                                           hourly / (scenario["rate"] * 3600))  # fmt: skip
    return {"fetches": fetches, "bytes": fetches * per_fetch}


def per_million(data: dict[str, Any], scenario: dict[str, Any], function: str | None = None) -> dict[str, float]:
    """Dollars per million events by line: of one function when given, else of everything (with the fixed part
    and the crawlers' fetches)."""
    events = scenario["events"]
    used = {n: usage(r) for n, r in scenario["functions"].items() if function in (None, n)}
    fetched = crawl(data, scenario) if function is None else {}
    bill = cost.scaled(cost.dollars(used, data["memory"], fetched), 1e6 / events)
    if function is None:
        bill = {k: v + fixed_part(data, scenario)[k] for k, v in bill.items()}
    return bill


def _n(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}" if value < 10 else f"{value:,.1f}"


def _usd(value: float) -> str:
    return f"{value:,.2f}"


def _row(label: str, used: dict[str, Any], sitemap_bytes: int | None = None) -> str:
    sqs = sum(used["sqs"].values())
    return (f"| {label} | {_n(used['rru'])} | {_n(used['wru'] + used['gsi_wru'])} | {used['items_read']:,} | "
            f"{used['s3'].get('PUT', 0):,} | {used['s3'].get('GET', 0):,} | {used['bytes_up']:,} | "
            f"{'' if sitemap_bytes is None else f'{sitemap_bytes:,}'} | {sqs:,} | {used['invocations']:,} | "
            f"{used['cpu_s']:.2f} |")  # fmt: skip


def _by(data: dict[str, Any], label: str) -> dict[str, Any]:
    return next(s for s in data["scenarios"] if s["label"] == label)


def _roles(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    roles: dict[str, list[dict[str, Any]]] = {}
    for i, scenario in enumerate(data["scenarios"]):
        roles.setdefault(scenario.get("role") or ("one", "spread")[min(i, 1)] if i < 2 else "cost", []).append(scenario)
    return roles


def section(data: dict[str, Any]) -> list[str]:
    """The section, with its tables and what they mean."""
    roles = _roles(data)
    one, spread, costs = roles["one"][0], roles["spread"][0], roles["cost"]
    full = data["import"]
    spread_total = total(spread)
    shard = one["functions"].get("RebuildShardFunction", {})
    index = one["functions"].get("RebuildIndexFunction", {})
    sitemap_full = data.get("import_sitemap_bytes") or full["bytes_up"]
    lines = [
        "## Incremental updates",
        "",
        f"A site of {data['pages']:,} pages in {data['files']:,} files (the full-build export) is loaded with the "
        "`import` use case (the full publish); then events go through the real Lambda handlers in virtual time, "
        "batched as `template.yaml` configures each event source (`bench/traffic.py`): the ingest window of "
        "5 s or 100 events, FIFO groups that hold a section's marks while its rebuild runs (so they are coalesced "
        "into its next rebuild, up to 10 messages of up to 100 pages), the index queue's 5 s delay. The adapters "
        "run on the in-memory AWS of `tests/sim`; every call they make is counted and billed as AWS bills it, from "
        "the real items' sizes (`bench/meter.py`). CPU is the service's own (the fakes' time taken out). "
        f"Measured on {data['date']}"
        + (f" ({data['bench_cpu_s'] / 60:.0f} min of CPU for the whole benchmark)" if "bench_cpu_s" in data else "")
        + "; `python -m bench.incremental` measures again and rewrites this section.",
        "",
        "| | read units | write units | items read | S3 PUTs | S3 GETs | bytes uploaded | of which sitemaps | "
        "SQS requests | invocations | CPU (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        _row("full publish (import)", full, data.get("import_sitemap_bytes")),
        _row("one changed page", total(one), one["put_bytes"]),
        _row(f"{spread['events']:,} spread changes at 1,000/s", spread_total, spread["put_bytes"]),
        "",
        "Write units include the second unit of each transactional write. One "
        f"changed page: its rebuild read {shard.get('items_read', 0)} DynamoDB items and "
        f"{shard.get('calls', {}).get('s3:GET', 0)} S3 object (the file's snapshot; plus the HEAD of the "
        f"compare-and-swap put), and the index {index.get('items_read', 0)} (every file record, twice: once "
        "more when the new file's cache lifetime has passed). "
        f"{spread['events']:,} spread changes cost {spread_total['rru'] / max(1.0, full['rru']):.2f} of the full "
        f"publish in read units, {spread['put_bytes'] / max(1, sitemap_full):.2f} of its sitemap bytes uploaded and "
        f"{spread_total['bytes_up'] / max(1, full['bytes_up']):.2f} of all its bytes uploaded, snapshots included "
        f"(goal: at most 1). {len([n for n in spread['puts'] if n.endswith('.gz')]):,} files were rewritten, none "
        f"more than {max([c for n, c in spread['puts'].items() if n.endswith('.gz')], default=0)} times; "
        f"the closest two puts of one file were {spread['min_gap_s']} s apart (virtual time).",
        "",
        "### Cost per million events",
        "",
        "Every line at AWS list prices, us-east-1, without free tiers (prices, billing rules and assumptions in "
        "`bench/cost.py`). The sustained rates also carry the hourly sweep and upkeep and the event sources' idle "
        "long polls; the burst is what its events add.",
        "",
        f"![{plots.COST_ALT}](benchmarks/{plots.COST.name})",
        "",
        "| scenario | Lambda | SQS | DynamoDB | S3 | CloudFront | CloudWatch | total (USD per 1M events) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scenario in costs:
        bill = per_million(data, scenario)
        lines.append(f"| {scenario['label']} | " + " | ".join(_usd(bill[k]) for k in (*cost.LINES, "total")) + " |")
    lines += [
        "",
        "By function, per million events (the counts per event); `fixed` is the sustained rates' share of the hourly "
        "jobs, idle polls, metrics, alarms and dashboard, `crawlers` the fetches of what changed:",
        "",
        "| scenario | function | invocations | Lambda | SQS | DynamoDB | S3 | CloudFront | CloudWatch | read units | "
        "write units | S3 requests | SQS requests |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scenario in costs:
        events = scenario["events"]
        parts = {name: per_million(data, scenario, name) for name in scenario["functions"]}
        parts["fixed"] = fixed_part(data, scenario)
        parts["crawlers"] = cost.scaled(cost.dollars({}, data["memory"], crawl(data, scenario)), 1e6 / events)
        for name, bill in parts.items():
            raw = scenario["functions"].get(name)
            label = "CMS (its sends)" if name == "cms" else name.removesuffix("Function")
            counts = "| | | | |"
            if raw is not None:
                units = f"| {raw['rru'] / events:.2f} | {(raw['wru'] + raw['gsi_wru']) / events:.2f} | "
                counts = units + f"{sum(raw['s3'].values()) / events:.2f} | {sum(raw['sqs'].values()) / events:.2f} |"
            calls = f"{raw['invocations'] / events:.3f}" if raw is not None else ""
            lines.append(f"| {scenario['label']} | {label} | {calls} | "
                         + " | ".join(_usd(bill[k]) for k in cost.LINES) + f" {counts}")  # fmt: skip
    from bench.findings import findings  # it prices with this module

    lines += ["", *_freshness(data), *_sweep(data), *findings(data), ""]
    return lines


def price_list(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Cost and freshness against the FreshnessSeconds setting, one row per rate and setting (what a plot of
    the price list reads): USD per million events, sitemap files rewritten per event, freshness p50/p99/max."""
    rows = []
    for scenario in data.get("sweep", []):
        fresh = scenario["freshness"]
        rewrites = sum(n for name, n in scenario["puts"].items() if name.endswith(".xml.gz"))
        rows.append({"scenario": scenario["label"], "rate": scenario["rate"], "events": scenario["events"],
                     "freshness_setting_s": scenario["freshness_setting_s"],
                     "usd_per_million": round(per_million(data, scenario)["total"], 2),
                     "files_per_event": round(rewrites / scenario["events"], 4),
                     "p50_s": fresh["p50"], "p99_s": fresh["p99"], "max_s": fresh["max"],
                     "unshown": fresh["unshown"]})  # fmt: skip
    return rows


def _sweep(data: dict[str, Any]) -> list[str]:
    """The price list: cost per million events against the freshness setting, per rate."""
    rows = price_list(data)
    if not rows:
        return []
    settings = sorted({r["freshness_setting_s"] for r in rows})
    labels = list(dict.fromkeys(r["scenario"] for r in rows))
    at = {(r["scenario"], r["freshness_setting_s"]): r for r in rows}
    lines = [
        "### Cost per million events against the freshness setting",
        "",
        "The same rates at each `FreshnessSeconds` (every section), each long enough for its steady state: 1 event/s "
        "for three times the setting (at least 300 s), 50 events/s for twice it (120 to 400 s), the one-section "
        "burst as above. USD per million events at list prices (as in the table above); freshness in virtual "
        "time, from the CMS's send to the CDN surely serving the change (the CDN's 5 s included).",
        "",
        f"![{plots.PRICE_LIST_ALT}](benchmarks/{plots.PRICE_LIST.name})",
        "",
        "| scenario | " + " | ".join(f"{f} s" for f in settings) + " |",
        "|---|" + "---:|" * len(settings),
    ]
    for label in labels:
        cells = [f"${at[label, f]['usd_per_million']:.2f}" if (label, f) in at else "" for f in settings]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| scenario | setting (s) | events | files rewritten per event | USD per 1M events | p50 (s) | p99 (s) | "
        "slowest (s) | never shown |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (labels.index(r["scenario"]), r["freshness_setting_s"])):
        figures = f"{r['usd_per_million']:.2f} | {r['p50_s']} | {r['p99_s']} | {r['max_s']} | {r['unshown']}"
        lines.append(f"| {r['scenario']} | {r['freshness_setting_s']} | {r['events']:,} | {r['files_per_event']:.3f} | "
                     f"{figures} |")  # fmt: skip
    return [*lines, ""]


def _freshness(data: dict[str, Any]) -> list[str]:
    """How soon each change was served, per scenario."""
    scenarios = [s for s in data["scenarios"] if s.get("freshness")]
    if not scenarios:
        return []
    lines = [
        "### Freshness",
        "",
        "From the CMS's send of an event to the CDN surely serving its change, in the same virtual time: the ingest "
        "batching window, the rebuild queue's groups and the section's wait, each invocation's duration (what it is "
        "billed), and the CDN's cache lifetime after the put that first showed the page's new content (a cached "
        "copy of the old file may be served until then). No faults here: `make soak` reports freshness under them. "
        "Goal: p99 within `FreshnessSeconds` (the template's 60 s here; other settings below).",
        "",
        f"![{plots.FRESHNESS_ALT}](benchmarks/{plots.FRESHNESS.name})",
        "",
        "| scenario | changed pages | p50 (s) | p99 (s) | slowest (s) | never shown |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for scenario in scenarios:
        f = scenario["freshness"]
        figures = f"{f['p50']} | {f['p99']} | {f['max']} | {f['unshown']}"
        lines.append(f"| {scenario['label']} | {f['pages']:,} | {figures} |")
    return [*lines, ""]
