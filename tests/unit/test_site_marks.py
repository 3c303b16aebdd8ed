"""The scheduled functions visit only the sites with something due (service/site_marks.py): an idle site costs
them nothing; a site with work is visited until that work is done; a run out of time leaves the rest to the next."""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any, cast

import pytest

from sitemap_updater.handlers import notify as notify_handler
from sitemap_updater.handlers import reconcile as reconcile_handler
from sitemap_updater.handlers import sweep as sweep_handler
from sitemap_updater.handlers import upkeep as upkeep_handler
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.site_marks import (
    ACTIVE,
    CLEAR_AFTER_S,
    HELD,
    TIME_SHARE,
    TOUCH_EVERY_S,
    Deadline,
    Due,
    SiteMarks,
    clear_if_quiet,
    daily_turn,
    visit,
)
from sitemap_updater.service.sites import begin_removal, finish_removal
from sitemap_updater.wiring.pipeline import current_sites, use_pipeline
from sitemap_updater.wiring.sites import SiteCache, site_pipeline
from tests.sim.fakes import FakeSites
from tests.unit.test_sites import DE, FR, NOW, Stack, upsert

WAKE_UP = json.dumps({"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})


class Clocked(Stack):
    """A stack whose functions' clock moves with ``self.clock`` (virtual seconds after NOW)."""

    def __init__(self) -> None:
        super().__init__()
        self.pipeline = replace(self.pipeline, clock=lambda: NOW + timedelta(seconds=self.clock.now))

    def hourly(self) -> dict[str, dict[str, Any]]:
        return {
            name: cast(dict[str, Any], job.handler({}, LocalContext(name)))
            for name, job in (("sweep", sweep_handler), ("upkeep", upkeep_handler), ("reconcile", reconcile_handler))
        }


@pytest.fixture
def stack() -> Iterator[Clocked]:
    made = Clocked()
    use_pipeline(made.pipeline)
    yield made
    use_pipeline(None)


def test_an_idle_site_is_visited_by_no_hourly_function_and_its_wake_ups_by_none(stack: Clocked) -> None:
    """Given two sites added at run time, one with pages and one idle since it was added"""
    stack.add(DE, indexnow_key="de-key-00000001")
    stack.add(FR, indexnow_key="fr-key-00000001")
    stack.send(upsert(f"{DE}/a"))
    stack.drain()
    # When the hourly functions and a wake-up run
    runs = stack.hourly()
    record = {"messageId": "w", "body": WAKE_UP, "attributes": {}}
    notify_handler.handler({"Records": [record]}, LocalContext("notify"))
    # Then they visited the stack's own site and the site with pages, never the idle one
    assert runs["sweep"]["sites"] == runs["upkeep"]["sites"] == 2
    assert set(stack.directory.marks(ACTIVE)) == {"www.example.de"}
    assert stack.directory.marks(HELD) == {}


def test_each_site_is_reconciled_once_a_day_busy_or_idle(stack: Clocked) -> None:
    stack.add(FR)
    stack.add(DE)
    runs = []
    for hour in range(48):
        stack.send(upsert(f"{DE}/p{hour}", at=f"2026-11-21T{hour % 24:02d}:00:00Z"))  # DE busy every hour
        stack.drain()
        runs.append(stack.hourly())
        stack.clock.now += 3600
    assert all(run["sweep"]["sites"] == run["upkeep"]["sites"] == 2 for run in runs)  # DE marked, FR idle
    assert sum(run["reconcile"]["sites"] - 1 for run in runs[:24]) == 2  # beside the stack's own: each site once
    assert sum(run["reconcile"]["sites"] - 1 for run in runs[24:]) == 2


def test_a_site_is_visited_until_it_is_quiet_for_an_hour_and_again_from_its_next_event(stack: Clocked) -> None:
    stack.add(DE)
    stack.send(upsert(f"{DE}/a"))
    stack.drain()
    # An hour after its mark was written, not more: still visited
    stack.clock.now += CLEAR_AFTER_S
    assert stack.hourly()["sweep"]["unmarked"] == 0
    # Past it, with nothing left to do for it: no longer visited
    stack.clock.now += 1
    assert stack.hourly()["sweep"]["unmarked"] == 1
    assert stack.hourly()["sweep"]["sites"] == stack.hourly()["upkeep"]["sites"] == 1
    # Its next event marks it again
    stack.send(upsert(f"{DE}/b", at="2026-11-21T11:00:00Z"))
    assert stack.hourly()["sweep"]["sites"] == 2


def test_a_site_with_an_outbox_open_keeps_its_mark_until_the_sweep_has_sent_it(stack: Clocked) -> None:
    """An ingest batch still running (its outbox too young to sweep) or dead (swept): the mark goes only after."""
    site = stack.add(DE)
    stack.send(upsert(f"{DE}/a"))
    stack.drain()
    pipeline = site_pipeline(stack.pipeline, site)
    stack.clock.now += 3 * CLEAR_AFTER_S
    now_us = int(pipeline.clock().timestamp() * 1_000_000)
    pipeline.store.open_outbox(f"{now_us:016x}-running", [f"{DE}/a"])
    run = stack.hourly()["sweep"]
    assert (run["requeued"], run["unmarked"]) == (0, 0)  # too young to send: kept, so a later run finds it
    assert set(stack.directory.marks(ACTIVE)) == {"www.example.de"}
    stack.clock.now += 3 * CLEAR_AFTER_S  # the batch died: its outbox is swept (closed), and then the site is quiet
    assert stack.hourly()["sweep"]["unmarked"] == 1
    assert pipeline.store.outboxes("f" * 16) == []


def test_a_mark_written_again_while_the_sweep_checks_the_site_is_kept(stack: Clocked) -> None:
    site = stack.add(DE)
    pipeline = site_pipeline(stack.pipeline, site)
    directory = stack.directory
    directory.mark(ACTIVE, site.host, 5)
    stack.clock.now += 2 * CLEAR_AFTER_S

    def quiet_but_marked_meanwhile(_pipeline: Pipeline) -> bool:
        directory.mark(ACTIVE, site.host, 6)  # another function took a batch of the site's meanwhile
        return True

    assert not clear_if_quiet(pipeline, directory, ACTIVE, site.host, 5, quiet_but_marked_meanwhile)
    assert directory.marks(ACTIVE) == {site.host: 6}
    assert clear_if_quiet(pipeline, directory, ACTIVE, site.host, 6, lambda _p: True)
    assert directory.marks(ACTIVE) == {}


def test_a_process_writes_a_site_s_mark_at_most_once_per_touch_interval() -> None:
    directory = FakeSites()
    now = [NOW]
    marks = SiteMarks(directory, "www.example.de", lambda: now[0])
    marks.touch(ACTIVE)
    now[0] += timedelta(seconds=TOUCH_EVERY_S - 1)
    marks.touch(ACTIVE)
    assert directory.mark_writes == 1
    marks.touch(HELD)  # another kind is its own
    now[0] += timedelta(seconds=1)
    marks.touch(ACTIVE)
    assert directory.mark_writes == 3
    assert directory.marks(ACTIVE) == {"www.example.de": int(now[0].timestamp() * 1_000_000)}


class Killed(BaseException):
    """The invocation's timeout: nothing in the run catches it."""


def _dues(count: int) -> tuple[list[str], list[Due]]:
    pipeline = cast(Pipeline, None)
    hosts = [f"site{i:02d}.example" for i in range(count)]
    return hosts, [Due("", pipeline), *(Due(h, pipeline, 1) for h in hosts)]


def _runs(
    dues: list[Due], runs: int, seconds: float, cost: dict[str, float], directory: FakeSites, limit: int | None = None
) -> list[list[str]]:
    """``runs`` runs of ``dues``, each with ``seconds`` to its deadline; a visit takes ``cost[host]`` seconds (1 by
    default; a host whose cost is negative is killed in its work, as a timeout kills the invocation)."""
    tick, seen = [0.0], []
    for _ in range(runs):
        started: list[str] = []

        def work(due: Due, started: list[str] = started) -> None:
            started.append(due.host)
            if cost.get(due.host, 1.0) < 0:
                raise Killed
            tick[0] += cost.get(due.host, 1.0)

        with contextlib.suppress(Killed):
            visit("sweep", dues, directory, work, Deadline.within(seconds / TIME_SHARE, lambda: tick[0]), limit)
        seen.append(started)
    return seen


def test_runs_out_of_time_visit_every_site_in_turn_the_stack_s_own_site_each_time() -> None:
    hosts, dues = _dues(10)
    seen = _runs(dues, 4, 4.0, {}, FakeSites())  # time for 4 visits a run
    assert all(run[0] == "" and len(run) == 4 for run in seen)
    others = [h for run in seen for h in run[1:]]
    assert others[:10] == hosts  # three a run: all ten within four runs, in turn, none twice before all once
    assert others[10:] == hosts[:2]
    assert visit("sweep", dues, FakeSites(), lambda _d: None, Deadline.within(1e9)).left == 0


def test_a_site_whose_work_outlives_the_invocation_does_not_starve_the_sites_after_it() -> None:
    hosts, dues = _dues(6)
    seen = _runs(dues, 6, 3.0, {hosts[1]: -1.0}, FakeSites())  # site01 is killed in its work every time
    assert {h for run in seen for h in run} >= set(hosts)  # every other site was visited all the same
    assert sum(run.count(hosts[1]) for run in seen) <= 2  # and site01 is not tried first each time


def test_the_stack_s_own_site_taking_all_the_time_still_leaves_each_run_one_other_site() -> None:
    hosts, dues = _dues(5)
    seen = _runs(dues, 5, 2.0, {"": 10.0}, FakeSites())
    assert [run[1:] for run in seen] == [[h] for h in hosts]


def test_a_failing_site_is_reported_and_the_others_are_visited() -> None:
    hosts, dues = _dues(3)

    def work(due: Due) -> None:
        if due.host == hosts[1]:
            raise ConnectionError("throttled")

    done = visit("sweep", dues, FakeSites(), work, Deadline.within(100.0))
    assert [d.host for d in done.visited] == ["", *hosts]
    assert done.failed == [(hosts[1], "ConnectionError: throttled")]


def test_a_quota_visits_each_site_once_in_24_runs_and_a_short_run_s_rest_the_next_runs() -> None:
    hosts, dues = _dues(48)
    idle = dues[1:]
    seen = _runs(idle, 24, 100.0, {}, FakeSites(), limit=2)
    assert sorted(h for run in seen for h in run) == hosts  # each once a day
    seen = _runs(idle, 48, 1.0, {}, FakeSites(), limit=2)  # time for one visit a run: every site all the same
    assert sorted(h for run in seen for h in run) == hosts


def test_a_site_removed_and_added_back_keeps_its_mark_and_a_gone_site_s_goes_after_an_hour(stack: Clocked) -> None:
    site = stack.add(DE)
    stack.send(upsert(f"{DE}/a"))
    stack.drain()
    removing = begin_removal(stack.pipeline, stack.directory, DE)
    finish_removal(site_pipeline(stack.pipeline, removing), stack.directory)
    stack.add(DE)  # the same configuration: a warm process keeps the site's pipeline and its marks' writes
    current_sites()._cache = SiteCache(stack.directory)  # past the sites' cache
    stack.send(upsert(f"{DE}/b"))  # its batch's mark was written by this process lately: not written again
    assert set(stack.directory.marks(ACTIVE)) == {site.host}
    assert stack.hourly()["sweep"]["sites"] == 2
    # Removed for good: its mark goes once it is an hour old
    removing = begin_removal(stack.pipeline, stack.directory, DE)
    finish_removal(site_pipeline(stack.pipeline, removing), stack.directory)
    current_sites()._cache = SiteCache(stack.directory)  # past the sites' cache
    assert stack.hourly()["sweep"]["sites"] == 1 and set(stack.directory.marks(ACTIVE)) == {site.host}
    stack.clock.now += CLEAR_AFTER_S + 1
    stack.hourly()
    assert stack.directory.marks(ACTIVE) == {}


@pytest.mark.parametrize("host", ["www.example.de", "shop.example.fr", "a.example"])
def test_each_site_s_daily_reconciliation_comes_once_in_any_24_hours(host: str) -> None:
    for first in (0, 7, 500_000):
        assert sum(daily_turn(host, hour) for hour in range(first, first + 24)) == 1
    assert daily_turn(host, zlib.crc32(host.encode()) % 24)
