"""Ingest's writes, one conditional item at a time (page state, removal markers, entry): a crash between any two
of them, followed by the event's redelivery or by a newer event, publishes the newest state exactly once; an older
event's late write never overwrites a newer one; a duplicate writes nothing; and what an event costs in units.

Judged by the reference model (``Stack.check``), as in ``test_recovery.py``, whose in-memory stack this uses."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from bench.meter import Meter
from sitemap_updater.core.pages import PageWrite
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.service.ingest import Outcome, ingest_message, record_state
from sitemap_updater.service.marks import OUTBOX_ABANDONED_S, MarkBatch
from sitemap_updater.service.sweep import sweep
from tests.conftest import BASE, event, parse
from tests.unit.test_recovery import NOW, Crash, Stack, crash, page

WRITES = ("put_state", "leave_section", "put_entry")


def _moved_out_of_blog(stack: Stack) -> None:
    stack.check()
    assert not any(name.startswith("sitemap-blog-") for name in stack.s3.objects)


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("then", ["redelivered", "newer in news", "newer in docs", "newer back in blog"])
def test_a_move_that_dies_after_any_of_its_writes_ends_with_the_newest_state_listed_once(write: str, then: str) -> None:
    # Given blog/a published, then its move to news dying right after one of its writes
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    moved = page("a", version=2, section="news", lastmod="2026-11-02")
    with crash(stack.store, write, after=True) as hits, pytest.raises(Crash):
        stack.send(moved)
    assert hits
    # When SQS delivers the move again, or a newer event for the page comes first
    section = {"redelivered": "news", "newer in news": "news", "newer in docs": "docs"}.get(then, "blog")
    stack.send(moved if then == "redelivered" else page("a", version=3, section=section, lastmod="2026-11-03"))
    stack.drain()
    # Then the newest state is listed once, in its section (check: the reference model, no URL twice)
    stack.check()
    assert len(stack.shown()) == 1
    if section != "blog":
        _moved_out_of_blog(stack)


def test_two_moves_that_died_after_their_page_state_are_both_undone_by_the_next_event() -> None:
    # Given blog/a published, then a move to news and a move to docs, each dying after its page state
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    for version, section in ((2, "news"), (3, "docs")):
        with crash(stack.store, "put_state", after=True), pytest.raises(Crash):
            stack.send(page("a", version=version, section=section, lastmod="2026-11-02"))
    # When a newer event puts the page in shop
    stack.send(page("a", version=4, section="shop", lastmod="2026-11-04"))
    stack.drain()
    # Then shop alone lists it: the state named every section an unfinished move may have written
    stack.check()
    assert [name for name in stack.s3.objects if name.endswith(".xml.gz")] == ["sitemap-shop-00000000.xml.gz"]


def test_an_older_event_whose_writes_come_late_never_overwrites_the_newer_state() -> None:
    # Given blog/a published; a move to news writes its page state, and before its entry is written a newer
    # event (back in blog) is recorded in full
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    newer = page("a", version=3, lastmod="2026-11-03")
    original = stack.store.put_entry
    raced: list[PageWrite] = []

    def late(write: PageWrite, *args: Any, **kwargs: Any) -> bool:
        if write.section == "news" and not raced:
            raced.append(write)
            stack.send(newer)  # the other invocation runs here
        return original(write, *args, **kwargs)

    object.__setattr__(stack.store, "put_entry", late)
    stack.send(page("a", version=2, section="news", lastmod="2026-11-02"))
    # When the move's late entry write reaches DynamoDB (above) and everything is rebuilt
    stack.drain()
    # Then the newer state is listed, once, in blog; news never lists the page
    assert raced
    stack.check()
    assert list(stack.shown()) == [newer["url"]] and not any("news" in n for n in stack.s3.objects)


def _count_writes(stack: Stack) -> list[str]:
    calls: list[str] = []
    for name in ("put_state", "leave_section", "put_entry", "open_outbox"):
        original = getattr(stack.store, name)

        def counted(*args: Any, _o: Any = original, _n: str = name) -> Any:
            calls.append(_n)
            return _o(*args)

        object.__setattr__(stack.store, name, counted)
    return calls


@pytest.mark.parametrize("section", ["blog", "news"])
def test_a_duplicate_of_a_recorded_event_writes_and_marks_nothing(section: str) -> None:
    # Given a page recorded and published (in its section, or moved there)
    stack = Stack()
    stack.send(page("a", version=1))
    body = page("a", version=2, section=section, lastmod="2026-11-02")
    stack.send(body)
    stack.drain()
    published = dict(stack.s3.objects)
    calls = _count_writes(stack)
    # When the event is delivered again
    [result] = stack.send(body)
    # Then it is a no-op that changed no item (its conditional write of the entry failed) and asked for no rebuild;
    # its batch's outbox was put and deleted
    assert result.outcome == Outcome.NOOP
    assert calls == ["open_outbox"] and not stack.store.outbox and not stack.queues["rebuild"].messages
    stack.drain()
    assert stack.s3.objects == published


def test_a_duplicate_of_an_event_whose_entry_was_never_written_finishes_it_and_asks_for_its_rebuild() -> None:
    stack = Stack()
    body = page("a", version=1)
    with crash(stack.store, "put_entry"), pytest.raises(Crash):
        stack.send(body)
    assert not stack.shown()
    [result] = stack.send(body)
    assert result.outcome == Outcome.ACCEPTED
    stack.drain()
    stack.check()
    assert list(stack.shown()) == [body["url"]]


def _units(stack: Stack, meter: Meter, label: str, bodies: list[dict[str, Any]]) -> tuple[float, float]:
    """Write and read units per event of one ingest batch of ``bodies``, as AWS bills them."""

    def batch() -> None:
        marks = MarkBatch(stack.pipeline, lambda: [b["url"] for b in bodies])
        for number, body in enumerate(bodies):
            ingest_message(json.dumps(body), f"m-{number}", stack.pipeline, marks=marks)
        marks.flush()

    stack.sent += bodies
    meter.invoke(label, batch, 1.0)
    usage = meter.usage[label]
    return usage.wru / len(bodies), usage.rru / len(bodies)


def test_an_update_costs_one_write_unit_and_no_read_and_a_move_four() -> None:
    # Given 50 pages recorded in blog
    stack = Stack(max_urls=1000)
    meter = Meter(stack)
    names = [f"p{n}" for n in range(50)]
    _units(stack, meter, "first", [page(name, version=1) for name in names])
    stack.drain()
    # When a batch updates each of them, then one moves each to news, then one resends each unchanged
    update = _units(stack, meter, "update", [page(name, version=2, lastmod="2026-11-02") for name in names])
    move = _units(stack, meter, "move", [page(name, version=3, section="news", lastmod="2026-11-02") for name in names])
    same = _units(stack, meter, "same", [page(name, version=4, section="news", lastmod="2026-11-02") for name in names])
    # Then an update that stays in its section writes its entry alone, conditional on the entry being current and
    # older (one unit; it was two units and two reads: the page state, its entry, and the outbox the state named),
    # plus its share of the batch's outbox (50 URLs, 2 KB: put and deleted, 4 units); it reads nothing
    outbox = 4 / 50
    assert update == (1 + outbox, 0.0)
    # And a move tries that write (it fails: no current entry in news; a failed condition is billed), reads the page
    # state, its entry and the outbox the entry names, then writes the marker, the state and the entry
    assert move == (4 + outbox, 3.0)
    # And the first update after a move reads the state (the move's marks may be unsent) and makes the entry current
    assert same == (3 + outbox, 3.0)
    stack.drain()
    stack.check()


# --- an update that writes its entry alone -------------------------------------------------------------------
@pytest.mark.parametrize("hook", ["leave_section", "put_state", "put_entry"])
@pytest.mark.parametrize("version", [2, 4])
def test_an_update_racing_a_move_leaves_the_page_in_one_section_with_the_newer_state(hook: str, version: int) -> None:
    # Given blog/a published, then a move to news (version 3) that another invocation's update of the page in blog
    # (older or newer than the move) overtakes just before one of the move's writes
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    update = page("a", version=version, lastmod=f"2026-11-0{version}")
    original = getattr(stack.store, hook)
    raced: list[int] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        if not raced:
            raced.append(1)
            stack.send(update)  # the other invocation runs here, to its end
        return original(*args, **kwargs)

    object.__setattr__(stack.store, hook, racing)
    stack.send(page("a", version=3, section="news", lastmod="2026-11-03"))
    object.__setattr__(stack.store, hook, original)
    stack.drain()
    # Then the newer of the two is listed, once, in its section, and the other section lists nothing
    assert raced
    stack.check()
    assert len(stack.shown()) == 1
    section = "news" if version < 3 else "blog"
    assert [n for n in stack.s3.objects if n.endswith(".xml.gz")] == [f"sitemap-{section}-00000000.xml.gz"]


@pytest.mark.parametrize("version", [2, 4])
def test_an_update_racing_a_deletion_never_publishes_the_older_of_the_two(version: int) -> None:
    # Given blog/a published, then its deletion (version 3), overtaken before its page state by an update
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    update = page("a", version=version, lastmod=f"2026-11-0{version}")
    original = stack.store.put_state
    raced: list[int] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        if not raced:
            raced.append(1)
            stack.send(update)
        return original(*args, **kwargs)

    object.__setattr__(stack.store, "put_state", racing)
    stack.send(event(f"{BASE}/blog/a", version=3, type="delete"))
    object.__setattr__(stack.store, "put_state", original)
    stack.drain()
    # Then the page is listed only if the update is the newer, and its page state says so
    assert raced
    stack.check()
    assert bool(stack.shown()) == (version > 3)
    assert stack.store.pages[f"{BASE}/blog/a"].kind == ("live" if version > 3 else "deleted")


def test_an_update_that_died_before_its_marks_were_sent_is_published_by_its_redelivery() -> None:
    # Given blog/a published, then an update that wrote its entry alone and died before anything else
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    body = page("a", version=2, lastmod="2026-11-02")
    with crash(stack.store, "update_entry", after=True) as hits, pytest.raises(Crash):
        stack.send(body)
    assert hits and stack.store.outbox  # its batch's outbox is open, named by the entry
    # When SQS delivers it again: a duplicate, which sends the marks the outbox its entry names says are unsent
    assert stack.send(body)[0].outcome == Outcome.NOOP
    stack.drain()
    # Then the update is published
    stack.check()
    assert "2026-11-02" in stack.shown()[body["url"]]


def test_an_update_that_died_before_its_marks_were_sent_is_published_by_the_sweep() -> None:
    # Given blog/a published, then an update that wrote its entry alone and died, never delivered again
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    body = page("a", version=2, lastmod="2026-11-02")
    with crash(stack.pipeline.rebuild_queue, "send_batch"), pytest.raises(Crash):
        stack.send(body)
    stack.sent.append(body)
    # When the sweep runs once the batch must be over
    later = NOW + timedelta(seconds=OUTBOX_ABANDONED_S + 1)
    assert sweep(replace(stack.pipeline, clock=lambda: later)).requeued == 1
    stack.drain()
    # Then the update is published and the outbox is gone
    assert not stack.store.outbox
    stack.check()
    assert "2026-11-02" in stack.shown()[body["url"]]


def test_an_older_update_after_a_newer_one_written_alone_is_stale_and_writes_nothing_new() -> None:
    # Given blog/a updated to version 3 by its entry alone (the page state still has version 1)
    stack = Stack()
    stack.send(page("a", version=1))
    stack.send(page("a", version=3, lastmod="2026-11-03"))
    stack.drain()
    assert stack.store.pages[f"{BASE}/blog/a"].rank < stack.store.current_pages()[f"{BASE}/blog/a"].rank
    # When version 2 arrives late
    [result] = stack.send(page("a", version=2, lastmod="2026-11-02"))
    stack.drain()
    # Then it is stale: version 3 stays published
    assert result.outcome == Outcome.STALE
    stack.check()
    assert "2026-11-03" in stack.shown()[f"{BASE}/blog/a"]


def test_a_bulk_load_line_newer_than_an_update_written_alone_with_its_entry_is_a_no_op() -> None:
    # Given blog/a updated to version 2 by its entry alone
    stack = Stack()
    stack.send(page("a", version=1))
    stack.send(page("a", version=2, lastmod="2026-11-02"))
    stack.drain()
    # When a bootstrap records a newer line with the same entry (bulk loads read the page state first)
    newer = state_from_event(parse(page("a", version=3, lastmod="2026-11-02")))
    # Then it is a no-op that takes the rank, and an event between the two is then stale
    assert record_state(stack.pipeline, newer) == Outcome.NOOP
    assert stack.store.current_pages()[newer.url].rank == newer.rank
    [late] = stack.send(page("a", version=2, lastmod="2026-11-05"))
    assert late.outcome == Outcome.STALE


def test_an_older_update_after_a_deletion_that_died_after_its_page_state_is_stale() -> None:
    # Given blog/a published, then its deletion (version 3) dying right after its page state
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    deletion = event(f"{BASE}/blog/a", version=3, type="delete")
    with crash(stack.store, "put_state", after=True) as hits, pytest.raises(Crash):
        stack.send(deletion)
    assert hits
    # When an older update arrives before the deletion is delivered again (its tombstone came before its state,
    # so no update can replace the entry alone)
    [older] = stack.send(page("a", version=2, lastmod="2026-11-02"))
    stack.drain()
    # Then it is stale and the page is not listed; the redelivered deletion then finds its writes done
    assert older.outcome == Outcome.STALE and not stack.shown()
    stack.send(deletion)
    stack.drain()
    stack.check()
    assert not stack.shown()


def test_a_newer_event_with_the_same_entry_marks_a_change_whose_batch_died_before_its_marks() -> None:
    # Given blog/a recorded (its entry current) by a batch that died before sending its marks
    stack = Stack()
    first = page("a", version=1, lastmod="2026-11-01")
    with crash(stack.pipeline.rebuild_queue, "send_batch"), pytest.raises(Crash):
        stack.send(first)
    # When a newer event with the same entry replaces the entry alone, and the sweep runs an hour later
    stack.send(page("a", version=2, lastmod="2026-11-01"))
    later = NOW + timedelta(seconds=OUTBOX_ABANDONED_S + 1)
    sweep(replace(stack.pipeline, clock=lambda: later))
    stack.drain()
    # Then the page is published (the newer event marked its section in place of the batch that died)
    stack.check()
    assert list(stack.shown()) == [first["url"]]
