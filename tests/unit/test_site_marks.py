"""The scheduled functions visit only the sites with something due (service/site_marks.py): an idle site costs
them nothing; a site with work is visited until that work is done; a run out of time leaves the rest to the next."""

from __future__ import annotations

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
    Due,
    SiteMarks,
    clear_if_quiet,
    daily_turn,
    visit,
)
from sitemap_updater.wiring.pipeline import use_pipeline
from sitemap_updater.wiring.sites import site_pipeline
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
    assert "site#www.example.fr#" not in stack.store.sites  # no read or write of its records was made
    assert set(stack.directory.marks(ACTIVE)) == {"www.example.de"}


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


def test_runs_out_of_time_visit_every_site_in_turn_the_stack_s_own_site_each_time() -> None:
    directory = FakeSites()
    pipeline = cast(Pipeline, None)
    hosts = [f"site{i:02d}.example" for i in range(10)]
    dues = [Due("", pipeline), *(Due(h, pipeline, 1) for h in hosts)]
    tick = [0.0]

    def work(_due: Due) -> None:
        tick[0] += 1.0  # each visit takes a second

    seen: list[list[str]] = []
    for _ in range(4):
        visits = visit("sweep", dues, directory, work, 4 / TIME_SHARE, lambda: tick[0])  # 4 visits' time
        seen.append([d.host for d in visits.visited])
    assert all(run[0] == "" and len(run) == 4 for run in seen)
    others = [h for run in seen for h in run[1:]]
    assert others[:10] == hosts  # three a run: all ten within four runs, in turn, none twice before all once
    assert others[10:] == hosts[:2]
    # One run with time for all visits every site and leaves the cursor alone
    assert visit("sweep", dues, directory, work, 1e9, lambda: tick[0]).left == 0


def test_a_run_visits_at_least_the_stack_s_own_site_whatever_its_time() -> None:
    visited = visit("sweep", [Due("", cast(Pipeline, None))], None, lambda _d: None, 0.0, lambda: 1.0)
    assert [d.host for d in visited.visited] == [""]


@pytest.mark.parametrize("host", ["www.example.de", "shop.example.fr", "a.example"])
def test_each_site_s_daily_reconciliation_comes_once_in_any_24_hours(host: str) -> None:
    for first in (0, 7, 500_000):
        assert sum(daily_turn(host, hour) for hour in range(first, first + 24)) == 1
    assert daily_turn(host, zlib.crc32(host.encode()) % 24)
