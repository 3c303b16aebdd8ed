"""Changes held back by IndexNow's quiet window (``held#indexnow``), on the in-memory stack of ``test_recovery``:
a second change inside the window is held, not sent and not lost; the wake-up after the window sends it once
and forgets it, so later wake-ups send nothing (issue 13's survivors of service/notify.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from sitemap_updater.core.messages import change_record
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.notify import INDEXNOW, Notifiers, NotifyResult, notify
from sitemap_updater.service.pipeline import Pipeline
from tests.conftest import BASE
from tests.unit.test_recovery import NOW, Stack, page, replace_settings

URL = f"{BASE}/blog/a"
WINDOW_S = 300


class Engine:
    """Accepts every request; records each request's URL list."""

    timeout = 20.0  # the Http port: the most one request may wait

    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        self.requests.append(list(body["urlList"]))
        return HttpResponse(200, {}, "")


def _run(pipeline: Pipeline, engine: Engine, at: datetime, *records: dict[str, Any]) -> NotifyResult:
    notifiers = Notifiers(engine, None, sleep=lambda _s: None, monotonic=lambda: 0.0)
    return notify(list(records), replace(pipeline, clock=lambda: at), notifiers)


# What EventBridge puts into the notify queue every minute (AWS's Scheduled Event)
WAKE_UP = {"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


def _record(changed: dict[str, str], digests: dict[str, str], ranks: dict[str, str] | None = None) -> dict[str, Any]:
    """A change record of pages whose ranks say nothing (""), unless given."""
    return change_record("blog", changed, digests, [], {}, ranks or dict.fromkeys(changed, "")).body


def _change(digest: str) -> dict[str, Any]:
    return _record({URL: "updated"}, {URL: digest})


def test_a_change_inside_the_window_is_held_sent_once_after_it_and_then_forgotten() -> None:
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=WINDOW_S)
    engine = Engine()
    # A first change is sent at once
    assert _run(pipeline, engine, NOW, _change("d1")).sent
    # A second one ten seconds later is inside the quiet window: held, not sent
    later = NOW + timedelta(seconds=10)
    result = _run(pipeline, engine, later, _change("d2"))
    assert result.held == [URL] and result.sent == [] and engine.requests == [[URL]]
    now_s = int(later.timestamp())
    [(url, held)] = stack.store.held(INDEXNOW, now_s).items()
    assert url == URL and held.digest == "d2" and held.quiet_until_s == int(NOW.timestamp()) + WINDOW_S
    # A wake-up inside the window sends nothing
    assert _run(pipeline, engine, later + timedelta(seconds=60), WAKE_UP).sent == []
    # The wake-up after the window sends the held change, and it is forgotten
    after = NOW + timedelta(seconds=WINDOW_S + 1)
    result = _run(pipeline, engine, after, WAKE_UP)
    assert [n.urls for n in result.sent] == [[URL]] and engine.requests == [[URL], [URL]]
    assert stack.store.held(INDEXNOW, int(after.timestamp())) == {}
    # Later wake-ups have nothing to send, and nothing already sent to report
    result = _run(pipeline, engine, after + timedelta(seconds=WINDOW_S * 2), WAKE_UP)
    assert (result.sent, result.already_sent, result.held) == ([], [], [])
    assert len(engine.requests) == 2


def test_held_changes_are_kept_until_the_latest_window_they_wait_for_has_ended() -> None:
    # Two URLs held at once, each until its own window's end: the held items outlive the later of them
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=WINDOW_S)
    engine = Engine()
    other = f"{BASE}/blog/b"
    _run(pipeline, engine, NOW, _change("a1"))
    _run(pipeline, engine, NOW + timedelta(seconds=100), _record({other: "added"}, {other: "b1"}))
    both = _record({URL: "updated", other: "updated"}, {URL: "a2", other: "b2"})
    result = _run(pipeline, engine, NOW + timedelta(seconds=150), both)
    assert result.held == [URL, other]
    expiries = {expires for (_channel, _url), (expires, _change) in stack.store.held_items.items()}
    assert len(expiries) == 1 and expiries.pop() >= int(NOW.timestamp()) + 100 + WINDOW_S


def _ranked(digest: str, rank: str, change: str = "updated") -> dict[str, Any]:
    return _record({URL: change}, {URL: digest}, {URL: rank})


def test_a_change_record_older_than_what_was_announced_announces_nothing() -> None:
    # Given the page's removal announced (rank 7), after its addition (rank 5) was announced
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=0)
    engine = Engine()
    assert _run(pipeline, engine, NOW, _ranked("d5", "5", "added")).sent
    assert _run(pipeline, engine, NOW + timedelta(seconds=1), _ranked("", "7", "removed")).sent
    # When the addition's record comes again (a notify batch that died, redelivered split in other batches)
    result = _run(pipeline, engine, NOW + timedelta(seconds=2), _ranked("d5", "5", "added"))
    # Then nothing is announced: a crawler is not told again of a page that is gone
    assert result.sent == [] and result.already_sent == [URL] and len(engine.requests) == 2
    # And within one batch the newer record wins whatever the order the records came in
    result = _run(pipeline, engine, NOW + timedelta(seconds=3), _ranked("", "7", "removed"), _ranked("d5", "5"))
    assert result.sent == [] and len(engine.requests) == 2
    # While a newer state (rank 9, the page back) is announced
    assert _run(pipeline, engine, NOW + timedelta(seconds=4), _ranked("d9", "9", "added")).sent


def test_a_change_record_older_than_the_change_held_leaves_it_held_and_it_goes_out_after_the_window() -> None:
    # Given the page's change of rank 7 held in the quiet window after its change of rank 5 was sent
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=WINDOW_S)
    engine = Engine()
    _run(pipeline, engine, NOW, _ranked("d5", "5"))
    assert _run(pipeline, engine, NOW + timedelta(seconds=10), _ranked("d7", "7")).held == [URL]
    # When a record older than the held change arrives (rank 6: a removal another section announces late)
    result = _run(pipeline, engine, NOW + timedelta(seconds=20), _ranked("", "6", "removed"))
    # Then nothing is sent and the held change stays
    assert result.sent == [] and engine.requests == [[URL]]
    assert stack.store.held(INDEXNOW, int(NOW.timestamp()) + 20)[URL].digest == "d7"
    # And after the window the held change goes out: what the engines were last told is the newest change
    after = NOW + timedelta(seconds=WINDOW_S + 1)
    assert [n.urls for n in _run(pipeline, engine, after, WAKE_UP).sent] == [[URL]]
    assert stack.store.sent_records([URL], INDEXNOW, int(after.timestamp()))[URL].digest == "d7"


def test_a_dead_attempt_s_record_redriven_after_the_removal_it_was_replaced_by_announces_nothing() -> None:
    # Given a page shown only by bytes an attempt put and died with, moved on since: its removal announced
    # (``removed_unless_told``, with the rank of the state those bytes showed)
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=WINDOW_S)
    engine = Engine()
    removal = change_record("blog", {}, {}, [], {}, {}, None, {URL: "5"}).body
    assert [n.urls for n in _run(pipeline, engine, NOW, removal).sent] == [[URL]]
    # When the dead attempt's own record is redriven from the dead-letter queue afterwards (the same state's rank)
    later = NOW + timedelta(seconds=WINDOW_S + 10)
    result = _run(pipeline, engine, later, _ranked("dA", "5", "added"))
    # Then nothing is sent or held: the engines were last told of the removal, as the files show
    assert (result.sent, result.held) == ([], [])
    assert stack.store.sent_records([URL], INDEXNOW, int(later.timestamp()))[URL].digest == ""


def test_a_restated_page_is_announced_only_when_something_else_was_told_since() -> None:
    # A page whose file shows the entry announced before, by a newer state of the page ("restated")
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=0)
    engine = Engine()
    restated = change_record("blog", {URL: "restated"}, {URL: "d1"}, [], {}, {URL: "3"}).body
    # Told nothing of it at all (or so long ago that it was forgotten): nothing is sent
    assert _run(pipeline, engine, NOW, restated).sent == []
    # In one batch with the change it restates, never sent (a notifier died before it): the change is sent
    added = change_record("blog", {URL: "added"}, {URL: "d1"}, [], {}, {URL: "1"}).body
    assert [n.urls for n in _run(pipeline, engine, NOW, added, restated).sent] == [[URL]]
    # Told that content: nothing again
    assert _run(pipeline, engine, NOW + timedelta(seconds=10), restated).sent == []
    # Told another section's entry since (the page moved away and back): the entry its file shows is sent
    other = change_record("news", {URL: "updated"}, {URL: "d2"}, [], {}, {URL: "4"}).body
    assert [n.urls for n in _run(pipeline, engine, NOW + timedelta(seconds=20), other).sent] == [[URL]]
    back = change_record("blog", {URL: "restated"}, {URL: "d1"}, [], {}, {URL: "5"}).body
    assert [n.urls for n in _run(pipeline, engine, NOW + timedelta(seconds=30), back).sent] == [[URL]]
    assert engine.requests == [[URL], [URL], [URL]]


@pytest.mark.parametrize("moved_on", [False, True])
def test_a_page_shown_again_in_the_state_whose_removal_was_told_is_announced_unless_it_moved_on(moved_on: bool) -> None:
    # Given blog/a recorded (its page state), and IndexNow told of its removal in that very state (a
    # removed_unless_told of bytes a dead attempt put)
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", indexnow_window_seconds=0)
    engine = Engine()
    stack.send(page("a", version=1))
    rank = stack.store.pages[URL].rank
    removal = change_record("blog", {}, {}, [], {}, {}, None, {URL: rank}).body
    assert [n.urls for n in _run(pipeline, engine, NOW, removal).sent] == [[URL]]
    if moved_on:
        stack.send(page("a", version=2, section="news"))
    # When a record shows it in that state: its section's file (announced: the page is still in that state), or
    # the dead attempt's own record, redriven after the page moved on (nothing)
    shown = change_record("blog", {URL: "added"}, {URL: "d1"}, [], {}, {URL: rank}).body
    sent = _run(pipeline, engine, NOW + timedelta(seconds=10), shown).sent
    assert [n.urls for n in sent] == ([] if moved_on else [[URL]])
