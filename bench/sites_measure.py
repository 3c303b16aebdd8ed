"""The measurements of bench/sites_scale.py (many sites in one stack), on the simulation's metered AWS through the
real handlers in virtual time (``bench/idle_site.py``'s ``Stack``: one cache of sites per function):

- ``traffic``: a few sites of 1,000 pages, each with its events as far apart as a rate spread over the stack's sites
  gives every site, the hourly functions and the one-minute wake-up at their cadence, all metered;
- ``quiet_runs``: a run of each scheduled function that visits no site added at run time (the stack's share);
- ``at_scale``: the scheduled functions with many sites registered (empty trees), none, one and all marked;
- ``window``: the branch's ``SiteCache`` driven with the hosts evenly spread sites give a function's processes.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from bench import idle_site
from bench.cost import dollars
from bench.idle_site import HOURLY, JOBS, Stack, add_sites, page_bodies, scheduled, stack
from bench.traffic import Scenario, changed_bodies
from bench.traffic import receive as fifo_receive
from bench.usage import Usage
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.site_keys import MARKS_PK, SITES_PK
from sitemap_updater.service.site_marks import ACTIVE, HELD
from sitemap_updater.sites import SiteConfig
from sitemap_updater.wiring.sites import SiteCache
from tests.sim.fakes import Message, SimQueueState


@dataclass
class Traffic:
    """One rate, measured on ``sites`` sites: its events, its usage by function, the scheduled runs."""

    rate: float
    sites: int
    events: int
    window_s: float
    usage: dict[str, Usage]
    baseline: dict[str, Usage]  # a run of each scheduled function that visited no site
    runs: Counter[str]
    visits: Counter[str]  # sites (not the stack's own) visited by each scheduled function
    calls: Counter[tuple[str, str]]  # register calls in the window: (function, call)
    messages: Counter[str]  # messages sent to each queue in the window
    freshness: list[float]
    unshown: int
    key_units: dict[tuple[str, str], float] = field(default_factory=dict)  # (pk, read/write) -> units
    # Sites visited by each hourly run once every measured site has had its first event: (function, visited)
    steady: list[tuple[str, int]] = field(default_factory=list)


def window(rate: float, processes: int, sites: int, seconds: float = 600.0, unknown_reads: int | None = None
           ) -> dict[str, float]:  # fmt: skip
    """Events at ``rate`` a second on ``sites`` evenly spread sites, dealt in turn to ``processes`` processes of one
    function, each with its own ``SiteCache`` on a virtual clock: the config reads (GetItem, the list of sites)
    per event."""
    hosts = [f"s{i:05d}.example.net" for i in range(sites)]
    items = {host: SiteConfig.parse({"origin": f"https://{host}"}) for host in hosts}
    random.Random(5).shuffle(hosts)
    now = [0.0]

    class Directory:  # the SiteDirectory calls a cache makes
        gets = lists = 0

        def get_site(self, host: str) -> SiteConfig | None:
            Directory.gets += 1
            return items.get(host)

        def list_sites(self) -> list[SiteConfig]:
            Directory.lists += 1
            return list(items.values())

    kwargs: dict[str, Any] = {} if unknown_reads is None else {"unknown_reads": unknown_reads}
    caches = [SiteCache(Directory(), lambda: now[0], **kwargs) for _ in range(processes)]  # type: ignore[arg-type]
    events = int(rate * seconds)
    for i in range(events):
        now[0] = i / rate
        assert caches[i % processes].get(hosts[i % sites]) is not None  # every site's event is routed, none deferred
    return {"events": events, "gets": Directory.gets / events, "lists": Directory.lists / events}


def traffic(made: Stack, rate: float, sites: int, each: int, total_sites: int, pages: int) -> Traffic:
    """Events at ``rate`` a second spread over ``total_sites``, measured on ``sites`` sites of ``pages`` pages."""
    sim, meter, driver = made.sim, made.meter, made.driver
    origins = [f"https://r{int(rate)}-{k}.example.net" for k in range(sites)]
    add_sites(made, origins, pages)
    wake_ups = bool(sim.pipeline.settings.indexnow_key)
    at = (int(sim.clock.now) // 3600 + 1) * 3600
    for minute in range(at, at + 7200, 60):  # two quiet hours: their marks go
        idle_site.tick(made, minute, wake_ups)
    baseline = quiet_runs(made, at + 7200)
    gap = total_sites / rate
    rng = random.Random(int(rate))
    timed: list[tuple[float, str]] = []
    for k, origin in enumerate(origins):
        picks = rng.sample(range(pages), each)
        bodies = changed_bodies(page_bodies(origin, pages), picks, 2, "2026-11-19")
        timed += [(k * gap / sites + j * gap, body) for j, body in enumerate(bodies)]
    timed.sort(key=lambda t: t[0])
    start = sim.clock.now + 3600.0  # as Driver.run begins
    end = start + each * gap
    ticks = [float(t) for t in range(math.ceil(start / 60) * 60, int(end), 60)]
    runs: Counter[str] = Counter()
    visits: Counter[str] = Counter()
    steady: list[tuple[str, int]] = []
    calls_before = Counter(made.calls)
    units_before = dict(meter.units_by_key)
    queues_before = {name: q.counter for name, q in sim.queues.items()}

    def run_ticks(upto: float) -> None:
        while ticks and ticks[0] <= upto:
            minute = ticks.pop(0)
            saved, sim.clock.now = sim.clock.now, minute
            names = ["NotifyFunction"] * wake_ups + list(HOURLY) * (minute % 3600 == 0)
            for name in names:
                listed = made.calls.of("list_sites")
                usage, meter.usage = meter.usage, {}
                result = scheduled(made, name)
                used = meter.usage[name]
                meter.usage = usage
                meter.usage.setdefault(name, Usage()).add(used)
                if name == "NotifyFunction":
                    visited = int(made.calls.of("list_sites") > listed)  # it lists the sites only when one holds
                else:
                    visited = int(result.get("sites", 1)) - 1
                runs[name] += 1
                visits[name] += visited
                if minute >= start + gap and name in HOURLY:
                    steady.append((name, visited))
            sim.clock.now = max(saved, sim.clock.now)

    def receive(queue: SimQueueState, limit: int, now: float) -> list[Message]:
        run_ticks(now)
        return fifo_receive(queue, limit, now)

    with contextlib.redirect_stdout(meter.logs), mock.patch("bench.traffic.receive", receive):
        done = driver.run(
            Scenario(f"{rate:g} events/s", rate, len(timed)), [b for _, b in timed], [t for t, _ in timed]
        )
        run_ticks(end)
    calls = Counter({k: n - calls_before.get(k, 0) for k, n in made.calls.items() if n - calls_before.get(k, 0)})
    units = {k: v - units_before.get(k, 0.0) for k, v in meter.units_by_key.items() if k[0] in (MARKS_PK, SITES_PK)}
    messages = Counter({name: q.counter - queues_before[name] for name, q in sim.queues.items()})
    return Traffic(rate, sites, len(timed), end - start, done.usage, baseline, runs, visits, calls, messages,
                   done.freshness_s, done.unshown, units, steady)  # fmt: skip


def quiet_runs(made: Stack, hour: int) -> dict[str, Usage]:
    """A run of each scheduled function that visits no site added at run time (none marked; the reconciliation in
    an hour that is no site's daily turn), from virtual second ``hour`` on: the stack's share of every run."""
    found: dict[str, Usage] = {}
    meter = made.meter
    while len(found) < len(JOBS):
        made.sim.clock.now = hour
        for name in JOBS:
            if name in found:
                continue
            listed = made.calls.of("list_sites")
            usage, meter.usage = meter.usage, {}
            result = scheduled(made, name)
            used, meter.usage = meter.usage[name], usage
            visited = made.calls.of("list_sites") > listed if name == "NotifyFunction" else result["sites"] > 1
            if not visited:
                found[name] = used
        hour += 3600
    return found


@dataclass
class Run:
    """One run of a scheduled function at scale: billed seconds, read and write units, sites visited."""

    billed_s: float
    rru: float
    wru: float
    visited: int
    dollars: float


def at_scale(sites: int) -> dict[str, dict[str, Run]]:
    """Each scheduled function run once with ``sites`` sites registered (empty trees): none marked ("idle"), one
    marked ("one marked": the list of sites is read), all marked within the hour ("all marked")."""
    made = stack()
    sim, meter = made.sim, made.meter
    hosts = [f"s{i:05d}.example.net" for i in range(sites)]
    for host in hosts:
        sim.directory.put_site(SiteConfig.parse({"origin": f"https://{host}"}))
    memory = made.driver.memory()
    found: dict[str, dict[str, Run]] = {}
    hour = (int(sim.clock.now) // 3600 + 1) * 3600

    def each(label: str) -> None:
        for name in JOBS:
            meter.usage = {}
            result = scheduled(made, name)
            used = meter.usage[name]
            visited = int(result.get("sites", 1)) - 1 if name != "NotifyFunction" else -1
            bill = dollars({name: used}, memory, {})["total"]
            found.setdefault(label, {})[name] = Run(used.billed_ms / 1000, used.rru, used.wru, visited, bill)

    sim.clock.now = hour
    each("idle")
    now = to_micros(sim.pipeline.clock())
    sim.directory.marked[(ACTIVE, hosts[0])] = now - 600_000_000
    sim.directory.marked[(HELD, hosts[0])] = now - 30_000_000
    each("one marked")
    for host in hosts:
        sim.directory.marked[(ACTIVE, host)] = now - 600_000_000
        sim.directory.marked[(HELD, host)] = now - 30_000_000
    each("all marked")
    return found
