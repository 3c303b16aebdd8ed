"""IndexNow's limit of 10,000 URLs a request, on both sides: the notifier's requests to a real HTTP receiver on
127.0.0.1 for 9,999, 10,000, 10,001 and 20,001 changed URLs (coalesced from three sections' change records).
Each request carries at most 10,000 URLs, every changed URL is sent exactly once, their union is the changed set,
and no more requests are made than the limit requires. On the in-memory stack of ``test_recovery``."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.core.messages import change_record
from sitemap_updater.service.notify import Notifiers, notify
from tests.conftest import BASE
from tests.unit.test_recovery import Stack, replace_settings

KEY = "batch-indexnow-key-0001"
LIMIT = 10_000  # IndexNow's documented most URLs per request (a literal: not the constant under test)


@pytest.mark.parametrize(("changed", "requests"), [(9_999, 1), (10_000, 1), (10_001, 2), (20_001, 3)])
def test_changed_urls_are_sent_in_requests_of_at_most_10000_each_exactly_once(
    httpserver: HTTPServer, changed: int, requests: int
) -> None:
    bodies: list[dict[str, Any]] = []

    def accept(request: Request) -> Response:
        bodies.append(json.loads(request.data))
        return Response(status=202)

    httpserver.expect_request("/indexnow", method="POST").respond_with_handler(accept)
    pipeline = replace_settings(Stack(), indexnow_key=KEY, indexnow_endpoint=httpserver.url_for("/indexnow"))
    # Given the change records of three section rebuilds that changed ``changed`` pages between them
    urls = [f"{BASE}/{('blog', 'docs', 'shop')[i % 3]}/p{i:05d}" for i in range(changed)]
    records = []
    for section in ("blog", "docs", "shop"):
        mine = {u: "added" for u in urls if f"/{section}/" in u}
        digests = {u: f"d-{u[-5:]}" for u in mine}
        records.append(change_record(section, mine, digests, [], {}, dict.fromkeys(mine, "r")).body)
    # When the notifier handles them
    result = notify(records, pipeline, Notifiers(HttpClient(timeout=20)))
    # Then each request holds at most 10,000 URLs, every URL is sent exactly once, and nothing else is sent
    assert {(b["host"], b["key"], b["keyLocation"]) for b in bodies} == {("www.example.com", KEY, f"{BASE}/{KEY}.txt")}
    lists = [b["urlList"] for b in bodies]
    assert [len(urls_sent) for urls_sent in lists] == [min(LIMIT, changed - LIMIT * i) for i in range(requests)]
    sent = Counter(url for urls_sent in lists for url in urls_sent)
    assert set(sent.values()) == {1}
    assert set(sent) == set(urls)
    assert [n.status for n in result.sent] == [202] * requests


def test_the_urls_sent_are_recorded_so_a_redelivered_batch_sends_none_again(httpserver: HTTPServer) -> None:
    # Given 10,001 changed URLs announced in two requests
    lists: list[list[str]] = []

    def accept(request: Request) -> Response:
        lists.append(json.loads(request.data)["urlList"])
        return Response(status=200)

    httpserver.expect_request("/indexnow", method="POST").respond_with_handler(accept)
    pipeline = replace_settings(Stack(), indexnow_key=KEY, indexnow_endpoint=httpserver.url_for("/indexnow"))
    urls = {f"{BASE}/blog/p{i:05d}": "updated" for i in range(10_001)}
    record = change_record("blog", urls, dict.fromkeys(urls, "d"), [], {}, dict.fromkeys(urls, "r")).body
    notify([record], pipeline, Notifiers(HttpClient(timeout=20)))
    # When the same record is delivered again
    again = notify([record], pipeline, Notifiers(HttpClient(timeout=20)))
    # Then nothing more is sent: both requests' URLs were recorded as accepted
    assert [len(urls_sent) for urls_sent in lists] == [10_000, 1]
    assert again.sent == [] and len(again.already_sent) == 10_001
