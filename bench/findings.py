"""What the cost figures mean: which lines dominate each scenario, the floors the current write path sets, and
the changes to the service code that would bring each scenario to $5 per million events or less, each with its
arithmetic from the measured counts (per event, at the prices of ``bench/cost.py``)."""

from __future__ import annotations

from typing import Any

from bench import cost
from bench.report import crawl, fixed_part, per_million

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


def _half_memory(data: dict[str, Any], scenario: dict[str, Any]) -> float:
    """What the rebuild function would save per million events at half its memory: its CPU-bound time doubles
    (the same GB-s), its waits cost half."""
    raw = scenario["functions"].get("RebuildShardFunction")
    if raw is None:
        return 0.0
    gb = data["memory"]["RebuildShardFunction"] / 1024
    saved: float = raw["wait_s"] * gb / 2 * cost.LAMBDA_GB_S * PER_M / scenario["events"]
    return saved


_TARGET_WRU = 1.0  # write units an ingested update would cost without the batch's outbox (change 2)


def findings(data: dict[str, Any]) -> list[str]:
    costs = [s for s in data["scenarios"] if s.get("role") == "cost"] or data["scenarios"][2:]
    steady, busy = costs[0], costs[1]
    bills = {s["label"]: per_million(data, s) for s in costs}
    wru = _per_event(busy, "IngestFunction", "wru") + _per_event(busy, "IngestFunction", "gsi_wru")
    rru = _per_event(busy, "IngestFunction", "rru")
    ingest_ddb = wru * cost.DDB_WRU * PER_M + rru * cost.DDB_RRU * PER_M
    notify_ddb = per_million(data, busy, "NotifyFunction")["DynamoDB"]
    puts = {s["label"]: sum(n for name, n in s["puts"].items() if name.endswith(".xml.gz")) / s["events"]
            for s in costs}  # fmt: skip  # sitemap files rewritten per event
    intents = {s["label"]: max(0.0, puts[s["label"]] - _per_event(s, "RebuildShardFunction", "invocations"))
               for s in costs}  # fmt: skip  # file marks an intent item per rebuild would save, per event
    index_calls = _per_event(steady, "RebuildIndexFunction", "invocations")
    index_bill = per_million(data, steady, "RebuildIndexFunction")["total"]
    shard = per_million(data, steady, "RebuildShardFunction")
    shard_s = _per_event(steady, "RebuildShardFunction", "billed_s") / max(puts[steady["label"]], 1e-9)
    fixed = fixed_part(data, steady)
    resources = data.get("resources", {})
    month = sum(cost.idle_month(data["polled"], resources.get("alarms", 0), resources.get("dashboards", 0),
                                resources.get("keys", 0), len(data.get("metrics", []))).values())  # fmt: skip
    spread = next((s for s in data["scenarios"] if s.get("role") == "spread"), data["scenarios"][1])
    spread_puts = [n for name, n in spread["puts"].items() if name.endswith(".gz")]
    lines = [
        "### What dominates, and what would bring each scenario to $5 or less",
        "",
        *(
            f"- **{label}: ${bill['total']:.2f} per million events**, mostly {_dominant(bill)}."
            for label, bill in bills.items()
        ),
        f"- **Ingest alone costs ${ingest_ddb:.2f} per million in DynamoDB, whatever the rate**: {wru:.1f} write "
        f"units and {rru:.1f} read units per event. An update that stays in its section is one conditional "
        "PutItem of its manifest entry, which must be *current* (a live entry in the section the page state "
        "names) and older; it reads nothing (the item it replaced comes back with the write, unbilled). Anything "
        "else (a page's first event, a deletion, a move, the first update after a move) reads the page state and "
        "its entry and writes both (a move adds a removal marker in the section it leaves), after a failed try of "
        "that one write. The batch's outbox is a put and a delete per ingest batch. "
        f"Notify adds ${notify_ddb:.2f} (one read and one write of a `sent#` item per URL).",
        "- **Every rewritten file costs a PUT and a ranged GET of its snapshot** ($0.0054 per 1,000 files: the PUT "
        "is `If-Match` the ETag the file's record kept from the last put, so no HEAD comes first unless another put "
        "came between), and each section rebuild one more PUT, of the object holding the snapshots of all the "
        "files it rendered: files "
        "rewritten per event were "
        + ", ".join(f"{v:.2f} at {k}" for k, v in puts.items())
        + f". At one event per second the rebuild function also bills {shard_s:.2f} s of 1 GB per rewritten file "
        f"(${shard['Lambda']:.2f} per million): reading, decoding and re-encoding a 10,000-page snapshot and "
        "rendering the file, and its round trips to S3 and DynamoDB (a rebuild's files are read, rendered and put "
        "on eight threads, which the meter bills as overlapping).",
        f"- **Index rebuilds are coalesced**: at one event per second the index ran {index_calls:.2f} times per event "
        f"(${index_bill:.2f} per million). Every index request sent in one "
        "half cache lifetime carries the same deduplication ID, so SQS delivers one of them, after the window: at "
        "most two index rebuilds per 5 s, whatever the number of section rebuilds and settle requests.",
        f"- **A section waits by its freshness** (`FreshnessSeconds`, 60 s here): {spread['events']:,} spread "
        f"changes in one second rewrote each file at most {max(spread_puts, default=0)} times "
        f"({sum(spread_puts) / max(len(spread_puts), 1):.1f} on average). A quiet section's first rebuild request "
        "that names 10 or more changes, or comes from an ingest batch that recorded as many, is given back to the "
        "queue (`ChangeMessageVisibility`) until its oldest change is 9 s old; a section rebuilt less than its hold "
        "ago (the freshness less the 5 s ingest window, the CDN's 5 s and 10 s for the runs: 40 s) waits until "
        "that rebuild's start plus the hold, so a busy section is rebuilt about once per hold; a lone change in a "
        "quiet section is rebuilt at once. Nothing is billed while a request waits, and its group holds the "
        "later ones behind it; requests that come back still early are merged into fewer, so a long hold is not "
        "cut short by the ten messages of a batch. How the cost falls as the setting grows: the price list above.",
        f"- **Fixed costs weigh at low rates**: at one event per second the alarms, the alarm topic's key and the "
        f"custom metrics the alarms read are ${fixed['CloudWatch']:.2f} per million events and the event sources' "
        f"idle polls ${fixed['SQS']:.2f} (${month:.2f} a month on a stack busy all day, whatever its rate; an idle "
        "stack costs $4.35 a month, line by line in `docs/operations.md`). The dashboard ($3 a month) and the "
        "custom metrics only it shows ($0.30 a metric-month each) come with `CreateDashboard`.",
        "",
        "What would still bring each scenario down (per million events, from the counts above):",
        "",
        f"1. **No `sent#` read and write per announced URL** in notify: ${notify_ddb:.2f} at 50 events/s. The "
        "write records when IndexNow last took the URL, for its once-per-window rule and against announcing a "
        "content twice. An alternative measures 0.013 write units an event instead of 1.00 (50 events/s "
        "would be about $4.60): ingest keeps in the page state when the URL may next be announced, marks and "
        "change records carry that moment, notify holds only the URLs whose moment is to come and records each "
        "change record once. It is not used: marks sent again after a crash (an "
        "ingest batch's outbox, a rebuild retried after SQS's 5-minute deduplication) can be coalesced into "
        'another record, and the URL is then announced twice, which breaks "every change is announced once" '
        "for more than the one window no HTTP client can close. What would close it: a rebuild reports a URL only "
        "when the snapshot its file record names does not already show that rank (the records are written after "
        "the change record is sent, so a change a record names was announced), leaving only a rebuild that dies "
        "between its send and its records.",
        "2. **No outbox for a batch of updates written alone**: the outbox (a put and a delete per batch, "
        "0.1 write unit an event in a batch of 100, 0.4 in a batch of 5) lets the sweep send the marks of a "
        "change whose event was dead-lettered after it was recorded; a redelivered update finds its own entry "
        "without it. Ingest at about 1.0 write unit an event: "
        f"${max(0.0, wru - _TARGET_WRU) * cost.DDB_WRU * PER_M:.2f} at 50 events/s.",
        "3. **One intent item per section rebuild** instead of marking each file's record unsettled before its "
        "put (the next rebuild reads the one item): a write unit less per rewritten file beyond the first of a "
        "rebuild, "
        + ", ".join(f"${v * cost.DDB_WRU * PER_M:.2f} at {k}" for k, v in intents.items())
        + f". Index rebuilds run {index_calls:.2f} times per event at one event per second: a request that only "
        "moves lastmods waits its section's index wait (40 s at 60 s), and one that adds or retires a file goes "
        "at once (docs/architecture.md).",
        f"4. **The CMS batches its sends** (`SendMessageBatch`, 10 a request; the CMS's cost, not the stack's): "
        f"${0.9 * cost.SQS_PRICE['standard'] * PER_M:.2f}, and the ingest event source's receives shrink the same way.",
        "5. **The rebuild function at 512 MB** instead of 1,024: CPU-bound time doubles but costs the same GB-s, "
        "and the half of its time spent waiting on S3 and DynamoDB costs half: "
        + ", ".join(f"${_half_memory(data, s):.2f} at {s['label']}" for s in costs)
        + ".",
    ]
    lines += [
        "",
        "What each scenario would come to (estimated by taking out the units each change removes; measured again "
        "once a change lands):",
        "",
        "| scenario | now | after 1-5 | largest line now |",
        "|---|---:|---:|---|",
    ]
    under: list[str] = []
    for scenario in costs:
        label, bill = scenario["label"], bills[scenario["label"]]
        own_wru = _per_event(scenario, "IngestFunction", "wru")
        saved = max(0.0, own_wru - _TARGET_WRU) * cost.DDB_WRU * PER_M + 0.9 * cost.SQS_PRICE["standard"] * PER_M
        saved += intents[label] * cost.DDB_WRU * PER_M
        saved += _half_memory(data, scenario) + per_million(data, scenario, "NotifyFunction")["DynamoDB"]
        after = bill["total"] - saved
        rest = {k: v for k, v in bill.items() if k != "total"}
        top = max(rest, key=lambda k: rest[k])
        lines.append(f"| {label} | {bill['total']:.2f} | {after:.2f} | {top} (${rest[top]:.2f}) |")
        if after <= 5:
            under.append(label)
    files, window = data["files"], 60
    touched = files * (1 - (1 - 1 / files) ** window) / window  # files rewritten per event, one rewrite a window
    floor = touched * (cost.S3_PRICE["PUT"] + cost.S3_PRICE["GET"]) * PER_M
    ingest_after = min(wru, _TARGET_WRU) * cost.DDB_WRU * PER_M + rru * cost.DDB_RRU * PER_M
    fixed_total = fixed["total"]
    over = [s["label"] for s in costs if s["label"] not in under]
    lines += [
        "",
        f"So {' and '.join(under) or 'no scenario'} would come under $5 by these changes"
        + (f"; {' and '.join(over)} would not." if over else ".")
        + f" At one event per second and 60 s the floor is the rewrites: spread over {files:,} files, a coalescing "
        f"window of {window} s per section leaves {touched:.2f} files rewritten per event, and each rewrite is at "
        f"least a PUT and a ranged GET: ${floor:.2f} per million, plus ingest after 1-5 (${ingest_after:.2f}), the "
        f"fixed costs (${fixed_total:.2f}) and the rebuild's Lambda time (about "
        f"${shard['Lambda'] / max(puts[steady['label']], 1e-9):.2f} per million rewrites today). A longer "
        "freshness setting is what lowers it: the price list above.",
    ]
    return lines + _long_setting_floor(data)


def _long_setting_floor(data: dict[str, Any]) -> list[str]:
    """What one event a second costs at the longest freshness setting measured whatever the rebuilds cost: the
    parts the invariants and the bench's own model keep per event (the CMS's send, ingest's receive and one write,
    notify's read and write of the URL's ``sent#`` item, the fixed costs, the crawlers' fetches)."""
    sweep = [s for s in data.get("sweep", []) if s["rate"] == 1.0 and s["sustained"]]
    if not sweep:
        return []
    longest = max(sweep, key=lambda s: s["freshness_setting_s"])
    total = per_million(data, longest)["total"]
    cms = per_million(data, longest, "cms")["total"]
    ingest = (cost.SQS_PRICE["standard"] + _TARGET_WRU * cost.DDB_WRU) * PER_M  # its receive and its entry
    notify = per_million(data, longest, "NotifyFunction")["DynamoDB"]
    fixed = fixed_part(data, longest)["total"]
    fetched = crawl(data, longest)
    crawlers = cost.scaled(cost.dollars({}, {}, fetched), PER_M / longest["events"])["total"]
    floor = cms + ingest + notify + fixed + crawlers
    return [
        "",
        f"At one event per second and {longest['freshness_setting_s']} s (${total:.2f} per million now) the parts "
        f"no rebuild design removes come to ${floor:.2f} per million: the CMS's send (${cms:.2f}), ingest's "
        f"receive and one write of the entry (${ingest:.2f}), notify's read and write of each announced URL's "
        f"`sent#` item (${notify:.2f}, what keeps every change announced once), the fixed costs (${fixed:.2f}) "
        f"and the crawlers' fetches of what changed (${crawlers:.2f}, the model's assumption). With the rebuilds, "
        "the index and every function's time free, that is "
        + ("still above $5 (issue 31's target there)." if floor > 5 else "under $5 (issue 31's target there)."),
    ]
