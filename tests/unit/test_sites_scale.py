"""The arithmetic of bench/sites_scale.py (10,000 sites in one stack), checked against hand computations: an event's
cost once the scheduled runs' share of a run that visits no site is taken out, its cost per million with the
stack's runs shared by the hour's events, and how many runs visit every marked site."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import sites_scale
from bench.cost import DDB_RRU, DDB_WRU, LAMBDA_GB_S, LAMBDA_REQUEST
from bench.sites_measure import Traffic
from bench.usage import Usage


def _traffic() -> Traffic:
    # 10 events; one ingest invocation each (1 s billed in all, 20 write units); two sweeps (600 ms, 10 read units
    # in all), of which a run that visits no site costs 100 ms and 2 read units.
    usage = {"IngestFunction": Usage(invocations=10, billed_ms=1000, wru=20),
             "SweepFunction": Usage(invocations=2, billed_ms=600, rru=10)}  # fmt: skip
    baseline = {"SweepFunction": Usage(invocations=1, billed_ms=100, rru=2)}
    return Traffic(50.0, 2, 10, 7200.0, usage, baseline, Counter({"SweepFunction": 2}),
                               Counter({"SweepFunction": 3}), Counter(), Counter(), [1.0], 0)  # fmt: skip


def test_an_event_costs_the_window_less_the_runs_that_visit_no_site() -> None:
    memory = {"IngestFunction": 512, "SweepFunction": 256}
    bill = sites_scale.per_event(_traffic(), memory)
    ingest = 10 * LAMBDA_REQUEST + 1.0 * 0.5 * LAMBDA_GB_S
    sweeps = 0.6 * 0.25 * LAMBDA_GB_S - 2 * 0.1 * 0.25 * LAMBDA_GB_S  # requests: both runs' are the stack's
    assert bill["Lambda"] == pytest.approx((ingest + sweeps) / 10)
    assert bill["DynamoDB"] == pytest.approx((20 * DDB_WRU + (10 - 2 * 2) * DDB_RRU) / 10)
    # The three visits took 600 - 2 x 100 ms: 133 ms each.
    assert sites_scale.visit_seconds(_traffic())["SweepFunction"] == pytest.approx(0.4 / 3)


def test_the_stacks_hour_is_shared_by_the_hours_events() -> None:
    # $0.00002 an event; $0.36 an hour of scheduled runs at 50 events/s: 180,000 events share it.
    assert sites_scale.per_million(0.00002, 0.36, 50.0) == pytest.approx(20.0 + 2.0)
    assert sites_scale.per_million(0.00002, 0.36, 1.0) == pytest.approx(20.0 + 100.0)


def test_runs_to_visit_every_marked_site_within_seventy_percent_of_the_timeout() -> None:
    # 300 s: 210 s a run, less 10 s of its own (the list): 200 s. 10,000 sites x 50 ms = 500 s: 3 runs.
    assert sites_scale.runs_to_visit(10.0, 0.05, 10_000, 300) == 3
    assert sites_scale.runs_to_visit(10.0, 0.02, 10_000, 300) == 1  # 200 s: exactly one
    assert sites_scale.runs_to_visit(250.0, 0.001, 10, 300) == 0  # its own work alone outlasts the share: never
