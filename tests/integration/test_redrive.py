"""`sitemap-updater redrive` against moto: a dead letter that failed on every receive goes back to its queue and is
published, a rejected one stays with its reason, a crash between a send and its delete leaves at most a duplicate
that changes nothing, and a FIFO dead letter keeps its message group and deduplication ID."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.cli import main
from sitemap_updater.local.runner import LocalRun
from sitemap_updater.local.stack import session
from sitemap_updater.service.index import rebuild_index
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory, bodies

QUEUES = {  # the command's name for a queue -> the template's queue and dead-letter queue
    "ingest": ("IngestQueue", "IngestDeadLetterQueue"),
    "rebuild": ("RebuildQueue", "RebuildDeadLetterQueue"),
    "index": ("IndexQueue", "IndexDeadLetterQueue"),
}
THROTTLED = ClientError(
    {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate of requests exceeds the limit."}},
    "PutItem",
)


def _redrive(monkeypatch: pytest.MonkeyPatch, run: LocalRun, queue: str, *options: str) -> int:
    logical, dead = QUEUES[queue]
    prefix = queue.upper()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": "us-east-1",
        f"{prefix}_QUEUE_URL": run.stack.queue_url(logical),
        f"{prefix}_DLQ_URL": run.stack.queue_url(dead),
    }.items():
        monkeypatch.setenv(name, value)
    assert run.endpoint_url is not None
    return main(["redrive", queue, "--endpoint-url", run.endpoint_url, *options])


def _messages(run: LocalRun, logical: str) -> list[dict[str, Any]]:
    """Every message of a queue, with its attributes, left visible (a FIFO queue: the first of each group's)."""
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    url = run.stack.queue_url(logical)
    found: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], MessageAttributeNames=["All"],
        VisibilityTimeout=30, WaitTimeSeconds=0,
    ).get("Messages", []):  # fmt: skip
        found += [dict(m) for m in batch]
    for message in found:
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return found


def _reason(message: dict[str, Any]) -> str:
    return str(message.get("MessageAttributes", {}).get("reason", {}).get("StringValue", ""))


def _failing(real: Callable[..., Any], fails: Callable[..., bool], error: Exception) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if fails(*args, **kwargs):
            raise error
        return real(*args, **kwargs)

    return call


def _shown(run: LocalRun, url: str) -> str | None:
    """The <url> element a published sitemap file shows for ``url``, if any."""
    for name, data in run.published().items():
        if name.endswith(".xml.gz"):
            text = gzip.decompress(data).decode()
            start = text.find(f"<loc>{url}</loc>")
            if start >= 0:
                return text[text.rfind("<url>", 0, start) : text.find("</url>", start)]
    return None


def test_a_throttled_event_is_redriven_and_published_while_a_rejected_one_stays_with_its_reason(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an event DynamoDB throttled on every receive, and an event for another host, both dead-lettered
    run = local_run()
    throttled_url, other = f"{BASE}/blog/throttled", f"{BASE}/blog/fine"
    throttled = [True]
    hit = lambda body, *_args: throttled[0] and throttled_url in str(body)  # noqa: E731
    monkeypatch.setattr("sitemap_updater.service.ingest.ingest", _failing(ingest, hit, THROTTLED))
    foreign = event("https://evil.example.net/blog/x")
    run.send_wave(bodies([event(throttled_url), foreign, event(other)]))
    assert _shown(run, throttled_url) is None and _shown(run, other) is not None
    assert len(_messages(run, "IngestDeadLetterQueue")) == 2
    throttled[0] = False  # the throttling is over
    capsys.readouterr()

    # When the operator lists the dead letters, then redrives them
    assert _redrive(monkeypatch, run, "ingest", "--dry-run") == 0
    listed = capsys.readouterr().out
    assert _redrive(monkeypatch, run, "ingest") == 0
    done = capsys.readouterr()

    # Then the listing named each one's reason and what a redrive would do, and changed nothing
    assert "would redrive: failed" in listed and "ProvisionedThroughputExceededException" in listed
    assert "would keep: rejected" in listed and "evil.example.net" in listed
    # And the redrive sent the throttled event back, which is published like any event
    assert "redriven: failed" in done.out and "kept: rejected" in done.out
    assert "1 redriven, 1 kept, 0 discarded" in done.err
    report = run.send_wave([])
    assert report.events["accepted"] == 1 and report.changed_urls == [throttled_url]
    assert _shown(run, throttled_url) is not None
    # And the rejected event is still in the dead-letter queue, with its reason
    left = _messages(run, "IngestDeadLetterQueue")
    assert [json.loads(m["Body"])["url"] for m in left] == [foreign["url"]]
    assert "host 'evil.example.net' is not a site of this stack" in _reason(left[0])


def test_a_dead_lettered_rebuild_stays_unpublished_until_redriven_in_its_group_under_its_deduplication_id(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a published section, and a change to one of its pages whose rebuild failed on every receive
    run = local_run()
    changed, later = f"{BASE}/blog/a", f"{BASE}/blog/b"
    run.send_wave(bodies([event(changed, lastmod="2026-11-01"), event(later, lastmod="2026-11-01")]))
    broken = [True]
    names_changed = lambda _p, _s, marks: broken[0] and any(m.url == changed for m in marks)  # noqa: E731
    monkeypatch.setattr(
        "sitemap_updater.service.batches.rebuild_section",
        _failing(rebuild_section, names_changed, ConnectionError("S3 unreachable")),
    )
    run.send_wave(bodies([event(changed, version=2, lastmod="2026-11-20")]))
    dead = _messages(run, "RebuildDeadLetterQueue")
    assert len(dead) == 1 and "S3 unreachable" in _reason(dead[0])
    broken[0] = False
    # When another page of the same file changes, the dead-lettered change is still not published
    run.send_wave(bodies([event(later, version=2, lastmod="2026-11-21")]))
    assert "2026-11-21" in str(_shown(run, later))
    assert "2026-11-01" in str(_shown(run, changed))

    # When the rebuild's dead letter is redriven
    assert _redrive(monkeypatch, run, "rebuild") == 0

    # Then it is on the rebuild queue as it was, in its section's group, under the dead letter's deduplication ID
    (copy,) = _messages(run, "RebuildQueue")
    assert copy["Body"] == dead[0]["Body"]
    assert copy["Attributes"]["MessageGroupId"] == dead[0]["Attributes"]["MessageGroupId"] == "blog"
    assert copy["Attributes"]["MessageDeduplicationId"] == dead[0]["Attributes"]["MessageDeduplicationId"]
    # And its rebuild publishes the change, and the dead-letter queue is empty
    run.send_wave([])
    assert "2026-11-20" in str(_shown(run, changed))
    assert _messages(run, "RebuildDeadLetterQueue") == []


def _delete_fails_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = MessageQueue.delete
    calls = [0]

    def delete(self: MessageQueue, receipt: str) -> None:
        calls[0] += 1
        if calls[0] == 1:
            raise ConnectionError("the operator's network went away")
        real(self, receipt)

    monkeypatch.setattr(MessageQueue, "delete", delete)


def test_a_crash_between_send_and_delete_on_a_fifo_queue_leaves_one_message_once_run_again(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an index rebuild that failed on every receive: the site has files but no index
    run = local_run()
    failing = [True]
    monkeypatch.setattr(
        "sitemap_updater.service.batches.rebuild_index",
        _failing(rebuild_index, lambda _p: failing[0], TimeoutError("bucket unreachable")),
    )
    run.send_wave(bodies([event(f"{BASE}/blog/a")]))
    assert len(_messages(run, "IndexDeadLetterQueue")) == 1 and "sitemap.xml" not in run.published()
    failing[0] = False
    # When a redrive stops between sending the copy and deleting the dead letter
    _delete_fails_once(monkeypatch)
    assert _redrive(monkeypatch, run, "index") == 1
    assert "its copy was sent" in capsys.readouterr().err
    assert len(_messages(run, "IndexQueue")) == len(_messages(run, "IndexDeadLetterQueue")) == 1
    # And it is run again
    assert _redrive(monkeypatch, run, "index") == 0
    # Then SQS dropped the second copy (the same deduplication ID within five minutes) and the dead letter is gone
    assert len(_messages(run, "IndexQueue")) == 1
    assert _messages(run, "IndexDeadLetterQueue") == []
    run.send_wave([])
    assert "sitemap-blog-" in run.published()["sitemap.xml"].decode()


def test_a_crash_between_send_and_delete_on_the_ingest_queue_leaves_a_duplicate_that_changes_nothing(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an event throttled on every receive, dead-lettered
    run = local_run()
    url = f"{BASE}/news/throttled"
    throttled = [True]
    hit = lambda body, *_args: throttled[0] and url in str(body)  # noqa: E731
    monkeypatch.setattr("sitemap_updater.service.ingest.ingest", _failing(ingest, hit, THROTTLED))
    run.send_wave(bodies([event(url)]))
    throttled[0] = False
    # When a redrive stops between send and delete, and is run again
    _delete_fails_once(monkeypatch)
    assert _redrive(monkeypatch, run, "ingest") == 1
    assert _redrive(monkeypatch, run, "ingest") == 0
    # Then the ingest queue got the event twice: the first is published, the second is a duplicate (a no-op)
    assert len(_messages(run, "IngestQueue")) == 2
    report = run.send_wave([])
    assert report.events == {"accepted": 1, "rejected": 0, "stale": 0, "noop": 1}
    assert report.changed_urls == [url]
    assert _messages(run, "IngestDeadLetterQueue") == []


def test_an_unreadable_rebuild_message_is_kept_with_its_reason_and_discarded_only_when_asked(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a rebuild message no rebuild can read, dead-lettered after every receive
    run = local_run()
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    sqs.send_message(
        QueueUrl=run.stack.queue_url("RebuildQueue"), MessageBody="not a rebuild request",
        MessageGroupId="blog", MessageDeduplicationId="garbage",
    )  # fmt: skip
    run.send_wave([])
    (dead,) = _messages(run, "RebuildDeadLetterQueue")
    assert "unreadable" in _reason(dead)
    capsys.readouterr()
    # When it is redriven: it stays, named as rejected, with its reason
    assert _redrive(monkeypatch, run, "rebuild") == 0
    out = capsys.readouterr().out
    assert "kept: rejected" in out and "unreadable" in out
    assert _messages(run, "RebuildQueue") == [] and len(_messages(run, "RebuildDeadLetterQueue")) == 1
    # And only --discard-rejected deletes it
    assert _redrive(monkeypatch, run, "rebuild", "--discard-rejected") == 0
    assert "discarded: rejected" in capsys.readouterr().out
    assert _messages(run, "RebuildDeadLetterQueue") == [] and _messages(run, "RebuildQueue") == []
