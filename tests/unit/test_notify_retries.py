"""How notifications wait and give up (service/notify.py): exponential waits or the engine's Retry-After (seconds,
or an HTTP date, capped at 30 s), four attempts, a request only while it can end within the invocation's budget,
which answers are retried later (429, 5xx) and which are final refusals. Waits are recorded, never slept; the
monotonic clock is scripted. On the in-memory stack of ``test_recovery``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sitemap_updater.adapters.search_console import SearchConsole
from sitemap_updater.core.messages import change_record, index_change_record
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.notify import Notifiers, NotifyResult, NotifyRetry, notify, retry_delay
from sitemap_updater.service.pipeline import Pipeline
from tests.conftest import BASE
from tests.unit.test_recovery import Stack, replace_settings

URL = f"{BASE}/blog/a"


class Engine:
    """Answers requests with the scripted statuses (the last one repeats); records each request's URL list."""

    timeout = 20.0  # the Http port: the most one request may wait

    def __init__(self, *statuses: int, headers: dict[str, str] | None = None) -> None:
        self.statuses = list(statuses)
        self.headers = headers or {}
        self.requests: list[list[str]] = []

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        self.requests.append(list(body["urlList"]) if body else [url])
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return HttpResponse(status, self.headers, "")


def _clock(*readings: float) -> Callable[[], float]:
    """A monotonic clock giving these readings in turn, then the last one again."""
    values = list(readings)
    return lambda: values.pop(0) if len(values) > 1 else values[0]


def _notify(
    engine: Engine, console: Engine | None = None, monotonic: Callable[[], float] = lambda: 0.0
) -> tuple[NotifyResult, list[float]]:
    pipeline: Pipeline = replace_settings(Stack(), indexnow_key="0123456789abcdef")
    waits: list[float] = []
    search_console = SearchConsole(console, lambda: "token") if console is not None else None
    notifiers = Notifiers(engine, search_console, sleep=waits.append, monotonic=monotonic)
    records: list[dict[str, Any]] = [change_record("blog", {URL: "added"}, {URL: "d1"}, [], {}, {URL: "r1"}).body]
    if console is not None:
        records = [index_change_record(1, "s", ["sitemap.xml"]).body]
    return notify(records, pipeline, notifiers), waits


def test_a_busy_engine_is_asked_four_times_with_exponential_waits() -> None:
    engine = Engine(503, 503, 503, 200)
    result, waits = _notify(engine)
    assert len(engine.requests) == 4 and waits == [2.0, 4.0, 8.0]
    [sent] = result.sent
    assert (sent.status, sent.attempts) == (200, 4)


def test_an_engine_busy_on_every_attempt_is_left_for_a_later_delivery() -> None:
    engine = Engine(503)
    with pytest.raises(NotifyRetry, match="IndexNow answered 503 4 times; will retry"):
        _notify(engine)
    assert len(engine.requests) == 4


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [("7", 7.0), (" 12 ", 12.0), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("Fri, 01 Jan 2100 00:00:00 GMT", 30.0)],
)
def test_retry_after_in_seconds_or_as_a_date_sets_the_wait_up_to_thirty_seconds(retry_after: str, wait: float) -> None:
    assert retry_delay(HttpResponse(429, {"Retry-After": retry_after}, ""), 1) == wait


def test_without_retry_after_waits_double_up_to_thirty_seconds() -> None:
    assert [retry_delay(HttpResponse(503, {}, ""), a) for a in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 16.0, 30.0]


def test_a_request_is_sent_only_if_it_can_end_within_the_budget() -> None:
    # The budget is 90 s from the start of the invocation; a request may take the client's 20 s timeout
    engine = Engine(200)
    result, _ = _notify(engine, monotonic=_clock(0.0, 70.0))
    assert len(engine.requests) == 1 and result.sent  # 70 + 20 s ends exactly at the budget
    late = Engine(200)
    with pytest.raises(NotifyRetry, match="the 90 s budget for requests is spent; will retry"):
        _notify(late, monotonic=_clock(0.0, 70.5))
    assert late.requests == []


@pytest.mark.parametrize("status", [400, 403, 422, 499])
def test_a_refusal_below_500_other_than_429_is_final(status: int) -> None:
    engine = Engine(status)
    result, waits = _notify(engine)
    assert len(engine.requests) == 1 and waits == []
    assert [(r.status, r.urls) for r in result.rejected] == [(status, [URL])] and not result.sent


def test_urls_whose_content_was_announced_already_are_reported_in_order() -> None:
    pipeline: Pipeline = replace_settings(Stack(), indexnow_key="0123456789abcdef")
    urls = [f"{BASE}/blog/{name}" for name in ("h", "c", "f", "a", "g", "b", "e", "d")]
    record = change_record(
        "blog", dict.fromkeys(urls, "updated"), dict.fromkeys(urls, "d"), [], {}, dict.fromkeys(urls, "r")
    ).body
    notifiers = Notifiers(Engine(200), None, sleep=lambda _s: None, monotonic=lambda: 0.0)
    notify([record], pipeline, notifiers)
    again = notify([record], pipeline, notifiers)
    assert again.already_sent == sorted(urls) and not again.sent


@pytest.mark.parametrize(("statuses", "attempts"), [((429, 204), 2), ((500, 500, 200), 3)])
def test_search_console_is_retried_while_busy(statuses: tuple[int, ...], attempts: int) -> None:
    console = Engine(*statuses)
    result, _ = _notify(Engine(200), console)
    [sent] = result.sent
    assert (sent.status, sent.attempts, len(console.requests)) == (statuses[-1], attempts, attempts)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_search_console_busy_on_every_attempt_is_left_for_a_later_delivery(status: int) -> None:
    with pytest.raises(NotifyRetry, match=f"Search Console answered {status} 4 times; will retry"):
        _notify(Engine(200), Engine(status))


def test_a_search_console_refusal_is_final() -> None:
    console = Engine(403)
    result, _ = _notify(Engine(200), console)
    assert [r.status for r in result.rejected] == [403] and not result.sent and len(console.requests) == 1


def test_indexnow_accepting_with_202_counts_as_sent() -> None:
    result, _ = _notify(Engine(202))
    assert [(s.status, s.urls) for s in result.sent] == [(202, [URL])] and not result.rejected
    assert result.sent[0].as_dict() == {"endpoint": "https://api.indexnow.org/indexnow", "status": 202, "urls": [URL]}


@pytest.mark.parametrize("status", [429, 500])
def test_indexnow_answering_429_or_5xx_on_every_attempt_is_retried_later(status: int) -> None:
    with pytest.raises(NotifyRetry, match=f"IndexNow answered {status} 4 times"):
        _notify(Engine(status))


def test_a_search_console_answer_below_500_is_final() -> None:
    console = Engine(499)
    result, _ = _notify(Engine(200), console)
    assert [r.status for r in result.rejected] == [499] and len(console.requests) == 1
