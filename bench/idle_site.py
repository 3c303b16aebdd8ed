"""What an idle site added at run time costs (issue 32: "an idle site costs nothing but its storage").

The scheduled functions visit only the sites with something due (service/site_marks.py): the hourly sweep and
upkeep the sites marked active, the one-minute wake-up the sites marked as holding changes, the hourly
reconciliation those marked active plus every site once a day (in the hour its host's digest names). A site
nobody changed for an hour loses its mark to the sweep; from then on it is visited by the reconciliation alone,
once a day, and the register holds nothing of it.

Measured on the simulation's metered AWS (bench/meter.py, bench/site_register.py) through the real handlers: a
site of ``--pages`` pages is built, then a day of the hourly functions and of the wake-ups runs at their cadence in
virtual time, metered. Its lines, a month (730 h): its storage at list prices (its DynamoDB items with the 100
bytes DynamoDB adds to each, its objects in S3), its daily reconciliation visit (the reconciliation run that
visited it, less the mean of those that did not), its item read by the hourly list of sites (the reconciliation
lists them every hour: its share of that Query's read units), and the register's writes for it while idle.

python -m bench.idle_site [--pages 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.cost import DDB_RRU, HOURS_PER_MONTH, LAMBDA_GB_S, cpu_scale, dollars
from bench.meter import Meter, manifest_item_size
from bench.site_register import RegisterCalls, list_units, metered, site_size
from bench.traffic import Driver, Scenario
from bench.usage import Usage
from sitemap_updater.adapters.sites import site_from_item, site_item
from sitemap_updater.core.site_keys import object_prefix, pk_prefix
from sitemap_updater.handlers import notify, reconcile, sweep, upkeep
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.service.sites import add_site
from sitemap_updater.sites import SiteConfig
from sitemap_updater.wiring.pipeline import current_notifiers, use_pipeline
from sitemap_updater.wiring.sites import SiteCache, Sites
from tests.sim.fakes import FakeStore
from tests.sim.world import Config, Simulation

ORIGIN = "https://shop.example.de"
WAKE_UP = json.dumps({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})
DDB_GB_MONTH = 0.25  # DynamoDB Standard table class, storage per GB-month (us-east-1)
S3_GB_MONTH = 0.023  # S3 Standard, first 50 TB, per GB-month (us-east-1)
ITEM_OVERHEAD = 100  # bytes DynamoDB adds to each item for its storage bill
HOURLY: dict[str, Callable[[dict[str, Any], Any], Any]] = {
    "SweepFunction": sweep.handler,
    "UpkeepFunction": upkeep.handler,
    "ReconcileFunction": reconcile.handler,
}
JOBS = (*HOURLY, "NotifyFunction")


class Context(LocalContext):
    """A scheduled invocation's context: its time never runs out here (a run's length is the meter's, and how
    many runs a loop needs is worked out from it, bench/sites_scale.py)."""

    def get_remaining_time_in_millis(self) -> int:
        return 10**9


@dataclass
class Stack:
    """One simulated stack, metered, with the register's calls charged and the sites read through one cache per
    function (each function's processes read a site once per 60 s on their own)."""

    sim: Simulation
    meter: Meter
    driver: Driver
    calls: RegisterCalls
    notifiers: Notifiers
    sites: dict[str, Sites] = field(default_factory=dict)

    def use(self, function: str) -> None:
        """Run the next invocation as a process of ``function`` (its own cache of sites)."""
        sim = self.sim
        found = self.sites.get(function)
        if found is None:
            found = self.sites[function] = Sites(sim.pipeline, SiteCache(sim.directory, lambda: sim.clock.now))
        use_pipeline(sim.pipeline, self.notifiers, found)


def stack() -> Stack:
    warnings.simplefilter("ignore")
    sim = Simulation(Config(0, max_urls=1000, max_files_per_index=50_000))
    meter = Meter(sim)
    driver = Driver(sim, meter)
    made = Stack(sim, meter, driver, metered(meter, sim.directory), current_notifiers())  # the driver's
    for name, function in list(driver.functions.items()):
        handler = function.handler

        def run(event: dict[str, Any], context: Any, _h: Any = handler, _n: str = name) -> Any:
            made.use(_n)
            return _h(event, context)

        driver.functions[name] = type(function)(**{**vars_of(function), "handler": run})
    driver.ingest = driver.functions[driver.ingest.name]
    driver.fifo = [driver.functions[f.name] for f in driver.fifo]
    return made


def vars_of(function: Any) -> dict[str, Any]:
    return {name: getattr(function, name) for name in function.__dataclass_fields__}


def page_bodies(origin: str, pages: int) -> list[str]:
    return [json.dumps({"url": f"{origin}/p/{i}", "type": "upsert", "occurred_at": "2026-11-20T10:00:00Z",
                        "lastmod": "2026-11-20", "version": 1}) for i in range(pages)]  # fmt: skip


def add_sites(made: Stack, origins: list[str], pages: int) -> None:
    """Add each site (with an IndexNow key when the stack has IndexNow) and send its pages, 100 a second."""
    sim = made.sim
    for origin in origins:
        key = origin.removeprefix("https://").replace(".", "-") + "-key" if sim.pipeline.settings.indexnow_key else ""
        add_site(sim.pipeline, sim.directory, SiteConfig.parse({"origin": origin, "indexnow_key": key}))
    bodies = [body for origin in origins for body in page_bodies(origin, pages)]
    with contextlib.redirect_stdout(made.meter.logs):
        made.driver.run(Scenario("their pages", 100.0, len(bodies)), bodies)


def scheduled(made: Stack, name: str) -> Any:
    """One run of a scheduled function through its handler, metered (the wake-up: the notifier with the schedule's
    record)."""
    memory = made.driver.functions[name].memory_mb
    record = {"messageId": "wake-up", "receiptHandle": "wake-up#1", "body": WAKE_UP, "messageAttributes": {},
              "attributes": {"MessageGroupId": "notify", "ApproximateReceiveCount": "1"}, "md5OfBody": "0" * 32,
              "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:notify.fifo",
              "awsRegion": "us-east-1"}  # fmt: skip
    event = {"Records": [record]} if name == "NotifyFunction" else {}
    handler: Callable[[dict[str, Any], Any], Any] = HOURLY.get(name, notify.handler)
    made.use(name)
    with contextlib.redirect_stdout(made.meter.logs):
        result, _ = made.meter.invoke(
            name, lambda: handler(event, Context(name, memory_limit_in_mb=memory)), cpu_scale(memory)
        )
    return result


def tick(made: Stack, at: int, wake_ups: bool) -> list[tuple[str, Any]]:
    """The scheduled functions due at virtual second ``at`` (a multiple of 60): the wake-up every minute (when
    the stack has IndexNow: the template's NotifyWakeUp), the hourly ones on the hour; what each returned."""
    made.sim.clock.now = at
    names = ["NotifyFunction"] * wake_ups + list(HOURLY) * (at % 3600 == 0)
    return [(name, scheduled(made, name)) for name in names]


def storage(store: FakeStore, objects: dict[str, int], meter: Meter) -> tuple[int, int, int]:
    """A site's DynamoDB items (count, bytes billed) and its objects' bytes in S3."""
    sizes = [meter._page_size(page, store) for page in store.pages.values()]
    for section, items in store.manifest.items():
        sizes += [manifest_item_size(section, 0, sk[17:], store.entry_ranks.get((section, sk), ""), len(record))
                  for sk, record in items.items()]  # fmt: skip
    sizes += [meter._file_size(f) for f in store.file_records.values()]
    count = store.item_count()
    billed = sum(sizes) + 60 * (count - len(sizes)) + ITEM_OVERHEAD * count
    return count, billed, sum(objects.values())


def measure(pages: int, sites_in_stack: int = 10_000) -> dict[str, float]:
    """A month of one idle site, in dollars by line (and a few counts, keys ending in " n")."""
    made = stack()
    sim, meter = made.sim, made.meter
    add_sites(made, [ORIGIN], pages)
    host = ORIGIN.removeprefix("https://")
    wake_ups = bool(sim.pipeline.settings.indexnow_key)
    start = (int(sim.clock.now) // 3600 + 1) * 3600
    for at in range(start, start + 7200, 60):  # two hours: past every hold and grace; the sweep deletes its mark
        tick(made, at, wake_ups)
    marks_before = made.calls.of("mark")
    meter.usage = {}
    store = sim.store.for_site(pk_prefix(host))
    touched = _count_calls(store)
    runs: dict[str, list[tuple[bool, Usage]]] = {name: [] for name in JOBS}
    for at in range(start + 7200, start + 7200 + 86_400, 60):  # a day, metered run by run
        sim.clock.now = at
        for name in ["NotifyFunction"] * wake_ups + list(HOURLY) * (at % 3600 == 0):
            before = touched[0]
            scheduled(made, name)
            runs[name].append((touched[0] > before, meter.usage.pop(name)))
    memory = made.driver.memory()
    visited = {name: sum(1 for seen, _ in found if seen) for name, found in runs.items()}
    with_it = [u for seen, u in runs["ReconcileFunction"] if seen]
    without = [u for seen, u in runs["ReconcileFunction"] if not seen]
    visit = _difference(with_it, without)
    bill = dollars({"ReconcileFunction": visit}, memory, {})
    bill["Lambda"] = visit.billed_ms / 1000 * memory["ReconcileFunction"] / 1024 * LAMBDA_GB_S  # no call of its own
    days = HOURS_PER_MONTH / 24
    count, ddb_bytes, s3_bytes = storage(store, _objects(sim, host), meter)
    site = sim.directory.sites[host]
    listed = list_units([site_size(site)] * sites_in_stack) / sites_in_stack  # its share of one Query
    list_s = list_share_s(site, memory["ReconcileFunction"])
    parsed = list_s * memory["ReconcileFunction"] / 1024 * LAMBDA_GB_S
    month = {
        "DynamoDB storage": (ddb_bytes + site_size(site) + ITEM_OVERHEAD) / 1e9 * DDB_GB_MONTH,
        "S3 storage": s3_bytes / 1e9 * S3_GB_MONTH,
        "daily reconciliation visit": bill["total"] * days,
        "its item in the hourly list of sites": (listed * DDB_RRU + parsed) * HOURS_PER_MONTH,
        "register": 0.0,
    }
    month["total"] = sum(month.values())
    month["of which storage"] = month["DynamoDB storage"] + month["S3 storage"]
    return month | {
        "items n": count, "DynamoDB bytes n": ddb_bytes, "S3 bytes n": s3_bytes,
        "visit ms n": visit.billed_ms, "visit read units n": visit.rru,
        "visit S3 requests n": sum(visit.s3.values()), "list read units n": listed,
        "list ms n": list_s * 1000,
        **{f"{name} runs that visited it n": float(v) for name, v in visited.items()},
        "marks written in the day n": made.calls.of("mark") - marks_before,
    }  # fmt: skip


def list_share_s(site: SiteConfig, memory_mb: int, times: int = 600) -> float:
    """Billed seconds ``site`` adds to a run that lists the sites: the adapter's parsing of its item and its host
    (``due_sites``), CPU scaled to ``memory_mb``; timed over as many sites like it on other hosts (a host seen
    before would find its regular expressions in ``re``'s cache, which 10,000 hosts overflow)."""
    items = [site_item(site.model_copy(update={"origin": f"https://n{i}.{site.host}"})) for i in range(times)]
    started = time.process_time()
    for item in items:
        _ = site_from_item(item).host
    return (time.process_time() - started) / times * cpu_scale(memory_mb)


def _difference(with_it: list[Usage], without: list[Usage]) -> Usage:
    """The mean of ``with_it`` less the mean of ``without`` (a run's work for one site more)."""
    found = Usage()
    if not with_it:
        return found
    for name in ("billed_ms", "rru", "wru"):
        mean = sum(getattr(u, name) for u in with_it) / len(with_it)
        base = sum(getattr(u, name) for u in without) / max(1, len(without))
        setattr(found, name, max(0.0, mean - base))
    found.billed_ms = round(found.billed_ms)
    for kind in ("GET", "LIST", "PUT"):
        mean = sum(u.s3[kind] for u in with_it) / len(with_it)
        base = sum(u.s3[kind] for u in without) / max(1, len(without))
        found.s3[kind] = max(0, round(mean - base))
    found.log_bytes = max(0, sum(u.log_bytes for u in with_it) // len(with_it)
                          - sum(u.log_bytes for u in without) // max(1, len(without)))  # fmt: skip
    return found


def _count_calls(store: FakeStore) -> list[int]:
    """A counter of the DynamoDB calls made on ``store`` from now on (a run that made none did not visit it)."""
    count = [0]
    call = store._call

    def counted(name: str, work: Any) -> Any:
        count[0] += 1
        return call(name, work)

    store._call = counted  # type: ignore[method-assign,assignment]
    return count


def _objects(sim: Simulation, host: str) -> dict[str, int]:
    prefix = object_prefix(host)
    return {name: len(o.data) for name, o in sim.s3.objects.items() if name.startswith(prefix)}


def lines(month: dict[str, float]) -> list[str]:
    return [f"{line} ${v:.7f}" for line, v in month.items() if not line.endswith(" n")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1000)
    args = parser.parse_args(argv)
    month = measure(args.pages)
    print(f"an idle site of {args.pages:,} pages, a month (730 h): " + ", ".join(lines(month)))
    print("calls: " + ", ".join(
        f"{line.removesuffix(' n')} {v:,.0f}" for line, v in month.items() if line.endswith(" n")))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
