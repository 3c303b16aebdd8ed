"""One stack with 10,000 sites added at run time, of 1,000 pages each (issue 32): what an idle site costs, the cost
per million events spread evenly over the sites, freshness, the scheduled functions' runs, and the first limit met.

Measured on the simulation's metered AWS (bench/meter.py; the sites' items and the register of marks charged by
bench/site_register.py) through the real handlers, in virtual time:

- the idle site: ``bench/idle_site.py`` (a day of the scheduled functions beside one idle site of 1,000 pages);
- the traffic: 10,000 sites at ``rate`` events a second give each site an event every 10,000 / ``rate`` seconds.
  A few sites of 1,000 pages get their events that far apart (each a different page; the sites staggered) while
  the hourly functions and the one-minute wake-up run at their cadence, all metered. What a run costs when it
  visits no site (its own site, the register's Query) is the stack's; the rest, per event, is the event's: its
  path through ingest, the rebuilds and the notifier, the marks it writes and the scheduled visits it causes;
- the scheduled functions at 10,000 sites: 10,000 sites registered (empty trees: what does not depend on the pages),
  each function run once with none marked and once with all marked; a visit of a site of 1,000 pages is the
  traffic's measurement (its runs, less a run that visited no site, per site visited);
- the stack's fixed share at 10,000 sites, projected from those runs: per hour, one run of each hourly function
  with sites marked (their lists of 10,000 sites, the reconciliation's daily visits) and 60 wake-ups;
- the sites' config reads: every function's processes read a site once per 60 s each (``SiteCache``); with
  events of one site this far apart, each process of each function the event passes reads it. The cache's
  window of uncached reads (20 hosts per 60 s per process) is driven with the hosts 10,000 evenly spread sites
  give it (``window``).

python -m bench.sites_scale [--sites 10000] [--pages 1000] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from bench import idle_site
from bench.cost import HOURS_PER_MONTH, dollars
from bench.idle_site import HOURLY, JOBS, stack
from bench.markdown import write_block
from bench.site_register import list_units, mark_size, site_size
from bench.sites_measure import Run, Traffic, at_scale, traffic, window
from sitemap_updater.local.stack import load_template
from sitemap_updater.service.site_marks import ACTIVE, TIME_SHARE
from sitemap_updater.sites import SiteConfig
from tests.sim.world import TEMPLATE

BEGIN, END = "<!-- sites-scale:begin -->", "<!-- sites-scale:end -->"
RATES = (1.0, 50.0)
SAMPLES = {1.0: (6, 4), 50.0: (3, 60)}  # rate -> sites measured, events each
PATH = ("IngestFunction", "RebuildShardFunction", "RebuildIndexFunction", "NotifyFunction")
WCU_PER_KEY, RCU_PER_KEY = 1000, 3000  # DynamoDB: per partition (and so per partition key), per second
FIFO_TPS, FIFO_HT_TPS = 300, 70_000  # SQS FIFO per API action: default; high throughput (us-east-1, non-batched)
LAMBDA_CONCURRENCY = 1000  # the account's default concurrency in a region


def per_event(t: Traffic, memory: dict[str, int]) -> dict[str, float]:
    """The dollars an event costs by line: the window's bill less what its scheduled runs would have cost had they
    visited no site, per event."""
    bill = dollars(t.usage, memory, {})
    fixed = dict.fromkeys(bill, 0.0)
    for name, n in t.runs.items():
        one = dollars({name: t.baseline[name]}, memory, {})
        for line in fixed:
            fixed[line] += one[line] * n
    return {line: (bill[line] - fixed[line]) / t.events for line in bill}


def visit_seconds(*measured: Traffic) -> dict[str, float]:
    """Billed seconds of one visit of a marked site of 1,000 pages, by scheduled function: the runs less as many
    runs that visited no site, over the sites they visited (all ``measured`` together)."""
    found = {}
    for name in JOBS:
        ran = [t for t in measured if t.runs[name]]
        visits = sum(t.visits[name] for t in ran)
        spent = sum(t.usage[name].billed_ms - t.runs[name] * t.baseline[name].billed_ms for t in ran) / 1000
        if visits:
            found[name] = max(0.0, spent) / visits
    return found


def marked_share(t: Traffic, name: str) -> float:
    """The share of the sites an hourly run of ``name`` finds marked, once every measured site has had events."""
    found = [visited for job, visited in t.steady if job == name]
    return sum(found) / len(found) / t.sites if found else 0.0


def timeouts() -> dict[str, int]:
    resources = load_template(TEMPLATE)["Resources"]
    return {name: int(resources[name]["Properties"]["Timeout"]) for name in JOBS}


def runs_to_visit(fixed_s: float, per_site_s: float, sites: int, timeout_s: int) -> int:
    """How many runs visit ``sites`` marked sites, each run stopping at ``TIME_SHARE`` of its timeout."""
    budget = TIME_SHARE * timeout_s - fixed_s
    return max(1, math.ceil(sites * per_site_s / budget)) if budget > 0 else 0


def fixed_hour(scale: dict[str, dict[str, Run]], marked: bool) -> float:
    """The stack's scheduled functions an hour at scale, in dollars: one run of each hourly function (with sites
    marked: each lists the sites) and 60 wake-ups (none holding changes)."""
    label = "one marked" if marked else "idle"
    hourly = sum(scale[label][name].dollars for name in HOURLY)
    return hourly + 60 * scale["idle"]["NotifyFunction"].dollars


def per_million(event: float, fixed_per_hour: float, rate: float) -> float:
    """Dollars per million events: what each costs, plus the fixed hour shared by the hour's events."""
    return (event + fixed_per_hour / (rate * 3600)) * 1e6


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else float("nan")


def ingest_processes(t: Traffic, rate: float) -> int:
    """The ingest function's concurrency at ``rate`` (Little's law on its billed seconds per event), at least 1."""
    return max(1, math.ceil(rate * t.usage["IngestFunction"].billed_ms / 1000 / t.events))


def limits(t: Traffic, own_s: dict[str, float], visit_s: dict[str, float], sites: int, fifo_ht: dict[str, bool],
           list_rcu: float, marks_rcu: float) -> list[tuple[str, str, float, float]]:  # fmt: skip
    """Each limit at ``t.rate``: (what, the arithmetic, how much of the limit is used, events/s that reach it)."""
    r, n = t.rate, t.events
    rows: list[tuple[str, str, float, float]] = []
    writes = sum(k for (_f, call), k in t.calls.items() if call in ("mark", "unmark", "set_cursor")) / n
    rows.append(("DynamoDB `sites#marks` writes", f"{writes:.2f} writes/event (1 unit each) x {r:g}/s = "
                 f"{writes * r:,.1f} of {WCU_PER_KEY:,}/s", writes * r / WCU_PER_KEY,
                 WCU_PER_KEY / writes))  # fmt: skip
    rows.append(("DynamoDB `sites#marks` reads", f"a run's Query of the marks, {marks_rcu:,.0f} units with all "
                 f"{sites:,} marked, in one second of {RCU_PER_KEY:,}", marks_rcu / RCU_PER_KEY, math.inf))  # fmt: skip
    gets = sum(k for (_f, call), k in t.calls.items() if call == "get_site") / n
    rows.append(("DynamoDB `sites` reads", f"{gets:.1f} GetItem/event x 0.5 unit x {r:g}/s + an hourly run's list "
                 f"({list_rcu:,.0f} units in a second) = {gets * 0.5 * r + list_rcu:,.0f} of {RCU_PER_KEY:,}/s",
                 (gets * 0.5 * r + list_rcu) / RCU_PER_KEY, (RCU_PER_KEY - list_rcu) / (gets * 0.5)))  # fmt: skip
    for queue, count in sorted(t.messages.items()):
        if not count or not queue.endswith("Queue") or queue == "IngestQueue":
            continue
        cap = FIFO_HT_TPS if fifo_ht[queue] else FIFO_TPS
        per = count / n
        mode = "high throughput" if fifo_ht[queue] else "not high throughput"
        rows.append((f"SQS {queue} SendMessage ({mode})", f"{per:.2f} messages/event x {r:g}/s = {per * r:,.1f} of "
                     f"{cap:,} calls/s", per * r / cap, cap / per))  # fmt: skip
    seconds = (sum(t.usage[f].billed_ms for f in PATH if f in t.usage) / 1000 - wake_up_seconds(t)) / n
    rows.append(("Lambda concurrency (event path)", f"{seconds:.3f} billed s/event x {r:g}/s = "
                 f"{seconds * r:,.1f} of {LAMBDA_CONCURRENCY:,}", seconds * r / LAMBDA_CONCURRENCY,
                 LAMBDA_CONCURRENCY / seconds))  # fmt: skip
    for name in HOURLY:
        if name == "ReconcileFunction":  # every site once a day, whatever the rate: its share of them an hour
            daily = sites / 24
            budget = TIME_SHARE * TIMEOUTS[name] - own_s[name]
            need = daily * visit_s.get(name, 0.0)
            rows.append((f"{name} within its hour", f"a 24th of the sites, {daily:,.0f} x "
                         f"{visit_s.get(name, 0) * 1000:.0f} ms = {need:,.0f} s of {budget:,.0f} s ({TIME_SHARE:.0%} "
                         f"of {TIMEOUTS[name]} s, less the list and the stack's own site)", need / budget,
                         math.inf))  # fmt: skip
            continue
        share = marked_share(t, name)  # of the sites, found marked by a run (so many of the stack's)
        marked = share * sites
        budget = TIME_SHARE * TIMEOUTS[name] - own_s[name]
        need = marked * visit_s.get(name, 0.0)
        # Sites marked grow with the rate until all are: the rate at which the marked ones fill a run's share
        reach = budget / visit_s[name] / sites * r / share if visit_s.get(name) and share else math.inf
        own = "its own work" if name != "ReconcileFunction" else "the list and the daily visits"
        rows.append((f"{name} within its hour", f"{share:.0%} of the sites marked: {marked:,.0f} x "
                     f"{visit_s.get(name, 0) * 1000:.0f} ms = {need:,.0f} s of {budget:,.0f} s ({TIME_SHARE:.0%} of "
                     f"{TIMEOUTS[name]} s, less {own})", need / budget, reach))  # fmt: skip
    processes = ingest_processes(t, r)
    cache = window(r, processes, sites)
    per_minute = cache["lists"] * r * 60 / processes  # listings a minute per process (at most one)
    rows.append((f"SiteCache, ingest ({processes} process{'es' * (processes > 1)})",
                 f"{r:g} hosts/s, mostly uncached: {cache['gets']:.2f} GetItem and {cache['lists']:.4f} lists of the "
                 f"sites per event ({per_minute:.2f} a minute per process, {list_rcu:,.0f} units each): past 20 "
                 "hosts a minute a process answers from its list, nothing is deferred", 0.0, math.inf))  # fmt: skip
    return rows


TIMEOUTS = timeouts()


def high_throughput() -> dict[str, bool]:
    resources = load_template(TEMPLATE)["Resources"]
    return {name: spec["Properties"].get("FifoThroughputLimit") == "perMessageGroupId"
            for name, spec in resources.items() if spec["Type"] == "AWS::SQS::Queue"}  # fmt: skip


def wake_up_seconds(t: Traffic) -> float:
    """The billed seconds of the window's wake-ups, as runs that visited no site (the stack's, not the events')."""
    return t.runs["NotifyFunction"] * t.baseline["NotifyFunction"].billed_ms / 1000


def idle_rows(idle: dict[str, float], pages: int, sites: int, list_rcu: float) -> list[str]:
    """The idle site's lines (``bench.idle_site.measure``)."""
    others = sum(
        idle[f"{name} runs that visited it n"] for name in ("SweepFunction", "UpkeepFunction", "NotifyFunction")
    )
    visit = (f"{idle['visit ms n']:.0f} ms billed, {idle['visit read units n']:.0f} read units, "
             f"{idle['visit S3 requests n']:.0f} S3 requests")  # fmt: skip
    return [
        f"**An idle site** ({pages:,} pages; a day of the scheduled functions at their cadence beside it, "
        f"`bench/idle_site.py`): the sweep, upkeep and wake-ups visited it {others:.0f} times, the reconciliation "
        f"{idle['ReconcileFunction runs that visited it n']:.0f} (its daily turn); "
        f"{idle['marks written in the day n']:.0f} marks written.",
        "",
        "| line | a month |",
        "|---|---:|",
        f"| DynamoDB storage: {idle['items n']:,.0f} items, {idle['DynamoDB bytes n'] / 1e6:.2f} MB billed "
        f"($0.25 per GB-month) | ${idle['DynamoDB storage']:.6f} |",
        f"| S3 storage: {idle['S3 bytes n'] / 1e3:.0f} KB of files ($0.023 per GB-month) | ${idle['S3 storage']:.7f} |",
        f"| the daily reconciliation visit: {visit}, x 30.4 days | ${idle['daily reconciliation visit']:.6f} |",
        f"| its item in the reconciliation's hourly list of the {sites:,} sites: its share of {list_rcu:,.0f} read "
        f"units, its parsing {idle['list ms n']:.1f} ms billed, x 730 | "
        f"${idle['its item in the hourly list of sites']:.7f} |",
        "| the register (no mark while idle) | $0 |",
        f"| **total** | **${idle['total']:.5f}** |",
        "",
        f"An idle site: ${idle['total']:.5f} a month ({idle['of which storage'] / idle['total']:.0%} of it storage), "
        f"${idle['total'] * sites:,.2f} a month for {sites:,} idle sites.",
        "",
    ]


def report(sites: int, pages: int) -> str:
    started = time.process_time()
    idle = idle_site.measure(pages, sites)
    scale = at_scale(sites)
    measured: list[Traffic] = []
    memory: dict[str, int] = {}
    for rate in RATES:
        made = stack()
        memory = made.driver.memory()
        sample, each = SAMPLES[rate]
        measured.append(traffic(made, rate, sample, each, sites, pages))
    cpu = time.process_time() - started
    site = SiteConfig.parse({"origin": "https://r50-0.example.net", "indexnow_key": "r50-0-example-net-key"})
    list_rcu = list_units([site_size(site)] * sites)
    marks_rcu = list_units([mark_size(ACTIVE, site.host)] * sites)
    visits = visit_seconds(*measured)
    # A run's own seconds at scale: with one site marked (it lists the sites); the reconciliation's daily visits
    # there are of empty trees: each is charged as the idle site's (1,000 pages) instead.
    empty_visit = {name: (scale["all marked"][name].billed_s - scale["one marked"][name].billed_s) / sites
                   for name in JOBS}  # fmt: skip
    daily = sites / 24
    own_s = {name: scale["one marked"][name].billed_s for name in JOBS}
    own_s["ReconcileFunction"] += daily * max(0.0, idle["visit ms n"] / 1000 - empty_visit["ReconcileFunction"])
    empty_dollars = (scale["all marked"]["ReconcileFunction"].dollars
                     - scale["one marked"]["ReconcileFunction"].dollars) / sites  # fmt: skip
    daily_dollars = daily * max(0.0, idle["daily reconciliation visit"] / (HOURS_PER_MONTH / 24) - empty_dollars)
    ht = high_throughput()
    day = time.strftime("%Y-%m-%d", time.gmtime())
    out = [
        f"Measured by `python -m bench.sites_scale` on {day}: one stack, {sites:,} sites added at run time of "
        f"{pages:,} pages each; the simulation's metered AWS through the real handlers in virtual time "
        f"({cpu:,.0f} s CPU to simulate; shared machine, 2 cores: durations are the meter's, CPU scaled to the "
        "memory setting plus a stated latency per call). Prices: us-east-1 list prices (bench/cost.py).",
        "",
        *idle_rows(idle, pages, sites, list_rcu),
    ]
    fixed_marked = fixed_hour(scale, True) + daily_dollars
    out += [
        f"**Cost per million events** spread evenly over the {sites:,} sites. Measured: a few sites of {pages:,} "
        "pages, each with its events as far apart as the rate gives every site, the hourly functions and the wake-ups "
        "at their cadence: what an event costs (its path, the marks it writes, the scheduled visits it causes; a "
        "run's cost when it visits no site taken out). Projected: the stack's scheduled runs at "
        f"{sites:,} sites (one run of each hourly function listing the sites, 60 wake-ups: "
        f"${fixed_marked:.4f} an hour, measured below), shared by the hour's events. Not counted: crawlers "
        "(CloudFront), storage, the idle stack's fixed $2.51 a month (docs/operations.md).",
        "",
        "| rate | each site's events | measured | Lambda | SQS | DynamoDB | S3 | CloudWatch | event (measured) | "
        "stack's runs (projected) | **per million** | marks written / event | scheduled visits / event | "
        "config reads / event | freshness p99 | within 60 s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in measured:
        bill = per_event(t, memory)
        fixed = fixed_marked / (t.rate * 3600)
        marks = sum(n for (_f, call), n in t.calls.items() if call in ("mark", "unmark")) / t.events
        reads = sum(n for (_f, call), n in t.calls.items() if call == "get_site") / t.events
        visits_per = sum(t.visits[name] for name in JOBS) / t.events
        fresh = p99(t.freshness)
        ok = "yes" if fresh <= 60 and not t.unshown else "**no**"
        cells = " | ".join(f"${bill[line] * 1e6:.2f}" for line in ("Lambda", "SQS", "DynamoDB", "S3", "CloudWatch"))
        out.append(f"| {t.rate:g}/s | one every {sites / t.rate:,.0f} s | {t.sites} sites x {t.events // t.sites}, "
                   f"{t.window_s / 3600:.1f} h | {cells} | ${bill['total'] * 1e6:.2f} | ${fixed * 1e6:.2f} | "
                   f"**${per_million(bill['total'], fixed_marked, t.rate):.2f}** | {marks:.2f} | {visits_per:.3f} | "
                   f"{reads:.1f} | {fresh:.1f} s | {ok} |")  # fmt: skip
    out += [
        "",
        "Each event here is alone in its ingest batch (its site's events are that far apart, and only a few sites "
        "are measured); at the full rate a batch holds up to 100 events of as many sites, so the ingest's request, "
        "receive and platform log line (under $0.70 per million together) are overstated. Config reads: each "
        "function's processes read a site's item once per 60 s; an event of a site seen 200 s or more ago is read "
        "by each function it passes (ingest, the rebuild, the index rebuild, the notifier): 0.5 read unit each. "
        "Freshness and config reads are those of the few sites measured: at "
        f"{sites:,} sites a function's process meets more than 20 new hosts a minute, and then reads the list of "
        "sites once a minute and answers every host from it (below), so no event waits for its site's item.",
        "",
        f"**The scheduled functions at {sites:,} sites** (registered with empty trees: the runs' own costs do not "
        "depend on the pages; a visit of a site of 1,000 pages is the traffic's measurement above, a run that "
        f"visited marked sites less one that visited none, per site). Listing the {sites:,} site items: one Query, "
        f"{list_rcu:,.0f} read units; the marks of one kind when all {sites:,} are marked: {marks_rcu:,.0f}.",
        "",
        "| function | timeout | none marked: billed s, read units | one marked (lists the sites) | "
        f"all {sites:,} marked (empty trees) | a visit, {pages:,}-page site | runs to visit {sites:,} marked sites |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in JOBS:
        idle_run, one, every = (scale[label][name] for label in ("idle", "one marked", "all marked"))
        per_site = visits.get(name, empty_visit[name])
        runs: int | str = runs_to_visit(own_s[name], per_site, sites, TIMEOUTS[name])
        if name == "ReconcileFunction":
            runs = "24 (a share each hour, busy or idle)"
        label = "wake-up (NotifyFunction)" if name == "NotifyFunction" else name
        out.append(f"| {label} | {TIMEOUTS[name]} s | {idle_run.billed_s:.3f} s, {idle_run.rru:,.0f} | "
                   f"{one.billed_s:.3f} s, {one.rru:,.0f} | {every.billed_s:,.1f} s, {every.rru:,.0f} | "
                   f"{per_site * 1000:.0f} ms{'' if name in visits else ' (empty tree)'} | {runs} |")  # fmt: skip
    out += [
        "",
        "The sweep, upkeep and wake-up read the register (one Query of the marks) and each marked site's item "
        "through the sites' cache; the reconciliation also lists the sites every hour, for its day's share of "
        "visits (the adapter parses each item, `SiteConfig.parse`: about 0.02 ms of CPU an item). "
        "None marked: the sweep, upkeep and wake-up visit the stack's own site only; the reconciliation also "
        "visits its hour's share of the idle sites (1/24 of them). Every run "
        f"stops at {TIME_SHARE:.0%} of its time and the next one goes on from its cursor; a wake-up that takes more "
        "than its minute delays the next (one FIFO group).",
        "",
        "**The first limit met**, at each rate (used: the share of the limit the rate takes; reached at: the "
        "events a second spread over the sites at which it is met). DynamoDB: 1,000 write and 3,000 read units a "
        "second per partition key ([DynamoDB partition key design](https://docs.aws.amazon.com/amazondynamodb/"
        "latest/developerguide/bp-partition-key-design.html)). SQS FIFO: 300 transactions a second per API action "
        "without high throughput, 3,000 messages in batches of 10 ([Troubleshoot FIFO throttling](https://docs.aws."
        "amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/troubleshooting-fifo-throttling-issues.html)); "
        "with high throughput (`FifoThroughputLimit: perMessageGroupId`, `DeduplicationScope: messageGroup`) "
        "70,000 non-batched a second per API action in us-east-1, less in other Regions ([SQS message quotas](https://docs.aws.amazon.com/"
        "AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html)). Lambda: 1,000 concurrent executions "
        "a region by default. SiteCache: 20 uncached hosts per 60 s per process are read one by one "
        "(wiring/sites.py); past that, the process lists the sites (at most once a minute) and answers from the list.",
        "",
    ]
    first: list[str] = []
    for t in measured:
        rows = limits(t, own_s, visits, sites, ht, list_rcu, marks_rcu)
        rows.sort(key=lambda row: row[3])
        hard = [row for row in rows if "within its hour" not in row[0]]
        first.append(f"at {t.rate:g}/s: {hard[0][0]} (reached at {hard[0][3]:,.1f} events/s; {hard[1][0]} next, at "
                     f"{hard[1][3]:,.1f})")  # fmt: skip
        out += [f"At {t.rate:g} event{'s' * (t.rate != 1)}/s:", "",
                "| limit | arithmetic | used | reached at (events/s) |", "|---|---|---:|---:|"]  # fmt: skip
        for what, arithmetic, used, reach in rows:
            shown = "never" if math.isinf(reach) else f"{reach:,.1f}"
            out.append(f"| {what} | {arithmetic} | {used:.1%} | {shown} |")
        out.append("")
    lookups = [(rate, p, window(rate, p, sites)) for rate in RATES for p in (1, math.ceil(rate * 3))]
    out += [
        "The SiteCache's window, driven with the hosts of evenly spread sites (`window`: events dealt in turn to the "
        "processes of one function, each its own cache):",
        "",
        "| rate | processes | GetItem / event | lists / event |",
        "|---:|---:|---:|---:|",
        *[f"| {rate:g}/s | {p} | {w['gets']:.2f} | {w['lists']:.4f} |" for rate, p, w in lookups],
        "",
        "Reading: with events spread over this many sites, every event names a host its process has not read "
        "within 60 s, so each function's processes read one site item per event (GetItem, 0.5 unit) for their "
        "first 20 new hosts a minute, then list the sites once that minute and answer the rest from the list "
        "(lists per event above 0); the rebuild, the index rebuild and the notifier read the site too, each in "
        "its own processes. The first limit that "
        "fails an event is " + "; ".join(first) + ". The hourly functions' limit only delays: a run that cannot "
        "visit every marked site within its share of the timeout leaves a cursor, so each marked site is visited "
        "every few hours instead of every hour (the runs needed in the table above), and a site's active mark "
        "(deleted by the sweep's visit) lives that much longer. The marks' writes per event are this simulation's "
        "(one process a function): a site's active mark is written at most once per 10 minutes per ingest "
        "process, so with P ingest processes up to min(rate, 10,000 x P / 600) writes a second.",
    ]
    return "\n".join(out).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--write", type=Path, help="replace the block of this Markdown file it writes")
    args = parser.parse_args(argv)
    out = report(args.sites, args.pages)
    print(out)
    if args.write:
        write_block(args.write, BEGIN, END, out, "Many sites")
    return 0


if __name__ == "__main__":
    sys.exit(main())
