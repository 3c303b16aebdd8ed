"""How the adapters answer AWS's real failure shapes, and the time budgets that keep retries inside a function's
timeout. Every wait is recorded, never slept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.manifest import ManifestStore, StillUnprocessed
from sitemap_updater.core.formats import UnknownFormat
from sitemap_updater.core.messages import change_record
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.local.stack import load_template
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.ingest import DeadLettered, ingest_message, page_write
from sitemap_updater.service.notify import RETRY_BUDGET_S, Notifiers, NotifyRetry, notify
from tests.conftest import BASE, event, parse
from tests.sim.world import Config, Simulation

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


class _Dynamo:
    """A DynamoDB client that answers each call with the next scripted outcome (an exception or a response)."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[dict[str, Any]] = []

    def _next(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        outcome = self.outcomes.pop(0) if self.outcomes else {}
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    put_item = get_item = batch_write_item = batch_get_item = _next


def _store(client: _Dynamo, waits: list[float]) -> ManifestStore:
    return ManifestStore(client, "table", sleep=waits.append)  # type: ignore[arg-type]


def _write() -> Any:
    return page_write(state_from_event(parse(event(f"{BASE}/blog/a", version=2))))


def _failed(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, "PutItem")


def test_a_failed_condition_on_the_page_state_means_another_event_won() -> None:
    waits: list[float] = []
    client = _Dynamo(_failed("ConditionalCheckFailedException"))
    assert _store(client, waits).put_state(_write(), "old-rank", "o") is False
    [call] = client.calls
    assert call["ConditionExpression"] == "#rank = :expected"
    assert call["ExpressionAttributeValues"] == {":expected": {"S": "old-rank"}}
    assert waits == []


def test_an_entry_is_written_only_over_an_older_rank() -> None:
    client = _Dynamo(_failed("ConditionalCheckFailedException"), {})
    store, write = _store(client, []), _write()
    assert store.put_entry(write) is False  # the section holds this rank or a newer one
    assert store.leave_section("news", write) is True
    entry, marker = client.calls
    condition = "attribute_not_exists(pk) OR #rank < :rank"
    assert entry["ConditionExpression"] == marker["ConditionExpression"] == condition
    assert entry["Item"]["rank"] == marker["Item"]["rank"] == {"S": write.rank}
    assert entry["Item"]["v"] == marker["Item"]["v"] == {"N": "1"}
    assert "record" in entry["Item"] and "record" not in marker["Item"]
    assert marker["Item"]["pk"] == {"S": "sec#news"} and marker["Item"]["sk"] == entry["Item"]["sk"]


def test_an_entry_rank_reads_none_for_no_item_and_refuses_an_item_of_another_format() -> None:
    items = [{"v": {"N": "1"}, "rank": {"S": "r"}}, {"rank": {"S": "r"}}, {"v": {"N": "2"}, "rank": {"S": "r"}}]
    store = _store(_Dynamo({}, *({"Item": item} for item in items)), [])
    assert [store.entry_rank("blog", 1, f"{BASE}/blog/a") for _ in range(2)] == [None, "r"]
    url = f"{BASE}/blog/a"
    with pytest.raises(UnknownFormat, match=f"^the blog entry of {url} carries no format version; .* reads version 1"):
        store.entry_rank("blog", 1, url)
    with pytest.raises(UnknownFormat, match=f"^the blog entry of {url} is of format version 2; .* reads version 1"):
        store.entry_rank("blog", 1, url)


@pytest.mark.parametrize(
    "code", ["ValidationException", "ProvisionedThroughputExceededException", "ThrottlingException"]
)
def test_other_errors_of_a_conditional_write_raise(code: str) -> None:
    with pytest.raises(ClientError):
        _store(_Dynamo(_failed(code)), []).put_state(_write(), None, "o")
    with pytest.raises(ClientError):
        _store(_Dynamo(_failed(code)), []).put_entry(_write())


def test_unprocessed_items_are_sent_again_after_a_backoff() -> None:
    waits: list[float] = []
    table = "table"
    first = {"UnprocessedItems": {table: [{"PutRequest": {"Item": {"pk": {"S": "sent#a"}}}}]}}
    client = _Dynamo(first, first, {})
    _store(client, waits).mark_sent({f"{BASE}/a": "d1", f"{BASE}/b": "d2"}, "indexnow", 10, 20)
    assert len(client.calls) == 3
    assert client.calls[1]["RequestItems"] == first["UnprocessedItems"]
    assert len(waits) == 2 and all(0 <= w <= 4 for w in waits)


def test_items_unprocessed_on_every_attempt_raise_instead_of_looping() -> None:
    stuck = {"UnprocessedItems": {"table": [{"PutRequest": {"Item": {"pk": {"S": "sent#a"}}}}]}}
    client = _Dynamo(*[stuck] * 20)
    with pytest.raises(StillUnprocessed):
        _store(client, []).mark_sent({f"{BASE}/a": "d1"}, "indexnow", 10, 20)
    assert len(client.calls) == 6


def test_unprocessed_keys_are_read_again() -> None:
    keys = {"table": {"Keys": [{"pk": {"S": f"sent#{BASE}/a"}, "sk": {"S": "indexnow"}}]}}
    item = {"pk": {"S": f"sent#{BASE}/a"}, "v": {"N": "1"}, "expires_at": {"N": "99"}, "quiet_until": {"N": "50"},
            "digest": {"S": "d"}}  # fmt: skip
    client = _Dynamo({"UnprocessedKeys": keys}, {"Responses": {"table": [item]}})
    found = _store(client, []).sent_records([f"{BASE}/a"], "indexnow", 10)
    assert found[f"{BASE}/a"].digest == "d"
    assert len(client.calls) == 2


class _SlowBusyEngine:
    """Every request takes the whole HTTP timeout and answers 503 with the longest Retry-After."""

    timeout = 20.0  # the Http port: the most one request may wait

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.requests = 0

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        self.clock[0] += self.timeout
        self.requests += 1
        return HttpResponse(503, {"Retry-After": "120"}, "")


def test_notify_gives_up_within_its_budget_and_the_budget_fits_the_function_timeout() -> None:
    # Given a search engine that is slow and busy on every request
    clock = [0.0]
    engine = _SlowBusyEngine(clock)
    notifiers = Notifiers(engine, None, sleep=lambda s: clock.__setitem__(0, clock[0] + s), monotonic=lambda: clock[0])
    pipeline = Simulation(Config(1, fault_rate=0.0)).pipeline
    url = f"{BASE}/blog/a"
    record = change_record("blog", {url: "added"}, {url: "d"}, [], {}, {url: "r"}).body
    # When the notifier handles a change record
    with pytest.raises(NotifyRetry):
        notify([record], pipeline, notifiers)
    # Then it retried, gave the record back to SQS before its budget ran out, and the budget leaves time for
    # the DynamoDB and S3 calls inside the function's timeout
    assert engine.requests >= 2
    assert clock[0] <= RETRY_BUDGET_S
    timeout = load_template(TEMPLATE)["Resources"]["NotifyFunction"]["Properties"]["Timeout"]
    assert timeout >= RETRY_BUDGET_S + 45


def test_an_event_failing_on_its_last_receive_goes_to_the_dead_letter_queue_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an ingest whose DynamoDB calls are throttled on every attempt
    simulation = Simulation(Config(1, fault_rate=0.0))
    pipeline = simulation.pipeline
    throttled = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "GetItem")
    monkeypatch.setattr(pipeline.store, "get_page", lambda _url: (_ for _ in ()).throw(throttled))
    body = json.dumps(event(f"{BASE}/blog/a"))
    # When SQS delivers the event before its last receive, it fails (SQS will deliver it again)
    with pytest.raises(ClientError):
        ingest_message(body, "m-1", pipeline, receive_count=pipeline.settings.ingest_max_receive_count - 1)
    # Then on the last receive it is dead-lettered with its error as the reason, and reported as handled
    result = ingest_message(body, "m-1", pipeline, receive_count=pipeline.settings.ingest_max_receive_count)
    assert isinstance(result, DeadLettered)
    dead = simulation.ingest_queue.dead_letter
    assert dead is not None
    assert [m.body for m in dead.messages] == [body]
    assert "ProvisionedThroughputExceededException" in dead.messages[0].attributes["reason"]


def test_the_last_receive_the_ingest_function_knows_is_the_queue_s_max_receive_count() -> None:
    template = load_template(TEMPLATE)
    configured = template["Globals"]["Function"]["Environment"]["Variables"]["INGEST_MAX_RECEIVE_COUNT"]
    redrive = template["Resources"]["IngestQueue"]["Properties"]["RedrivePolicy"]
    assert int(configured) == int(redrive["maxReceiveCount"])
