"""What the rebuild, index and notify functions answer for a batch (service/batches.py): which messages SQS gets
back, which go to the dead-letter queue and with what reason, and that the rest of the batch still does its work.
On the in-memory stack of ``test_recovery``, with the dead-letter queues behind a recording SQS client."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from sitemap_updater.core.messages import DirtyMark, PageMark, change_record, mark_messages, pending_index_request
from sitemap_updater.core.moments import to_micros
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service import batches
from sitemap_updater.service.batches import index_batch, notify_batch, rebuild_batch
from sitemap_updater.service.ingest import ingest_message
from sitemap_updater.service.marks import MarkBatch
from sitemap_updater.service.notify import Notifiers, NotifyResult
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import AS_OF_US, BASE
from tests.sim.fakes import Message
from tests.unit.test_dead_letter_reasons import FIFO_DLQ, Sqs, attributes, queue, record
from tests.unit.test_recovery import NOW, Stack, page, replace_settings


class Engine:
    """A search engine answering every request with one status; records the URLs of each request."""

    timeout = 20.0  # the Http port: the most one request may wait

    def __init__(self, status: int) -> None:
        self.status = status
        self.posts: list[list[str]] = []

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        self.posts.append(list(body["urlList"]) if body else [])
        return HttpResponse(self.status, {}, "")


def _with_dead_letters(stack: Stack, sqs: Sqs, max_receive_count: int) -> Pipeline:
    """The stack's pipeline with FIFO dead-letter queues for rebuild, index and notify."""
    settings = {f"{name}_max_receive_count": max_receive_count for name in ("rebuild", "index", "notify")}
    pipeline = replace_settings(stack, indexnow_key="0123456789abcdef", **settings)
    dlq = queue(sqs, FIFO_DLQ)
    return replace(pipeline, rebuild_dead_letters=dlq, index_dead_letters=dlq, notify_dead_letters=dlq)


def _notifiers(engine: Engine) -> Notifiers:
    return Notifiers(engine, None, sleep=lambda _s: None, monotonic=lambda: 0.0)


def _change(*urls: str) -> str:
    return json.dumps(change_record("blog", dict.fromkeys(urls, "added"), dict.fromkeys(urls, "d"), [], {},
                                    dict.fromkeys(urls, "r")).body)  # fmt: skip


def test_an_unreadable_change_record_fails_alone_and_the_rest_is_announced() -> None:
    sqs = Sqs()
    pipeline = _with_dead_letters(Stack(), sqs, 2)
    engine = Engine(200)
    batch = [record("bad", 1, body="{not json"), record("good", 1, body=_change(f"{BASE}/blog/a"))]
    result, settled = notify_batch(batch, pipeline, _notifiers(engine))
    assert isinstance(result, NotifyResult) and engine.posts == [[f"{BASE}/blog/a"]]
    assert settled.failures == ["bad"]
    # On its last receive it is dead-lettered, with why it could not be read
    _, settled = notify_batch([record("bad", 2, body="{not json")], pipeline, _notifiers(engine))
    [dead] = settled.dead_lettered
    assert dead.message_id == "bad" and dead.reason.startswith("failed on all 2 receives: unreadable change record: ")
    assert "JSONDecodeError" in dead.reason and attributes(sqs.sent[0])["reason"] == dead.reason


def test_a_search_engine_that_stays_busy_fails_every_message_with_that_reason() -> None:
    sqs = Sqs()
    pipeline = _with_dead_letters(Stack(), sqs, 3)
    batch = [record("m-1", 3, body=_change(f"{BASE}/blog/a")), record("m-2", 1, body=_change(f"{BASE}/blog/b"))]
    result, settled = notify_batch(batch, pipeline, _notifiers(Engine(503)))
    assert result is None and settled.failures == ["m-2"]
    [dead] = settled.dead_lettered
    assert dead.reason == (
        "failed on all 3 receives: search engine busy: NotifyRetry: IndexNow answered 503 4 times; will retry"
    )
    assert sqs.sent[0]["MessageGroupId"] == "notify"


def test_a_failing_notifier_returns_its_error_and_fails_every_message(monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = _with_dead_letters(Stack(), Sqs(), 5)

    def broken(*_args: Any) -> NotifyResult:
        raise RuntimeError("table gone")

    monkeypatch.setattr(batches, "notify", broken)
    result, settled = notify_batch(
        [record("m-1", 1, body=_change(f"{BASE}/blog/a"))], pipeline, _notifiers(Engine(200))
    )
    assert result == "RuntimeError: table gone" and settled.failures == ["m-1"]


def _marks(*names_sections: tuple[str, str]) -> str:
    marks = [PageMark(f"{BASE}/{s}/{n}", 1, "r", "added") for n, s in names_sections]
    [message] = mark_messages(names_sections[0][1], AS_OF_US, marks)
    return json.dumps(message.body)


def test_a_rebuild_batch_fails_only_the_messages_of_sections_that_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    sqs = Sqs()
    stack = Stack()
    stack.send(page("a", version=1), page("b", version=1, section="news"), page("c", version=1, section="docs"))
    stack.queues["rebuild"].messages.clear()
    pipeline = _with_dead_letters(stack, sqs, 2)

    def failing(pipeline: Pipeline, section: str, marks: list[Any]) -> Any:
        if section != "blog":
            raise RuntimeError(f"{section} broken")
        return rebuild_section(pipeline, section, marks)

    monkeypatch.setattr(batches, "rebuild_section", failing)
    batch = [
        record("blog", 1, body=_marks(("a", "blog"))),
        record("docs", 2, body=_marks(("c", "docs"))),
        record("news", 1, body=_marks(("b", "news"))),
        record("junk", 1, body="[]"),
    ]
    outcome = rebuild_batch(batch, pipeline)
    # The blog section published; the news and docs sections failed, and so did every message marking them
    assert [s.section for s in outcome.sections] == ["blog"] and outcome.sections[0].put
    assert outcome.errors == {"docs": "RuntimeError: docs broken", "news": "RuntimeError: news broken"}
    assert outcome.response() == {"batchItemFailures": [{"itemIdentifier": "news"}, {"itemIdentifier": "junk"}]}
    assert list(outcome.unreadable) == ["junk"] and outcome.unreadable["junk"].startswith("unreadable: ")
    # The message on its last receive is dead-lettered with its section's error
    [dead] = outcome.dead_lettered
    assert (dead.message_id, dead.reason) == ("docs", "failed on all 2 receives: docs: RuntimeError: docs broken")
    assert len(sqs.sent) == 1


def test_a_failed_index_rebuild_returns_its_error_and_dead_letters_in_the_index_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sqs = Sqs()
    pipeline = _with_dead_letters(Stack(), sqs, 4)

    def broken(_pipeline: Pipeline) -> Any:
        raise OSError("bucket gone")

    monkeypatch.setattr(batches, "rebuild_index", broken)
    body = json.dumps(pending_index_request(1, 0, 0).body)
    error, settled = index_batch([record("i-1", 4, body), record("i-2", 3, body)], pipeline)
    assert error == "OSError: bucket gone" and settled.failures == ["i-2"]
    assert [d.reason for d in settled.dead_lettered] == ["failed on all 4 receives: OSError: bucket gone"]
    assert sqs.sent[0]["MessageGroupId"] == "index"


def _burst(pipeline: Pipeline, pages: int, name: str = "p") -> None:
    """One ingest batch of ``pages`` new blog pages: its marks go out as one rebuild message."""
    marks = MarkBatch(pipeline)
    for i in range(pages):
        ingest_message(json.dumps(page(f"{name}{i}", version=1)), f"m-{name}{i}", pipeline, marks=marks)
    marks.flush()


def _received(stack: Stack) -> tuple[list[Message], list[dict[str, Any]]]:
    messages = stack.queues["rebuild"].receive(10, stack.clock.now, random.Random(0))
    records = [
        {"messageId": m.id, "receiptHandle": m.receipt, "body": m.body,
         "attributes": {"ApproximateReceiveCount": str(m.receive_count), "MessageGroupId": m.group or ""}}
        for m in messages
    ]  # fmt: skip
    return messages, records


def test_a_burst_s_first_rebuild_waits_for_the_rest_of_it_once() -> None:
    # Given a section's first rebuild request naming 12 changed pages, freshness 60 s (hold 45 s: no CDN cache)
    stack = Stack(max_urls=50)
    pipeline = _moving(stack, freshness_seconds=60)
    _burst(pipeline, 12)
    messages, records = _received(stack)
    # When it is received the first time
    outcome = rebuild_batch(records, pipeline)
    # Then it is given back to the queue for the burst's settle time (9 s), and nothing is rendered yet
    assert outcome.deferred == {"blog": 9} and outcome.failures == [messages[0].id] and not outcome.sections
    for message in messages:
        stack.queues["rebuild"].settle(message, False, stack.clock.now)
    assert messages[0].available_at == stack.clock.now + 9
    assert not [name for name in stack.s3.objects if name.startswith("sitemap-")]
    # And with the next ingest batch of the burst it is rebuilt once, on its second receive, without waiting again
    _burst(pipeline, 30)
    stack.clock.now += 9
    messages, records = _received(stack)
    assert len(messages) == 2 and messages[0].receive_count == 2
    outcome = rebuild_batch(records, pipeline)
    assert outcome.deferred == {} and outcome.failures == [] and [s.section for s in outcome.sections] == ["blog"]
    assert outcome.sections[0].put == ["sitemap-blog-00000000.xml.gz"]


def _rebuild_received(stack: Stack, pipeline: Pipeline) -> dict[str, int]:
    """Receive the rebuild queue's messages, run their batch at the stack's time, settle them as Lambda does;
    what waited, by section."""
    messages, records = _received(stack)
    moving = replace(pipeline, clock=lambda: NOW + timedelta(seconds=stack.clock.now))
    outcome = rebuild_batch(records, moving)
    for message in messages:
        stack.queues["rebuild"].settle(message, message.id not in outcome.failures, stack.clock.now)
    return outcome.deferred


def _moving(stack: Stack, **settings: Any) -> Pipeline:
    pipeline = replace_settings(stack, rebuild_settle_pages=10, **settings)
    return replace(pipeline, clock=lambda: NOW + timedelta(seconds=stack.clock.now))


def test_a_busy_section_is_rebuilt_once_per_hold_and_a_quiet_one_waits_only_for_a_burst() -> None:
    # Given freshness 40 s (with no CDN cache: a hold of 40 - 5 - 10 = 25 s), and a burst in a section never rebuilt
    stack = Stack(max_urls=50)
    at = _moving(stack, freshness_seconds=40)
    _burst(at, 12)
    # Then the quiet section's first request waits the burst's 9 s only, and is rebuilt after them
    assert _rebuild_received(stack, at) == {"blog": 9}
    stack.clock.now += 9
    assert _rebuild_received(stack, at) == {}
    began = stack.clock.now
    # When a lone change comes 10 s later (the section is busy: its latest rebuild began under its hold ago)
    stack.clock.now += 10
    _burst(at, 1, name="q")
    # Then it waits until that rebuild's start plus the hold (15 s more), and is rebuilt then
    assert _rebuild_received(stack, at) == {"blog": 15}
    stack.clock.now += 15
    assert stack.clock.now == began + 25
    assert _rebuild_received(stack, at) == {}
    # And a lone change a hold after the section's latest rebuild began is a quiet section's: rebuilt at once
    stack.clock.now += 25
    _burst(at, 1, name="r")
    assert _rebuild_received(stack, at) == {}


def _rebuilt_after(stack: Stack, pipeline: Pipeline) -> tuple[float, int]:
    """Run the rebuild queue as its event source does until the section is rebuilt: the seconds that took, and
    how many times its waiting messages were merged into fewer."""
    start, merges = stack.clock.now, 0
    while True:
        messages, records = _received(stack)
        outcome = rebuild_batch(records, pipeline)
        for message in messages:
            stack.queues["rebuild"].settle(message, message.id not in outcome.failures, stack.clock.now)
        if outcome.sections:
            return stack.clock.now - start, merges
        merges += sum(outcome.merged.values()) > 0
        assert outcome.deferred or outcome.merged
        stack.clock.now += sum(outcome.deferred.values())


def test_a_section_s_override_sets_its_hold_and_a_news_page_is_held_at_most_the_news_hold() -> None:
    # Given the blog slow (900 s: a hold of 885 s) and a lone change after its latest rebuild
    stack = Stack(max_urls=50)
    at = _moving(stack, freshness_seconds=60, section_freshness="docs=30,blog=900")
    _burst(at, 1)
    assert _rebuild_received(stack, at) == {}
    stack.clock.now += 10
    _burst(at, 1, name="q")
    # Then it is given back for a minute at a time (its group holds later changes meanwhile)
    assert _rebuild_received(stack, at) == {"blog": 60}
    # When 12 more changes come, one ingest batch a minute (more than a group's ten messages in all)
    for i in range(12):
        stack.clock.now += 60
        _burst(at, 1, name=f"r{i}")
        messages, records = _received(stack)
        outcome = rebuild_batch(records, at)
        for message in messages:
            stack.queues["rebuild"].settle(message, message.id not in outcome.failures, stack.clock.now)
        assert not outcome.sections  # merged and sent again (a new message), or given back
    # Then all of them are rebuilt together, 885 s after the section's latest rebuild began, not 60 s's 45
    waited, _ = _rebuilt_after(stack, at)
    assert stack.clock.now == 885 and waited > 0
    put = {name for name in stack.s3.objects if name.startswith("sitemap-blog")}
    assert put and all(f"/blog/r{i}" in _published(stack) for i in range(12))
    # When a page with a news item changes 10 s after that rebuild, whatever the section's setting
    stack.clock.now += 10
    marks = MarkBatch(at)
    news = {"publication_name": "Example Times", "publication_language": "en", "title": "T",
            "publication_date": "2026-11-20T09:00:00Z"}  # fmt: skip
    ingest_message(json.dumps(page("n", version=1, news=news)), "m-n", at, marks=marks)
    marks.flush()
    # Then it waits only until the rebuild's start plus the news hold (60 - 5 - 10 = 45 s)
    assert _rebuild_received(stack, at) == {"blog": 35}


def _published(stack: Stack) -> str:
    return "".join(
        gzip.decompress(o.data).decode() for name, o in stack.s3.objects.items() if name.startswith("sitemap-blog")
    )


@pytest.mark.parametrize(("pages", "freshness"), [(9, 60), (12, 0)])
def test_a_lone_change_in_a_quiet_section_or_no_freshness_is_rebuilt_at_once(pages: int, freshness: int) -> None:
    stack = Stack(max_urls=50)
    pipeline = replace_settings(stack, freshness_seconds=freshness, rebuild_settle_pages=10)
    _burst(pipeline, pages)
    _, records = _received(stack)
    outcome = rebuild_batch(records, pipeline)
    assert outcome.deferred == {} and outcome.failures == [] and outcome.sections[0].put


def test_a_section_whose_wait_sqs_refuses_is_rebuilt_at_once() -> None:
    stack = Stack(max_urls=50)
    pipeline = replace_settings(stack, freshness_seconds=60, rebuild_settle_pages=10)
    _burst(pipeline, 12)
    _, records = _received(stack)
    records[0]["receiptHandle"] = "expired"  # SQS answers ReceiptHandleIsInvalid
    outcome = rebuild_batch(records, pipeline)
    assert outcome.deferred == {} and outcome.failures == [] and outcome.sections[0].put


def test_a_request_ahead_of_a_merged_one_is_held_no_longer_than_the_merged_one_is_due() -> None:
    # Given the blog at 900 s (hold 885 s), rebuilt at 0 s; a change at 10 s given back for a minute, and with a
    # change at 20 s merged into one new request at 70 s, due when the change of 10 s is 885 s old
    stack = Stack(max_urls=50)
    at = _moving(stack, freshness_seconds=900)
    _burst(at, 1)
    assert _rebuild_received(stack, at) == {}
    stack.clock.now = 10
    _burst(at, 1, name="q")
    assert _rebuild_received(stack, at) == {"blog": 60}
    stack.clock.now = 20
    _burst(at, 1, name="r")
    stack.clock.now = 70
    messages, records = _received(stack)
    outcome = rebuild_batch(records, at)
    for message in messages:
        stack.queues["rebuild"].settle(message, message.id not in outcome.failures, stack.clock.now)
    assert outcome.merged == {"blog": 2} and not outcome.sections
    due = to_micros(NOW) + 895 * 1_000_000
    assert stack.store.rebuild_times("blog")[1] == due
    # When a rebuild of the section began at 40 s without it (its group held more than one batch), and a later
    # change's request is received alone at 71 s (ahead of the merged one in the group)
    stack.store.next_rebuild("blog", to_micros(NOW) + 40 * 1_000_000)
    stack.clock.now = 71
    later = [DirtyMark("blog", f"{BASE}/blog/n", 1, "added", at_us=to_micros(NOW) + 71 * 1_000_000)]
    # Then it is held until the merged request is due (895 s), not until 40 s + 885 s: the group holds that one
    # behind it
    assert batches.hold_for(at, "blog", later).seconds == 895 - 71
    # And the rebuild that takes the merged request clears its due time
    stack.store.next_rebuild("blog", to_micros(NOW))
    _rebuilt_after(stack, at)
    assert stack.clock.now <= 895 and stack.store.rebuild_times("blog")[1] == 0
