"""Never a dead letter without a reason: a rebuild, index or notify message that fails on every receive ends in
its queue's FIFO dead-letter queue, sent there by its function with the error as its ``reason``, and everything
else still publishes."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import pytest

from sitemap_updater.local.runner import TEMPLATE, LocalRun
from sitemap_updater.local.stack import load_template, session
from sitemap_updater.service.dead_letters import DeadLetters, settle
from sitemap_updater.service.index import rebuild_index
from sitemap_updater.service.notify import notify
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory, bodies

MESSAGES = "sitemap_updater.service.batches"
QUEUES = {"INGEST": "IngestQueue", "REBUILD": "RebuildQueue", "INDEX": "IndexQueue", "NOTIFY": "NotifyQueue"}


def _failing(real: Callable[..., Any], fails: Callable[..., bool], error: Exception) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if fails(*args, **kwargs):
            raise error
        return real(*args, **kwargs)

    return call


def _dead_letters(run: LocalRun, logical: str) -> list[dict[str, Any]]:
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    url = run.stack.queue_url(logical)
    found: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"],
            VisibilityTimeout=600, WaitTimeSeconds=0,
        ).get("Messages", [])  # fmt: skip
        if not batch:
            return found
        found += [dict(m) for m in batch]


def _check_reasons(dead: list[dict[str, Any]], error: str, group: str, receives: int = 5) -> None:
    assert dead
    for message in dead:
        attributes = {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}
        assert attributes["reason"].startswith(f"failed on all {receives} receives: ")
        assert error in attributes["reason"]
        assert attributes["receive_count"] == str(receives)
        assert attributes["source_message_id"]
        assert message["Attributes"]["MessageGroupId"] == group
        assert message["Attributes"]["MessageDeduplicationId"] == attributes["source_message_id"]


def _clean(run: LocalRun) -> None:
    assert run.errors == []
    assert [d for p in run.stack.policies.values() for d in p.denied] == []


def test_each_function_knows_its_queue_s_max_receive_count_and_dead_letter_queue() -> None:
    template = load_template(TEMPLATE)
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    for prefix, logical in QUEUES.items():
        redrive = template["Resources"][logical]["Properties"]["RedrivePolicy"]
        assert int(variables[f"{prefix}_MAX_RECEIVE_COUNT"]) == int(redrive["maxReceiveCount"]), prefix
        assert variables[f"{prefix}_DLQ_URL"] == {"Ref": redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]}, prefix


def test_a_section_whose_rebuild_always_fails_is_dead_lettered_with_its_reason(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a section whose rebuild fails on every receive
    run = local_run()
    broken = lambda _pipeline, section, _marks: section == "broken"  # noqa: E731
    monkeypatch.setattr(f"{MESSAGES}.rebuild_section", _failing(rebuild_section, broken, RuntimeError("disk on fire")))
    # When pages of that section and of another one are published
    report = run.send_wave(
        bodies([event(f"{BASE}/broken/a", section="broken"), event(f"{BASE}/blog/a"), event(f"{BASE}/blog/b")])
    )
    # Then the failing section's rebuild request is in the rebuild DLQ with its error, in its message group
    # six receives: the rebuild queue keeps one for a wait by the section's freshness (FreshnessSeconds)
    _check_reasons(_dead_letters(run, "RebuildDeadLetterQueue"), "broken: RuntimeError: disk on fire", "broken", 6)
    # And the other section, the index and its notifications were published; nothing else was dead-lettered
    published = run.published()
    assert "sitemap.xml" in published
    assert any(name.startswith("sitemap-blog-") for name in published)
    assert not any("broken" in name for name in published)
    assert report.dlq == 0
    assert sorted(report.changed_urls) == [f"{BASE}/blog/a", f"{BASE}/blog/b"]
    assert _dead_letters(run, "IndexDeadLetterQueue") == _dead_letters(run, "NotifyDeadLetterQueue") == []
    _clean(run)


def test_an_index_rebuild_that_always_fails_is_dead_lettered_with_its_reason(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index rebuild that fails on every receive
    run = local_run()
    failing = [True]
    monkeypatch.setattr(
        f"{MESSAGES}.rebuild_index",
        _failing(rebuild_index, lambda _pipeline: failing[0], TimeoutError("bucket unreachable")),
    )
    # When a page is published
    run.send_wave(bodies([event(f"{BASE}/blog/a")]))
    # Then its index requests are in the index DLQ with the error, and the section's file was still published
    _check_reasons(_dead_letters(run, "IndexDeadLetterQueue"), "TimeoutError: bucket unreachable", "index", 6)
    published = run.published()
    assert "sitemap.xml" not in published
    assert any(name.startswith("sitemap-blog-") for name in published)
    # And once the index works again, the next change publishes an index naming every file
    failing[0] = False
    run.send_wave(bodies([event(f"{BASE}/docs/b")]))
    index = run.published()["sitemap.xml"].decode()
    assert "sitemap-blog-" in index and "sitemap-docs-" in index
    assert _dead_letters(run, "RebuildDeadLetterQueue") == _dead_letters(run, "NotifyDeadLetterQueue") == []
    _clean(run)


def test_a_change_record_whose_notification_always_fails_is_dead_lettered_with_its_reason(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a notifier that fails on every receive of the records that name one page
    run = local_run()
    bad = f"{BASE}/blog/bad"
    names_bad = lambda records, *_args: any(bad in str(record) for record in records)  # noqa: E731
    monkeypatch.setattr(f"{MESSAGES}.notify", _failing(notify, names_bad, ValueError("engine said no")))
    # When that page is published
    first = run.send_wave(bodies([event(bad)]))
    # Then its change records are in the notify DLQ with the error, and the sitemaps were still published
    _check_reasons(_dead_letters(run, "NotifyDeadLetterQueue"), "ValueError: engine said no", "notify")
    assert first.notifications == []
    published = run.published()
    assert "sitemap.xml" in published
    blog = next(data for name, data in published.items() if name.startswith("sitemap-blog-"))
    assert bad.encode() in gzip.decompress(blog)
    # And later changes are notified again
    second = run.send_wave(bodies([event(f"{BASE}/docs/b")]))
    assert any(f"{BASE}/docs/b" in str(n) for n in second.notifications)
    assert _dead_letters(run, "RebuildDeadLetterQueue") == _dead_letters(run, "IndexDeadLetterQueue") == []
    _clean(run)


class _Queue:
    fifo = True

    def __init__(self, fails: bool) -> None:
        self.fails = fails
        self.sent: list[tuple[str, dict[str, str], str | None, str | None]] = []

    def send_raw_grouped(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None) -> None:
        if self.fails:
            raise ConnectionError("SQS unreachable")
        self.sent.append((body, attributes, group, dedup))


def test_only_messages_on_their_last_receive_are_dead_lettered_and_a_failed_send_leaves_them_to_sqs() -> None:
    records = [
        {"messageId": "m1", "body": "one", "attributes": {"ApproximateReceiveCount": "5", "MessageGroupId": "g"}},
        {"messageId": "m2", "body": "two", "attributes": {"ApproximateReceiveCount": "4", "MessageGroupId": "g"}},
        {"messageId": "m3", "body": "three", "attributes": {"ApproximateReceiveCount": "5"}},
    ]
    errors = {"m1": "E: one", "m2": "E: two"}
    queue = _Queue(fails=False)
    settled = settle(records, errors, DeadLetters(queue, 5), "fallback")  # type: ignore[arg-type]
    assert settled.failures == ["m2"]
    assert [d.message_id for d in settled.dead_lettered] == ["m1"]
    assert queue.sent == [
        ("one", {"reason": "failed on all 5 receives: E: one", "source_message_id": "m1", "receive_count": "5"},
         "g", "m1"),
    ]  # fmt: skip
    # Without a dead-letter queue, or when the send fails, the message is SQS's to move
    assert settle(records, errors, DeadLetters(None, 5)).failures == ["m1", "m2"]
    failed = settle(records, errors, DeadLetters(_Queue(fails=True), 5))  # type: ignore[arg-type]
    assert failed.failures == ["m1", "m2"]
    assert failed.unsent == {"m1": "ConnectionError: SQS unreachable"}
