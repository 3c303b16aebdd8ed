"""What a flood of requests to the public webhook endpoint writes: one log line per request, refused or not, of
bounded size, carrying the request's metrics in CloudWatch's embedded metric format (EMF), which the template's
alarm watches. The handler runs as Lambda runs it, with the receiver's queue and secrets in memory."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from sitemap_updater.core.urls import Site
from sitemap_updater.handlers import webhook
from sitemap_updater.local.webhooks import LocalContext, Sample, function_url_event
from sitemap_updater.service.webhooks import WebhookReceiver
from sitemap_updater.wiring.webhooks import load_mapping, use_receiver
from tests.cfn_template import source
from tests.conftest import BASE

SAMPLE = Path(__file__).resolve().parents[2] / "events" / "webhooks" / "generic" / "publish.json"
SECRET = "flood-generic-secret"


class Queue:
    def __init__(self) -> None:
        self.sent = 0

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        self.sent += 1


class Secrets:
    def secrets(self, cms: str) -> tuple[str, ...]:
        return (SECRET,)

    def refresh(self) -> bool:
        return False


@pytest.fixture
def endpoint() -> Iterator[Queue]:
    queue = Queue()
    use_receiver(
        WebhookReceiver(Site.parse(BASE, sections=None), load_mapping("webhook-mapping.json"), Secrets(), queue)
    )
    yield queue
    use_receiver(None)


@contextlib.contextmanager
def written() -> Iterator[io.StringIO]:
    """Every line the handler writes while inside, as Lambda's log stream receives it (logger and stdout)."""
    out = io.StringIO()
    handlers = [h for h in logging.getLogger(webhook.logger.service).handlers if isinstance(h, logging.StreamHandler)]
    previous = [h.stream for h in handlers]
    for handler in handlers:
        handler.setStream(out)
    try:
        with contextlib.redirect_stdout(out):
            yield out
    finally:
        for handler, stream in zip(handlers, previous, strict=True):
            handler.setStream(stream)


def call(method: str, path: str, headers: dict[str, str], body: bytes) -> int:
    answer = webhook.handler(function_url_event(method, path, headers, body), cast(Any, LocalContext()))
    return int(answer["statusCode"])


def emf_metrics(line: dict[str, Any]) -> dict[tuple[str, str, tuple[tuple[str, str], ...]], float]:
    """The metrics CloudWatch extracts from one log line, by the embedded metric format's specification: a root
    ``_aws`` with a millisecond ``Timestamp`` and ``CloudWatchMetrics`` directives, each naming a namespace,
    dimension sets of root string members, and metrics whose values are root numbers (or lists of numbers)."""
    meta = line.get("_aws")
    if meta is None:
        return {}
    assert isinstance(meta["Timestamp"], int) and meta["Timestamp"] > 1_600_000_000_000
    found = {}
    for directive in meta["CloudWatchMetrics"]:
        for dimensions in directive["Dimensions"]:
            assert all(isinstance(line[d], str) for d in dimensions) and len(dimensions) <= 30
            labels = tuple((d, line[d]) for d in dimensions)
            for metric in directive["Metrics"]:
                values = line[metric["Name"]]
                values = values if isinstance(values, list) else [values]
                assert all(isinstance(v, int | float) for v in values)
                found[(directive["Namespace"], metric["Name"], labels)] = float(sum(values))
    return found


def test_each_request_of_a_flood_writes_one_line_that_carries_its_metrics(endpoint: Queue) -> None:
    sample = Sample.load(SAMPLE)
    refused = [
        ("POST", "/generic", dict(sample.headers), sample.body),  # unsigned: 401
        ("POST", "/generic", sample.signed("not-the-secret"), sample.body),  # forged: 403
        ("POST", "/wordpress", {}, b"{}"),  # no such CMS: 404
        ("GET", "/generic", {}, b""),  # 405
    ]
    accepted = ("POST", "/generic", sample.signed(SECRET), sample.body)
    with written() as out:
        statuses = [call(*refused[i % len(refused)]) for i in range(200)] + [call(*accepted)]
    assert sorted(set(statuses)) == [202, 401, 403, 404, 405] and endpoint.sent >= 1
    lines = [json.loads(text) for text in out.getvalue().splitlines()]
    assert len(lines) == len(statuses)  # one a request: not a log line and a metrics line
    service = (("service", "sitemap-updater"),)
    for line, status in zip(lines, statuses, strict=True):
        assert line["status"] == status
        if status == 202:
            assert line["message"] == "webhook accepted"
            assert emf_metrics(line) == {
                ("SitemapUpdater", "WebhooksAccepted", service): 1.0,
                ("SitemapUpdater", "WebhookEventsQueued", service): float(endpoint.sent),
            }
        else:  # each refusal says why, and counts once towards the alarm
            assert (line["message"], line["level"]) == ("webhook refused", "WARNING") and line["reason"]
            assert emf_metrics(line) == {("SitemapUpdater", "WebhooksRefused", service): 1.0}
            assert SECRET not in json.dumps(line) and sample.body.decode() not in json.dumps(line)


def test_the_refusal_alarm_watches_the_metric_each_refused_line_carries(endpoint: Queue) -> None:
    with written() as out:
        assert call("POST", "/generic", {}, b"{}") == 401
    ((namespace, name, dimensions),) = emf_metrics(json.loads(out.getvalue()))
    alarm = source()["Resources"]["WebhooksRefusedAlarm"]
    assert alarm["Condition"] == "HasWebhooks"
    watched = alarm["Properties"]
    assert (watched["Namespace"], watched["MetricName"]) == (namespace, name)
    assert tuple((d["Name"], d["Value"]) for d in watched["Dimensions"]) == dimensions
    assert (watched["Statistic"], watched["Threshold"], watched["ComparisonOperator"]) == (
        "Sum",
        0,
        "GreaterThanThreshold",
    )


def test_a_refusal_quoting_a_huge_header_is_logged_in_a_bounded_line(endpoint: Queue) -> None:
    """The sender chooses a header's length (a Function URL takes 1 MB of them): the answer may quote it, the log
    line does not."""
    listed = "x-" + "a" * 200_000
    headers = {
        "x-contentful-signature": "ab" * 32,
        "x-contentful-signed-headers": listed,
        "x-contentful-timestamp": "1700000000000",
    }
    answer = webhook.handler(function_url_event("POST", "/contentful", headers, b"{}"), cast(Any, LocalContext()))
    assert answer["statusCode"] == 401 and listed in answer["body"]
    with written() as out:
        assert call("POST", "/contentful", headers, b"{}") == 401
    (line,) = out.getvalue().splitlines()
    assert len(line) < 2_000 and "(200," in json.loads(line)["reason"]
