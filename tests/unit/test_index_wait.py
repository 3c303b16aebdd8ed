"""Index rebuilds coalesced by the freshness setting: a section rebuild that only moves the lastmods of files the
index names lets its index request wait (the index names the new lastmods within the section's freshness of the
put), while one that adds or retires a file asks for the index at once."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from sitemap_updater.core.freshness import index_wait_seconds
from sitemap_updater.core.messages import INDEX_GROUP, INDEX_WAIT_GROUP, read_rebuild_request
from sitemap_updater.service.batches import hold_for, index_batch
from sitemap_updater.service.index import rebuild_index
from sitemap_updater.service.rebuild import rebuild_sections
from tests.conftest import BASE, event
from tests.sim.fakes import Message
from tests.unit.test_recovery import NOW, Stack, page, replace_settings

S = 1_000_000


@pytest.mark.parametrize(
    ("freshness", "news", "wait"),
    [(60, False, 40), (900, False, 880), (900, True, 40), (30, False, 10), (20, False, 0), (0, False, 0)],
)
def test_a_lastmod_waits_its_freshness_less_the_index_delay_run_and_cache(
    freshness: int, news: bool, wait: int
) -> None:
    # the index queue's delay (5 s), the index rebuild (10 s) and the index's cache lifetime (5 s) come off
    assert index_wait_seconds(freshness, 5, news) == wait


def _stack(clock: list[datetime], freshness: int) -> Stack:
    stack = Stack(max_urls=3)
    stack.send(*[page(f"p{i}", version=1) for i in range(2)])
    stack.drain()  # freshness off: one file, named by the index
    stack.pipeline = replace(
        replace_settings(stack, freshness_seconds=freshness, cdn_max_age_seconds=5), clock=lambda: clock[0]
    )
    return stack


def _rebuild(stack: Stack) -> None:
    state = stack.queues["rebuild"]
    bodies, state.messages = [json.loads(m.body) for m in state.messages], []
    rebuild_sections(stack.pipeline, [mark for body in bodies for mark in read_rebuild_request(body)])


def _records(stack: Stack) -> tuple[list[Message], list[dict[str, Any]]]:
    """One receive of the index queue, as the event source hands it to the function."""
    messages = stack.queues["index"].receive(10, stack.clock.now, random.Random(0))
    records = [{"messageId": m.id, "receiptHandle": m.receipt, "body": m.body,
                "attributes": {"ApproximateReceiveCount": str(m.receive_count), "MessageGroupId": m.group or ""}}
               for m in messages]  # fmt: skip
    return messages, records


def _lastmods(stack: Stack) -> list[str]:
    return [m[:10] for m in re.findall(r"<lastmod>([^<]+)</lastmod>", stack.s3.objects["sitemap.xml"].data.decode())]


def test_a_lastmod_only_index_request_waits_until_due_then_one_index_names_it() -> None:
    clock = [NOW]
    stack = _stack(clock, 60)
    before = _lastmods(stack)
    stack.send(page("p0", version=2, lastmod="2026-11-20"))
    _rebuild(stack)
    (request,) = stack.queues["index"].messages
    assert request.group == INDEX_WAIT_GROUP
    assert json.loads(request.body)["due_us"] == int((NOW + timedelta(seconds=40)).timestamp() * S)
    # received before it is due: given back to the queue for the 40 s left, and the index is not rebuilt
    stack.clock.now += 400  # past the queue's delay
    messages, records = _records(stack)
    done, settled = index_batch(records, stack.pipeline)
    assert done == 40 and settled.failures == [m.id for m in messages] and not settled.dead_lettered
    assert messages[0].deferred_until == stack.clock.now + 40
    assert _lastmods(stack) == before
    for message in messages:
        stack.queues["index"].settle(message, False, stack.clock.now)
    # one second early it would still wait, but a request comes back only once: then due, the index names it
    clock[0] = NOW + timedelta(seconds=40)
    stack.clock.now += 40
    messages, records = _records(stack)
    done, settled = index_batch(records, stack.pipeline)
    assert not isinstance(done, (int, str)) and done.written and settled.failures == []
    assert _lastmods(stack) == ["2026-11-20"] != before


def test_a_request_received_again_is_never_given_back_twice() -> None:
    clock = [NOW]
    stack = _stack(clock, 900)
    stack.send(page("p0", version=2, lastmod="2026-11-20"))
    _rebuild(stack)
    stack.clock.now += 400
    messages, records = _records(stack)
    assert index_batch(records, stack.pipeline)[0] == 880
    for message in messages:
        stack.queues["index"].settle(message, False, stack.clock.now)
    stack.clock.now += 880
    clock[0] = NOW + timedelta(seconds=100)  # a clock behind the queue's: not due yet, rebuilt all the same
    _, records = _records(stack)
    done, _ = index_batch(records, stack.pipeline)
    assert not isinstance(done, (int, str)) and _lastmods(stack) == ["2026-11-20"]


def test_a_new_file_asks_for_the_index_at_once_and_takes_the_waiting_lastmods_with_it() -> None:
    clock = [NOW]
    stack = _stack(clock, 900)
    stack.send(page("p0", version=2, lastmod="2026-11-20"))
    _rebuild(stack)
    stack.send(*[page(f"q{i}", version=1, lastmod="2026-11-21") for i in range(3)])  # five pages: a split
    _rebuild(stack)
    groups = [m.group for m in stack.queues["index"].messages]
    assert groups == [INDEX_WAIT_GROUP, INDEX_GROUP]
    assert "due_us" not in json.loads(stack.queues["index"].messages[1].body)
    stack.clock.now += 400
    _, records = _records(stack)  # both groups in one batch: the index is rebuilt now, for both
    done, settled = index_batch(records, stack.pipeline)
    assert not isinstance(done, (int, str)) and settled.failures == []
    assert len(stack.named()) == 2 and "2026-11-21" in _lastmods(stack)


def test_without_a_freshness_setting_every_index_request_is_at_once() -> None:
    clock = [NOW]
    stack = _stack(clock, 0)
    stack.send(page("p0", version=2, lastmod="2026-11-20"))
    _rebuild(stack)
    (request,) = stack.queues["index"].messages
    assert request.group == INDEX_GROUP and "due_us" not in json.loads(request.body)


def test_the_first_file_of_a_new_section_asks_for_the_index_at_once() -> None:
    clock = [NOW]
    stack = _stack(clock, 900)
    stack.send(event(f"{BASE}/shop/a", version=1, lastmod="2026-11-21"))  # retires nothing, adds a name
    _rebuild(stack)
    (request,) = stack.queues["index"].messages
    assert request.group == INDEX_GROUP and "due_us" not in json.loads(request.body)
    stack.clock.now += 400
    _, records = _records(stack)
    done, _ = index_batch(records, stack.pipeline)
    assert not isinstance(done, (int, str)) and "sitemap-shop-00000000.xml.gz" in stack.named()


@pytest.mark.parametrize(("freshness", "group", "due_s"), [(60, INDEX_WAIT_GROUP, 40), (0, INDEX_GROUP, None)])
def test_a_file_named_with_its_previous_lastmod_is_named_with_its_own_within_its_wait(
    freshness: int, group: str, due_s: int | None
) -> None:
    clock = [NOW]
    stack = _stack(clock, freshness)
    before = _lastmods(stack)
    stack.send(page("p0", version=2, lastmod="2026-11-20"))
    _rebuild(stack)
    stack.queues["index"].messages.clear()
    clock[0] = NOW + timedelta(seconds=3)  # an index rebuild (another section's, say) while the CDN may serve the old
    done = rebuild_index(stack.pipeline)
    assert done.settling == 1 and _lastmods(stack) == before
    (request,) = stack.queues["index"].messages
    assert request.group == group
    due = json.loads(request.body).get("due_us")
    assert due == (None if due_s is None else int((NOW + timedelta(seconds=due_s)).timestamp() * S))


@pytest.mark.parametrize(("window", "wait"), [(5, 39), (30, 14), (45, 0)])
def test_a_busy_section_waits_its_freshness_less_the_ingest_window_as_deployed(window: int, wait: int) -> None:
    clock = [NOW]
    stack = _stack(clock, 60)  # its latest rebuild began at NOW
    stack.pipeline = replace(replace_settings(stack, ingest_window_seconds=window), clock=lambda: clock[0])
    clock[0] = NOW + timedelta(seconds=1)
    stack.send(page("p0", version=2, lastmod="2026-11-20"))
    marks = [mark for m in stack.queues["rebuild"].messages for mark in read_rebuild_request(json.loads(m.body))]
    # 60 s less the window, the CDN's 5 s and 10 s for the runs, from when the latest rebuild began
    assert hold_for(stack.pipeline, "blog", marks).seconds == wait
