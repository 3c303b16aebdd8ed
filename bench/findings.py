"""What the cost figures mean: which lines dominate each scenario, the floors the current write path sets, and
the changes to the service code that would bring each scenario to $5 per million events or less, each with its
arithmetic from the measured counts (per event, at the prices of ``bench/cost.py``)."""

from __future__ import annotations

from typing import Any

from bench import cost
from bench.report import per_million

PER_M = 1e6  # events


def _per_event(scenario: dict[str, Any], function: str, key: str) -> float:
    raw = scenario["functions"].get(function)
    if raw is None:
        return 0.0
    value = raw[key] if not isinstance(raw[key], dict) else sum(raw[key].values())
    return float(value) / int(scenario["events"])


def _dominant(bill: dict[str, float]) -> str:
    lines = sorted(cost.LINES, key=lambda k: -bill[k])[:2]
    return " and ".join(f"{k} ${bill[k]:.2f} ({bill[k] / bill['total']:.0%})" for k in lines)


def findings(data: dict[str, Any]) -> list[str]:
    costs = [s for s in data["scenarios"] if s.get("role") == "cost"] or data["scenarios"][2:]
    steady, busy = costs[0], costs[1]
    bills = {s["label"]: per_million(data, s) for s in costs}
    wru = _per_event(busy, "IngestFunction", "wru") + _per_event(busy, "IngestFunction", "gsi_wru")
    rru = _per_event(busy, "IngestFunction", "rru")
    ingest_ddb = wru * cost.DDB_WRU * PER_M + rru * cost.DDB_RRU * PER_M
    notify_ddb = per_million(data, busy, "NotifyFunction")["DynamoDB"]
    puts = {s["label"]: s["functions"].get("RebuildShardFunction", {}).get("s3", {}).get("PUT", 0) / 2 / s["events"]
            for s in costs}  # fmt: skip
    index_calls = _per_event(steady, "RebuildIndexFunction", "invocations")
    index_bill = per_million(data, steady, "RebuildIndexFunction")["total"]
    shard = per_million(data, steady, "RebuildShardFunction")
    shard_s = _per_event(steady, "RebuildShardFunction", "billed_s") / max(puts[steady["label"]], 1e-9)
    fixed = bills[steady["label"]]["CloudWatch"]
    lines = [
        "### What dominates, and what would bring each scenario to $5 or less",
        "",
        *(
            f"- **{label}: ${bill['total']:.2f} per million events**, mostly {_dominant(bill)}."
            for label, bill in bills.items()
        ),
        f"- **Ingest alone costs ${ingest_ddb:.2f} per million in DynamoDB, whatever the rate**: {wru:.1f} write "
        f"units and {rru:.1f} read unit per event. The `TransactWriteItems` writes the page state, the manifest "
        "entry and the section sequence at two units each (6), clearing `pending` is one more, and the page "
        "state entering and leaving the sparse `pending` index two more. Notify adds "
        f"${notify_ddb:.2f} (one read and one write of a `sent#` item per URL).",
        "- **Every rewritten file costs two PUTs** (the file and its `_state/` snapshot; $0.01 per 1,000 files) "
        "and a HEAD and a GET: files rewritten per event were "
        + ", ".join(f"{v:.2f} at {k}" for k, v in puts.items())
        + f". At one event per second the rebuild function also bills {shard_s:.2f} s of 1 GB per rewritten file "
        f"(${shard['Lambda']:.2f} per million): reading, decoding and re-encoding a 10,000-page snapshot and "
        "rendering the file.",
        f"- **The index rebuilds itself in chains**: at one event per second it ran {index_calls:.2f} times per event "
        f"(${index_bill:.2f} per million). Each run that names a file published within the cache lifetime queues "
        "another run (`settle`, deduplicated by its own generation, so never merged), and every section rebuild "
        "queues one more, so while changes keep coming the runs never stop and add up.",
        f"- **Fixed costs weigh at low rates**: metrics, alarms and the dashboard are ${fixed:.2f} per million "
        "events at one event per second (nothing at 50 per second).",
        "",
        "Changes to the service code, with what each saves (per million events, from the counts above):",
        "",
        f"1. **Ingest without the sequence bump** (the rebuild already takes a number per run, `next_rebuild`, that "
        f"could version the bytes alone): 2 write units, ${2 * cost.DDB_WRU * PER_M:.2f} in every scenario.",
        f"2. **An outbox instead of `pending` on every page state**: one item per ingest batch listing its marks, "
        f"written before the transactions and deleted after the sends, found by the sweep with one Query: 3 write "
        f"units per event become about 0.2 at 100-event batches, ${2.8 * cost.DDB_WRU * PER_M:.2f}.",
        f"3. **Index requests deduplicated by cache lifetime**: a `settle` or section request carrying "
        "`floor(now / lifetime)` as its deduplication ID is dropped by SQS when one is already queued for that "
        "window, and the one kept is delivered after the window ends, so it still sees every change sent in it. "
        f"At most one index run per 5 s: from {index_calls:.2f} to about 0.2 runs per event at one event per "
        f"second, about ${index_bill * (1 - min(1.0, 0.2 / max(index_calls, 1e-9))):.2f}.",
        "4. **No snapshot PUT**: rebuild the states from the published file (its entries are the rendered bytes; "
        "the range's newest tombstone moment can live in the file record), saving one PUT and one GET per "
        "rewritten file: "
        + ", ".join(f"${v * (cost.S3_PRICE['PUT'] + cost.S3_PRICE['GET']) * PER_M:.2f} at {k}" for k, v in puts.items())
        + ".",
        f"5. **The CMS batches its sends** (`SendMessageBatch`, 10 a request): "
        f"${0.9 * cost.SQS_PRICE['standard'] * PER_M:.2f}, and the ingest event source's receives shrink the same way.",
    ]
    lines += ["", "| scenario | now | after 1-5 | largest line now |", "|---|---:|---:|---|"]
    under: list[str] = []
    for scenario in costs:
        label, bill = scenario["label"], bills[scenario["label"]]
        saved = 4.8 * cost.DDB_WRU * PER_M + 0.9 * cost.SQS_PRICE["standard"] * PER_M
        saved += puts[label] * (cost.S3_PRICE["PUT"] + cost.S3_PRICE["GET"]) * PER_M
        calls = _per_event(scenario, "RebuildIndexFunction", "invocations")
        index = per_million(data, scenario, "RebuildIndexFunction")["total"]
        saved += index * max(0.0, 1 - 0.2 / calls) if calls > 0.2 else 0.0
        after = bill["total"] - saved
        rest = {k: v for k, v in bill.items() if k != "total"}
        top = max(rest, key=lambda k: rest[k])
        lines.append(f"| {label} | {bill['total']:.2f} | {after:.2f} | {top} (${rest[top]:.2f}) |")
        if after <= 5:
            under.append(label)
    files = data["files"]
    within = files * (1 - (1 - 1 / files) ** 30)  # distinct files 30 spread events touch
    big = 20 * (1 - (1 - 1 / 20) ** 30)
    over = [s["label"] for s in costs if s["label"] not in under]
    lines += [
        "",
        f"So {' and '.join(under) or 'no scenario'} would reach $5 by these changes"
        + (f"; {' and '.join(over)} would not." if over else ".")
        + f" Spread over {files:,} files, {puts[steady['label']]:.2f} files are rewritten per event at one event "
        "per second, and each rewrite costs at least a PUT ($5 per million) plus the rebuild's Lambda time. Under "
        "$5 there needs fewer rewrites per event: a coalescing window per section (a rebuild waiting, say, 30 s for "
        f"more marks, within the 60 s freshness goal) still touches about {within:.0f} of {files:,} files per 30 "
        f"events ({within / 30:.2f} per event); 50,000-URL files (20 files) would make it about {big:.0f} per 30 "
        f"events ({big / 30:.2f}), at five times the rendering per rewrite. A cheaper rewrite (the rebuild at "
        "512 MB instead of 1,024 bills fewer GB-s when most of its time is S3 waits) narrows the gap.",
    ]
    return lines
