"""The hold a bootstrap execution has on the import (service/bootstrap_release.py): only its own release ends it,
a release is idempotent, and the scheduled check releases a stopped execution's hold once no worker of it can
write (never a running one's, never an import's from the command line), on the in-memory stack of
``test_recovery``."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.ports import ExecutionState, ImportHold
from sitemap_updater.service import bootstrap
from sitemap_updater.service.bootstrap_release import RELEASE_AFTER_S, check, release
from sitemap_updater.service.parked import park_batch
from sitemap_updater.service.pipeline import Pipeline
from tests.unit.test_recovery import NOW, Stack

MINE = "arn:aws:states:us-east-1:123456789012:execution:s-bootstrap:mine"
OTHER = "arn:aws:states:us-east-1:123456789012:execution:s-bootstrap:other"


class Executions:
    """DescribeExecution's answers, by ARN."""

    def __init__(self, **states: ExecutionState) -> None:
        self.states = {MINE if k == "mine" else OTHER: v for k, v in states.items()}
        self.asked: list[str] = []

    def describe(self, arn: str) -> ExecutionState | None:
        self.asked.append(arn)
        return self.states.get(arn)


def _held(now: list[datetime]) -> tuple[Stack, Pipeline]:
    """A stack whose import ``mine`` holds since NOW, with one rebuild request parked; its clock reads ``now``."""
    stack = Stack()
    pipeline = replace(stack.pipeline, clock=lambda: now[0])
    bootstrap.begin(pipeline, "run", MINE)
    record = {"messageId": "m-1", "body": json.dumps({"section": "blog"}), "attributes": {"MessageGroupId": "blog"}}
    assert park_batch(pipeline, [record])
    return stack, pipeline


def _stopped(seconds_ago: float, status: str = "ABORTED", now: datetime = NOW) -> ExecutionState:
    return ExecutionState(status, to_micros(now - timedelta(seconds=seconds_ago)))


def test_only_the_holder_s_release_ends_the_hold_and_a_second_release_changes_nothing() -> None:
    now = [NOW]
    stack, pipeline = _held(now)
    assert release(pipeline, "run", OTHER) == {"ended": False, "replayed": 0}
    assert stack.store.import_hold() == ImportHold(MINE, "run", to_micros(NOW))
    assert stack.queues["rebuild"].messages == []
    assert release(pipeline, "run", MINE) == {"ended": True, "replayed": 1}
    assert [json.loads(m.body) for m in stack.queues["rebuild"].messages] == [{"section": "blog"}]
    assert release(pipeline, "run", MINE) == {"ended": False, "replayed": 0}
    assert stack.store.import_hold() is None and stack.store.parked() == []


def test_begin_is_refused_while_another_execution_holds_and_repeats_for_its_own() -> None:
    now = [NOW]
    _, pipeline = _held(now)
    now[0] = NOW + timedelta(seconds=5)
    bootstrap.begin(pipeline, "run", MINE)  # a retried Begin keeps the moment it began
    assert pipeline.store.import_hold() == ImportHold(MINE, "run", to_micros(NOW))
    with pytest.raises(bootstrap.BootstrapError, match=f"execution {MINE} \\(run 'run'\\) holds the import"):
        bootstrap.begin(pipeline, "again", OTHER)


@pytest.mark.parametrize("status", ["RUNNING", "PENDING_REDRIVE"])
def test_the_check_never_releases_an_execution_that_may_still_run(status: str) -> None:
    now = [NOW]
    stack, pipeline = _held(now)
    now[0] = NOW + timedelta(days=3)
    checked = check(pipeline, Executions(mine=ExecutionState(status, 0)))
    assert (checked.released, checked.holder, checked.holder_status) == (False, MINE, status)
    assert checked.held_s == checked.oldest_parked_s == 3 * 86_400
    assert stack.store.import_hold() is not None


@pytest.mark.parametrize("status", ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"])
def test_the_check_releases_a_stopped_execution_once_its_workers_cannot_write(status: str) -> None:
    now = [NOW]
    stack, pipeline = _held(now)
    now[0] = NOW + timedelta(hours=1)
    stopped = _stopped(RELEASE_AFTER_S - 1, status, now[0])
    early = check(pipeline, Executions(mine=stopped))
    assert (early.released, early.replayed, early.held_s) == (False, 0, 3600)
    now[0] += timedelta(seconds=1)
    released = check(pipeline, Executions(mine=stopped))
    assert (released.released, released.replayed, released.held_s, released.oldest_parked_s) == (True, 1, 0, 0)
    assert stack.store.import_hold() is None and len(stack.queues["rebuild"].messages) == 1


def test_the_check_releases_an_execution_step_functions_no_longer_knows() -> None:
    now = [NOW]
    _, pipeline = _held(now)
    checked = check(pipeline, Executions())
    assert (checked.holder_status, checked.released, checked.replayed) == ("GONE", True, 1)


def test_the_check_never_releases_an_import_from_the_command_line_but_reports_its_age() -> None:
    stack = Stack()
    now = [NOW]
    pipeline = replace(stack.pipeline, clock=lambda: now[0])
    pipeline.store.set_import_running(True, to_micros(NOW))
    now[0] = NOW + timedelta(hours=50)
    executions = Executions()
    checked = check(pipeline, executions)
    assert (checked.released, checked.holder, checked.held_s) == (False, "", 50 * 3600)
    assert executions.asked == [] and pipeline.store.import_running()


def test_the_check_sends_requests_left_parked_when_nothing_holds_the_import() -> None:
    now = [NOW]
    stack, pipeline = _held(now)
    stack.store.end_import(MINE)  # a release that died between its delete and its sends
    now[0] = NOW + timedelta(minutes=7)
    before = check(pipeline, Executions())
    assert (before.holder, before.released, before.replayed, before.oldest_parked_s) == ("", False, 1, 0)
    assert len(stack.queues["rebuild"].messages) == 1


def test_an_execution_redriven_after_its_release_may_not_render_or_retire() -> None:
    # Its hold was released (rebuilds run again): a range rendered now would race them
    now = [NOW]
    stack, pipeline = _held(now)
    release(pipeline, "run", MINE)
    whole = KeyRange(0, KEY_SPACE, 0)
    with pytest.raises(bootstrap.BootstrapError, match="does not hold the import"):
        bootstrap.render_range(pipeline, "blog", whole, MINE)
    with pytest.raises(bootstrap.BootstrapError, match="does not hold the import"):
        bootstrap.finish(pipeline, "run", MINE)
    assert stack.s3.objects == {} and stack.store.files() == []
    bootstrap.begin(pipeline, "run", OTHER)  # a new execution holds it: its ranges are rendered
    assert bootstrap.render_range(pipeline, "blog", whole, OTHER).section == "blog"
