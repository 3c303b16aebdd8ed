"""The notify function as the operator sees it: which change records SQS gets back, the metrics the alarm and the
dashboard read (``NotificationsRejected``; ``UrlsNotified`` with the dashboard only) and the log lines, for a search
engine that accepts, is busy or refuses. The handler runs as Lambda runs it, on the in-memory stack of
``test_recovery``."""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from sitemap_updater.core.messages import change_record
from sitemap_updater.handlers import notify
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.wiring.pipeline import use_pipeline
from tests.conftest import BASE
from tests.unit.test_batch_outcomes import Engine
from tests.unit.test_dead_letter_reasons import FIFO_DLQ, Sqs, queue, record
from tests.unit.test_recovery import Stack, replace_settings


@dataclass(frozen=True)
class _Context:
    function_name: str = "NotifyFunction"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:NotifyFunction"
    aws_request_id: str = "request-1"


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """What the function logs (Powertools' handler keeps the stream it was made with: pointed here meanwhile)."""
    sink = io.StringIO()
    service = logging.getLogger(os.environ["POWERTOOLS_SERVICE_NAME"])
    streams = [h for h in service.handlers if isinstance(h, logging.StreamHandler)]
    previous = [h.setStream(sink) for h in streams]
    yield sink
    for handler, stream in zip(streams, previous, strict=True):
        handler.setStream(stream)
    use_pipeline(None)


def _run(
    engine: Engine, records: list[dict[str, Any]], stack: Stack | None = None, dashboard: bool = False
) -> dict[str, Any]:
    pipeline = replace_settings(
        stack or Stack(), indexnow_key="0123456789abcdef", indexnow_window_seconds=300, dashboard_metrics=dashboard
    )
    use_pipeline(pipeline, Notifiers(engine, None, sleep=lambda _s: None, monotonic=lambda: 0.0))
    answer: dict[str, Any] = notify.handler({"Records": records}, _Context())
    return answer


def test_changes_held_for_their_quiet_window_are_counted_in_the_log(logs: io.StringIO) -> None:
    # Given two pages announced moments ago, then changed again inside IndexNow's quiet window
    stack, engine = Stack(), Engine(200)
    pages = [f"{BASE}/blog/a", f"{BASE}/blog/b"]
    _run(engine, [record("first", 1, _change(*pages))], stack)
    again = _change(*pages, kind="updated", digest="d2", rank="r2")
    assert _run(engine, [record("second", 1, again)], stack) == {"batchItemFailures": []}
    # Then they are held, not sent, and the log says how many
    assert engine.posts == [pages]
    [held] = [e for e in _logged(logs) if e["message"] == "held until the quiet window ends"]
    assert held["urls"] == 2


def _change(*urls: str, kind: str = "added", digest: str = "d", rank: str = "r1") -> str:
    """A change record as a section rebuild sends it (core/messages.py): the URLs, their digests, lastmods, ranks."""
    lastmods = dict.fromkeys(urls, 1_795_262_400_000_000)
    ranks = dict.fromkeys(urls, rank)
    body = change_record("blog", dict.fromkeys(urls, kind), dict.fromkeys(urls, digest), [], lastmods, ranks).body
    return json.dumps(body)


def _metrics(printed: str) -> dict[str, float]:
    """The metric values of the EMF lines Powertools printed."""
    found: dict[str, float] = {}
    for line in printed.splitlines():
        if line.startswith("{") and "_aws" in line:
            blob = json.loads(line)
            for metric in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                value = blob[metric["Name"]]
                found[metric["Name"]] = sum(value) if isinstance(value, list) else value
    return found


def _logged(sink: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in sink.getvalue().splitlines() if line.startswith("{")]


@pytest.mark.parametrize("dashboard", [False, True])
def test_urls_accepted_are_counted_and_logged_and_no_record_comes_back(
    logs: io.StringIO, capsys: pytest.CaptureFixture[str], dashboard: bool
) -> None:
    changes = [record("a", 1, _change(f"{BASE}/blog/a", f"{BASE}/blog/b")), record("b", 1, _change())]
    answer = _run(Engine(200), changes, dashboard=dashboard)
    assert answer == {"batchItemFailures": []}
    # A custom metric ($0.30 a month) only for the dashboard that shows it; the log line counts them either way
    assert _metrics(capsys.readouterr().out).get("UrlsNotified") == (2 if dashboard else None)
    [sent] = [entry for entry in _logged(logs) if entry["message"] == "notified"]
    assert (sent["status"], sent["urls"]) == (200, 2) and sent["endpoint"].startswith("https://")
    assert not [e for e in _logged(logs) if e["message"].startswith(("held", "notification", "search engine"))]


def test_a_busy_search_engine_gives_every_record_back_and_says_so(logs: io.StringIO) -> None:
    records = [record("a", 1, _change(f"{BASE}/blog/a")), record("b", 1, _change(f"{BASE}/blog/b"))]
    answer = _run(Engine(503), records)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]}
    [busy] = [e for e in _logged(logs) if e["message"].startswith("search engine busy")]
    assert busy["level"] == "WARNING" and busy["records"] == 2


def test_a_refusal_is_final_counted_and_logged_with_its_status(
    logs: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = _run(Engine(422), [record("a", 1, _change(f"{BASE}/blog/a"))])
    assert answer == {"batchItemFailures": []}  # a refusal below 500 is not retried
    metrics = _metrics(capsys.readouterr().out)
    assert metrics["NotificationsRejected"] == 1 and "UrlsNotified" not in metrics
    [refused] = [e for e in _logged(logs) if e["message"] == "notification refused"]
    assert refused["level"] == "ERROR" and refused["status"] == 422 and refused["hint"] == ""


def test_an_unreadable_record_comes_back_alone_then_is_dead_lettered_and_counted(
    logs: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = _run(Engine(200), [record("bad", 1, "{not json"), record("good", 1, _change(f"{BASE}/blog/a"))])
    assert answer == {"batchItemFailures": [{"itemIdentifier": "bad"}]}
    assert "MessagesDeadLettered" not in _metrics(capsys.readouterr().out)
    # On its last receive it goes to the dead-letter queue: nothing comes back, and the operator is told why
    sqs = Sqs()
    stack = Stack()
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", notify_max_receive_count=2)
    notifiers = Notifiers(Engine(200), None, sleep=lambda _s: None, monotonic=lambda: 0.0)
    use_pipeline(replace(pipeline, notify_dead_letters=queue(sqs, FIFO_DLQ)), notifiers)
    answer = notify.handler({"Records": [record("bad", 2, "{not json")]}, _Context())
    assert answer == {"batchItemFailures": []} and len(sqs.sent) == 1
    assert _metrics(capsys.readouterr().out)["MessagesDeadLettered"] == 1
    [dead] = [e for e in _logged(logs) if e["message"] == "message failed on every receive"]
    assert dead["message_id"] == "bad" and "unreadable change record" in dead["reason"]
