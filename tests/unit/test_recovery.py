"""Every recovery step of ingest, rebuild and index: a crash right at that step, then what must follow.

The stack is in memory (the simulation's fakes, no scheduling or random faults); a crash is an exception raised
before or after one named adapter call. What is published at the end is judged by the independent reference
model (tests/oracle.py), not by the code under test."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest

from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.messages import (
    DirtyMark,
    PageMark,
    cleanup_message,
    mark_messages,
    news_expiry_message,
    read_rebuild_request,
    repair_message,
)
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.snapshots import STATE_PREFIX as SNAPSHOT_PREFIX
from sitemap_updater.service.index import UNSETTLED, rebuild_index
from sitemap_updater.service.ingest import IngestConflict, Outcome, ingest, ingest_message, page_write
from sitemap_updater.service.marks import OUTBOX_ABANDONED_S, MarkBatch
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import rebuild_section, rebuild_sections
from sitemap_updater.service.sweep import sweep
from sitemap_updater.settings import Settings
from tests import oracle
from tests.conftest import AS_OF_US, BASE, SECTIONS, event, parse
from tests.sim.fakes import FakeS3, FakeStore, SimQueue, SimQueueState
from tests.sim.scheduler import Clock, Faults, Scheduler

NOW = datetime.fromtimestamp(AS_OF_US / 1_000_000, UTC)
CONSOLE = "arn:aws:secretsmanager:us-east-1:123456789012:secret:search-console"


class Crash(RuntimeError):
    """The function died here."""


class Stack:
    """The pipeline on in-memory AWS; ``drain`` runs rebuilds and index rebuilds until the queues are empty,
    leaving a failed batch's messages on their queue (as SQS redelivers them)."""

    def __init__(
        self, max_urls: int = 3, now: datetime = NOW, max_files_per_index: int = 50_000, notifiers: bool = True
    ) -> None:
        self.clock = Clock()
        sched = Scheduler(random.Random(0), self.clock, Faults(random.Random(0), 0.0))
        self.store = FakeStore(sched, self.clock)
        self.s3 = FakeS3(sched)
        names = ("rebuild", "index", "notify", "dlq")
        self.queues = {name: SimQueueState(name, name != "dlq", 30.0, None) for name in names}
        settings = Settings(
            site_url=BASE, sections=SECTIONS, max_urls_per_file=max_urls, max_files_per_index=max_files_per_index,
            manifest_table="t", bucket_name="b",
            rebuild_queue_url="rebuild", index_queue_url="index", notify_queue_url="notify", ingest_dlq_url="dlq",
            # IndexNow and Search Console on (their change records are sent), unless ``notifiers`` is False
            indexnow_key="recovery-key-0001" if notifiers else "",
            search_console_secret_arn=CONSOLE if notifiers else "",
        )  # fmt: skip

        def queue(name: str) -> SimQueue:
            return SimQueue(sched, self.clock, self.queues[name], name)

        self.pipeline = Pipeline(
            settings=settings,
            store=self.store,
            bucket=SitemapBucket(self.s3, "b"),  # type: ignore[arg-type]
            rebuild_queue=queue("rebuild"),
            index_queue=queue("index"),
            notify_queue=queue("notify"),
            dead_letters=queue("dlq"),
            clock=lambda: now,
        )
        self.sent: list[dict[str, Any]] = []

    def send(self, *bodies: dict[str, Any]) -> list[Any]:
        self.sent += bodies
        return [ingest(json.dumps(body), self.pipeline) for body in bodies]

    def _take(self, name: str) -> list[dict[str, Any]]:
        state = self.queues[name]
        taken, state.messages = state.messages[:10], state.messages[10:]
        return [json.loads(m.body) for m in taken]

    def step(self) -> bool:
        """One rebuild batch, else one index rebuild; False when both queues are empty."""
        self.clock.now += 400  # past SQS's deduplication interval, as a redelivery would be
        for name in ("rebuild", "index"):
            state = self.queues[name]
            if not state.messages:
                continue
            saved = list(state.messages)
            bodies = self._take(name)
            try:
                if name == "rebuild":
                    rebuild_sections(self.pipeline, [m for b in bodies for m in read_rebuild_request(b)])
                else:
                    rebuild_index(self.pipeline)
            except Crash:
                state.messages = saved + [m for m in state.messages if m not in saved]
            return True
        return False

    def until(self, hits: list[int]) -> None:
        """Run batches until a crash has happened."""
        while not hits:
            assert self.step(), "the crash never happened"

    def drain(self) -> None:
        for _ in range(100):
            if not self.step():
                return
        raise AssertionError("the queues never drained")

    def notifications(self) -> list[dict[str, Any]]:
        return [json.loads(m.body) for m in self.queues["notify"].messages]

    def named(self) -> list[str]:
        """The files the published index files name (sitemap.xml and any sitemap-index-<n>.xml)."""
        indexes = [o for n, o in sorted(self.s3.objects.items()) if re.fullmatch(r"sitemap(-index-\d+)?\.xml", n)]
        return [
            n for o in indexes for n in re.findall(r"<loc>https://www\.example\.com/([^<]+)</loc>", o.data.decode())
        ]

    def shown(self) -> dict[str, str]:
        """URL -> element over the files the published index files name."""
        names = self.named()
        shown: dict[str, str] = {}
        for name in names:
            text = gzip.decompress(self.s3.objects[name].data).decode()
            for element in re.findall(r"<url>.*?</url>", text, re.DOTALL):
                url = unescape(element.split("<loc>", 1)[1].split("</loc>", 1)[0])
                assert url not in shown, f"{url} is listed twice (again in {name})"
                shown[url] = element
        return shown

    def check(self) -> None:
        """Published = the reference model; every object in the bucket is named by the index."""
        recorded = {url: page.lastmod for url, page in self.store.current_pages().items() if page.kind == "live"}
        assert self.shown() == oracle.expected_elements(self.sent, AS_OF_US, recorded)
        names = self.named()
        named = set(names)
        assert len(names) == len(named), "a file is named by two index files"
        assert {n for n in self.s3.objects if n.endswith(".xml.gz")} == named
        # settled: every record's digest is what the bucket holds, and the index has announced it
        assert not any(f.unsettled or f.pending_index for f in self.store.file_records.values())


def replace_settings(stack: Stack, **changes: Any) -> Pipeline:
    """The stack's pipeline with other settings."""
    return replace(stack.pipeline, settings=stack.pipeline.settings.model_copy(update=changes))


@contextmanager
def crash(target: object, method: str, after: bool = False, times: int = 1, when: Callable[..., bool] | None = None
          ) -> Iterator[list[int]]:  # fmt: skip
    """Make ``target.method`` raise Crash (before the call, or after it) the next ``times`` times it is called
    (and ``when`` holds for its arguments)."""
    original = getattr(target, method)
    hits: list[int] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        due = len(hits) < times and (when is None or when(*args, **kwargs))
        if due and not after:
            hits.append(1)
            raise Crash(f"before {method}")
        result = original(*args, **kwargs)
        if due:
            hits.append(1)
            raise Crash(f"after {method}")
        return result

    object.__setattr__(target, method, wrapped)
    try:
        yield hits
    finally:
        object.__setattr__(target, method, original)


def page(name: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("lastmod", "2026-11-01")
    return event(f"{BASE}/blog/{name}", **fields)


# --- ingest ------------------------------------------------------------------------------------------------
def test_a_change_recorded_but_not_queued_is_queued_by_its_redelivery() -> None:
    stack = Stack()
    body = page("a", version=1)
    with crash(stack.pipeline.rebuild_queue, "send_batch") as hits, pytest.raises(Crash):
        stack.send(body)
    assert hits and stack.store.pages[body["url"]].outbox in stack.store.outbox  # its batch's outbox is open
    # the redelivered event is a duplicate (equal rank), and still queues the change its outbox says is unsent
    assert stack.send(body)[0].outcome == Outcome.NOOP
    assert stack.queues["rebuild"].messages
    stack.drain()
    stack.check()
    assert stack.shown()


def test_a_pending_change_is_queued_before_a_newer_event_overwrites_it() -> None:
    # Given a page that moved from blog to news, recorded but never queued (so blog still lists it)
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    with crash(stack.pipeline.rebuild_queue, "send_batch"), pytest.raises(Crash):
        stack.send(page("a", version=2, section="news"))
    # When a newer event for the page arrives
    stack.send(page("a", version=3, section="news", priority=0.5))
    stack.drain()
    # Then the old section no longer lists it
    stack.check()
    assert not any(name.startswith("sitemap-blog-") for name in stack.s3.objects)


def test_the_sweep_queues_a_change_whose_redelivery_never_came() -> None:
    stack = Stack()
    with crash(stack.pipeline.rebuild_queue, "send_batch"), pytest.raises(Crash):
        stack.send(page("a", version=1))
    sweep(stack.pipeline)  # the batch may still be running: its outbox is left alone
    assert not stack.queues["rebuild"].messages
    later = NOW + timedelta(seconds=OUTBOX_ABANDONED_S + 1)
    assert sweep(replace(stack.pipeline, clock=lambda: later)).requeued == 1
    assert not stack.store.outbox
    stack.drain()
    stack.check()
    assert stack.shown()


def test_an_event_that_failed_after_its_change_was_recorded_keeps_the_batch_s_outbox_open() -> None:
    # Given a batch whose first event's write raised after DynamoDB applied it (a timeout), and a second event
    stack = Stack()
    first, second = page("a", version=1), page("b", version=1)
    stack.sent += [first, second]
    marks = MarkBatch(stack.pipeline)
    with crash(stack.store, "put_entry", after=True), pytest.raises(Crash):
        ingest_message(json.dumps(first), "m-1", stack.pipeline, marks=marks)
    ingest_message(json.dumps(second), "m-2", stack.pipeline, marks=marks)
    marks.flush()
    # Then the batch's outbox is still open although the rest of the batch sent its marks
    assert stack.store.pages[first["url"]].outbox in stack.store.outbox
    # And the failed event's redelivery (a duplicate now) sends the first page's marks: both pages are published
    assert stack.send(first)[0].outcome == Outcome.NOOP
    stack.drain()
    stack.check()
    assert set(stack.shown()) == {first["url"], second["url"]}


def test_a_move_recorded_by_a_failed_event_is_rebuilt_by_a_newer_event_of_the_same_batch() -> None:
    # Given blog/a published, then a batch: a move to news whose write raised after it was applied, then a newer
    # event for the page in the same batch
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    moved, newer = page("a", version=2, section="news"), page("a", version=3, section="news", priority=0.5)
    stack.sent += [moved, newer]
    marks = MarkBatch(stack.pipeline)
    with crash(stack.store, "put_entry", after=True), pytest.raises(Crash):
        ingest_message(json.dumps(moved), "m-1", stack.pipeline, marks=marks)
    ingest_message(json.dumps(newer), "m-2", stack.pipeline, marks=marks)
    marks.flush()
    stack.drain()
    # Then the section the page left no longer lists it
    stack.check()
    assert not any(name.startswith("sitemap-blog-") for name in stack.s3.objects)


def test_a_crash_after_queueing_before_closing_the_outbox_publishes_once() -> None:
    stack = Stack()
    with crash(stack.store, "close_outbox"), pytest.raises(Crash):
        stack.send(page("a", version=1))
    stack.send(page("a", version=1))
    stack.drain()
    stack.check()


def test_a_malformed_event_goes_to_the_dead_letter_queue_with_its_reason() -> None:
    stack = Stack()
    result = ingest_message(json.dumps(page("a", priority=3)), "m-1", stack.pipeline)
    assert type(result).__name__ == "Rejected"
    [dead] = stack.queues["dlq"].messages
    assert "priority" in dead.attributes["reason"] and dead.attributes["source_message_id"] == "m-1"


def test_lastmod_moves_with_content_only() -> None:
    stack = Stack()
    url = f"{BASE}/blog/a"
    stack.send(event(url, version=1, occurred_at="2026-11-10T00:00:00Z"))
    assert stack.store.current_pages()[url].lastmod == "2026-11-10T00:00:00+00:00"
    # the same content sent again with its lastmod is a no-op: the lastmod does not move
    same = event(url, version=2, occurred_at="2026-11-12T00:00:00Z", lastmod="2026-11-10T00:00:00Z")
    assert stack.send(same)[0].outcome == Outcome.NOOP
    assert stack.store.current_pages()[url].lastmod == "2026-11-10T00:00:00+00:00"
    # without lastmod the newest event alone decides what is shown (README: send lastmod to keep it), so the
    # published lastmod does not depend on the order the two events arrived in
    assert stack.send(event(url, version=2, occurred_at="2026-11-12T00:00:01Z"))[0].outcome == Outcome.ACCEPTED
    assert stack.store.current_pages()[url].lastmod == "2026-11-12T00:00:01+00:00"
    # changed content without lastmod takes the moment of the change
    assert stack.send(event(url, version=3, occurred_at="2026-11-13T00:00:00Z", priority=0.5))[0].outcome == (
        Outcome.ACCEPTED
    )
    assert stack.store.current_pages()[url].lastmod == "2026-11-13T00:00:00+00:00"
    # an older event is stale (outcomes and changes are reported by these names)
    assert stack.send(event(url, version=0, priority=0.1))[0].outcome == "stale"
    gone = stack.send(event(url, type="delete", version=4))[0]
    assert (gone.outcome, gone.change) == ("accepted", "removed")
    assert stack.send(event(url, version=5))[0].change == "added"
    stack.drain()
    stack.check()


def test_a_news_only_edit_is_accepted_and_published() -> None:
    stack = Stack()
    news = {"publication_name": "T", "publication_language": "en", "publication_date": "2026-11-21T10:00:00Z",
            "title": "first"}  # fmt: skip
    stack.send(page("a", version=1, news=news))
    edit = stack.send(page("a", version=2, news={**news, "title": "second"}))
    assert edit[0].outcome == Outcome.ACCEPTED
    stack.drain()
    stack.check()
    assert "second" in stack.shown()[f"{BASE}/blog/a"]


# --- rebuild -----------------------------------------------------------------------------------------------
def test_the_changes_sent_to_notifications_say_added_updated_removed() -> None:
    stack = Stack()
    stack.send(page("a", version=1), page("b", version=1))
    stack.drain()
    stack.send(page("a", version=2, priority=0.5), page("b", type="delete", version=2))
    stack.send(page("c", version=1))
    stack.drain()
    changed: dict[str, list[str]] = {}
    for record in stack.notifications():
        for url, kind in record.get("changed", {}).items():
            changed.setdefault(url.rsplit("/", 1)[1], []).append(kind)
    assert changed == {"a": ["added", "updated"], "b": ["added", "removed"], "c": ["added"]}
    assert any("index" in record for record in stack.notifications())


def test_a_file_whose_put_may_have_happened_is_never_skipped_as_unchanged() -> None:
    # Given a published page, then an edit whose rebuild dies right after its put (the record still names the
    # old digest)
    stack = Stack()
    stack.send(page("a", version=1, priority=0.1))
    stack.drain()
    stack.send(page("a", version=2, priority=0.9))
    with crash(stack.store, "put_file"):
        stack.step()
    assert any(f.unsettled for f in stack.store.file_records.values())
    # When the page goes back to its first content before the retry
    stack.send(page("a", version=3, priority=0.1))
    stack.drain()
    # Then the file shows the first content again, not the bytes of the dead rebuild
    stack.check()


def test_an_orphan_put_under_a_new_name_is_deleted_when_the_layout_moves_on() -> None:
    # Given a new page whose rebuild dies after putting a file under a name no record holds
    stack = Stack()
    stack.send(page("a", version=1))
    with crash(stack.store, "put_file", when=lambda f: f.state != "writing"):
        stack.step()
    assert [f.state for f in stack.store.file_records.values()] == ["writing"]
    # When the page is deleted before the retry
    stack.send(page("a", type="delete", version=2))
    stack.drain()
    # Then no object is left behind and there is no index (no pages)
    assert [n for n in stack.s3.objects if not n.startswith(SNAPSHOT_PREFIX)] == []
    assert stack.store.file_records == {}


def test_a_page_an_orphan_put_showed_is_announced_removed_when_the_layout_moves_on() -> None:
    # Given a new page whose rebuild dies after putting its file, before its change record is sent
    stack = Stack()
    stack.send(page("a", version=1))
    with crash(stack.pipeline.notify_queue, "send") as hits:
        stack.until(hits)
    assert [f.state for f in stack.store.file_records.values()] == ["writing"]
    assert f"{BASE}/blog/a".encode() in gzip.decompress(stack.s3.objects["sitemap-blog-00000000.xml.gz"].data)
    # When the page is deleted before the retry, which leaves the section without a file
    stack.send(page("a", type="delete", version=2))
    stack.drain()
    # Then the search engines are told it is removed (a crawler may have read the file that showed it)
    changed = [n["changed"] for n in stack.notifications() if "changed" in n]
    assert changed == [{f"{BASE}/blog/a": "removed"}]
    assert stack.store.file_records == {}


def test_a_record_still_pending_for_the_index_queues_it_again() -> None:
    stack = Stack()
    stack.send(page("a", version=1))
    with crash(stack.pipeline.index_queue, "send"):
        stack.step()
    assert all(f.pending_index for f in stack.store.file_records.values())
    # a rebuild with no marks (a cleanup request) still queues the index for the pending record
    stack.queues["rebuild"].messages.clear()
    rebuild_section(stack.pipeline, "blog", [DirtyMark("blog", cleanup=True)])
    assert stack.queues["index"].messages
    stack.drain()
    stack.check()
    assert not any(f.pending_index for f in stack.store.file_records.values())


def test_a_file_whose_lastmod_alone_changed_is_recorded_and_indexed() -> None:
    # Given two pages in one file, one deleted, then deleted again later (same bytes, later lastmod)
    stack = Stack()
    stack.send(page("a", version=1), page("b", version=1))
    stack.drain()
    stack.send(event(f"{BASE}/blog/b", type="delete", version=2, occurred_at="2026-11-05T00:00:00Z"))
    stack.drain()
    before = stack.s3.objects["sitemap.xml"].data
    stack.send(event(f"{BASE}/blog/b", type="delete", version=3, occurred_at="2026-11-06T00:00:00Z"))
    stack.drain()
    # Then the index names the later delete as the file's lastmod
    after = stack.s3.objects["sitemap.xml"].data
    assert before != after and b"<lastmod>2026-11-06T00:00:00+00:00</lastmod>" in after
    stack.check()


def test_a_split_and_a_merge_keep_every_page_listed_once() -> None:
    stack = Stack(max_urls=2)
    bodies = [page(f"p{i}", version=1) for i in range(7)]
    stack.send(*bodies)
    stack.drain()
    stack.check()
    assert len([n for n in stack.s3.objects if n.startswith("sitemap-blog-")]) >= 4
    stack.send(*[page(f"p{i}", type="delete", version=2) for i in range(6)])
    stack.drain()
    stack.check()
    assert len([n for n in stack.s3.objects if n.startswith("sitemap-blog-")]) == 1


@pytest.mark.parametrize(
    ("target", "method", "after"),
    [("store", "mark_unsettled", False), ("store", "mark_unsettled", True), ("bucket", "publish", False),
     ("bucket", "publish", True), ("store", "put_file", False), ("notify_queue", "send", False),
     ("notify_queue", "send", True), ("store", "move_file_state", True), ("bucket", "delete", True),
     ("store", "delete_file", False), ("index_queue", "send", True)],
)  # fmt: skip
def test_a_rebuild_that_dies_at_any_step_converges(target: str, method: str, after: bool) -> None:
    stack = Stack(max_urls=2)
    stack.send(*[page(f"p{i}", version=1) for i in range(5)])
    stack.drain()
    stack.send(page("p1", version=2, priority=0.3), page("p2", type="delete", version=2), page("p9", version=1))
    with crash(getattr(stack.pipeline, target), method, after=after, times=2):
        stack.drain()
    stack.send(*[page(f"p{i}", type="delete", version=3) for i in (3, 4)])
    with crash(getattr(stack.pipeline, target), method, after=after, times=2):
        stack.drain()
    stack.drain()
    stack.check()


# --- index -------------------------------------------------------------------------------------------------
def test_an_index_put_that_may_have_happened_is_never_skipped_as_unchanged() -> None:
    # Given a published index, then a lastmod change whose index rebuild dies right after the put
    stack = Stack()
    stack.send(page("a", version=1, lastmod="2026-11-01"))
    stack.drain()
    stack.send(page("a", version=2, lastmod="2026-11-02"))
    with crash(stack.store, "put_index_sha", when=lambda sha, _gen: sha != UNSETTLED) as hits:
        stack.until(hits)
    assert stack.store.index is not None and stack.store.index[0] == UNSETTLED
    # When the page goes back to the first lastmod (the first index's bytes)
    stack.send(page("a", version=3, lastmod="2026-11-01"))
    stack.drain()
    # Then the index shows it
    assert b"<lastmod>2026-11-01</lastmod>" in stack.s3.objects["sitemap.xml"].data or (
        b"2026-11-01T00:00:00+00:00" in stack.s3.objects["sitemap.xml"].data
    )
    stack.check()


def test_an_index_of_a_site_whose_pages_were_all_deleted_is_removed() -> None:
    stack = Stack()
    stack.send(page("a", version=1), page("b", version=1))
    stack.drain()
    stack.send(page("a", type="delete", version=2), page("b", type="delete", version=2))
    with crash(stack.store, "put_index_sha"):
        stack.drain()
    stack.drain()
    assert [n for n in stack.s3.objects if not n.startswith(SNAPSHOT_PREFIX)] == []  # the index too
    assert stack.store.index is not None and stack.store.index[0] == ""
    stack.check()


def test_a_further_index_file_no_longer_needed_is_deleted_by_the_retry_of_an_index_rebuild_that_died() -> None:
    # Given a site with one further index file (3 files, 2 to an index file), then pages deleted down to one file,
    # whose index rebuild dies after writing the new index and before deleting the further index file
    stack = Stack(max_urls=1, max_files_per_index=2)
    stack.send(*[page(f"p{i}", version=1) for i in range(3)])
    stack.drain()
    assert sorted(n for n in stack.s3.objects if "index" in n) == ["sitemap-index-1.xml"]
    stack.send(*[page(f"p{i}", type="delete", version=2) for i in range(2)])
    with crash(stack.pipeline.bucket, "delete", when=lambda name: name == "sitemap-index-1.xml") as hits:
        stack.until(hits)
    # When its request is delivered again (make soak found this on a site added at run time: the retry's record
    # names the further file alone, and it was kept until the hourly reconciliation deleted it as a stray)
    stack.drain()
    # Then the further index file is gone, as it would be had the rebuild not died
    assert "sitemap-index-1.xml" not in stack.s3.objects
    stack.check()


def test_retired_files_are_deleted_even_when_the_cleanup_request_was_lost() -> None:
    # Given a section that shrank from several files to one; the index rebuild dies after marking the retired
    # files unnamed and before asking the section to delete them
    stack = Stack(max_urls=2)
    stack.send(*[page(f"p{i}", version=1) for i in range(6)])
    stack.drain()
    stack.send(*[page(f"p{i}", type="delete", version=2) for i in range(5)])
    for _ in range(3):
        if stack.queues["rebuild"].messages:
            stack.step()
    with crash(stack.pipeline.rebuild_queue, "send") as hits:
        stack.until(hits)
    stack.queues["index"].messages.clear()  # the retry of that index rebuild is what is tested next
    assert any(f.state == "unnamed" for f in stack.store.file_records.values())
    # When a later index rebuild runs (for any reason)
    stack.send(page("p5", version=3, priority=0.2))
    stack.drain()
    # Then the unnamed files are deleted
    assert all(f.state == "live" for f in stack.store.file_records.values())
    stack.check()


# --- messages ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("length", "per_message"), [(2436, 80), (1997, 98), (40, 100)])
def test_marks_are_sent_in_messages_under_the_size_limit(length: int, per_message: int) -> None:
    # 200,000 bytes of marks at most per message, counting 64 bytes besides each URL; 100 marks at most. (URLs
    # this long cannot be recorded in DynamoDB's 1,024-byte sort key: the marks are made directly.)
    stack = Stack()
    marks = MarkBatch(stack.pipeline)
    write = page_write(state_from_event(parse(page("a"))))
    urls = [f"{BASE}/blog/{i:03d}" + "x" * (length - len(BASE) - 9) for i in range(130)]
    for url in urls:
        marks.add(replace(write, url=url))
    marks.flush()
    sizes = [len(json.loads(m.body)["marks"]) for m in stack.queues["rebuild"].messages]
    assert sizes == [per_message, 130 - per_message]
    with crash(stack.pipeline.rebuild_queue, "send_batch"):
        marks.flush()  # flushed marks are gone: nothing is sent twice
    sent = [mark["url"] for m in stack.queues["rebuild"].messages for mark in json.loads(m.body)["marks"]]
    assert sorted(sent) == sorted(urls)


def test_rebuild_messages_of_every_shape_are_read() -> None:
    [marks] = mark_messages("blog", 7, [PageMark("u", 255, "rank", "added")], 3)
    assert read_rebuild_request(marks.body) == [DirtyMark("blog", "u", 255, "added", at_us=7, batch_changes=3)]
    news = news_expiry_message("blog", 16, "sitemap-blog-0000000000000010.xml.gz", 0)
    assert read_rebuild_request(news.body) == [DirtyMark("blog", key=16)]
    repair = repair_message("blog", 16, "sitemap-blog-0000000000000010.xml.gz", 0)
    assert read_rebuild_request(repair.body) == [DirtyMark("blog", key=16)]
    assert read_rebuild_request(cleanup_message("blog", 1).body) == [DirtyMark("blog", cleanup=True)]
    # the sweep's news expiry and reconciliation's repair name one file by the start of its range
    expiry = news_expiry_message("news", 1 << 62, "sitemap-news-4000000000000000.xml.gz", 5)
    repair = repair_message("blog", 255, "sitemap-blog-00000000000000ff.xml.gz", 6)
    assert read_rebuild_request(expiry.body) == [DirtyMark("news", key=1 << 62)]
    assert read_rebuild_request(repair.body) == [DirtyMark("blog", key=255)]


def test_news_exactly_48_hours_old_is_still_part_of_the_announced_digest() -> None:
    published = "2026-11-19T12:00:00Z"
    news = {"publication_name": "T", "publication_language": "en", "publication_date": published, "title": "t"}
    for age, shown in ((timedelta(hours=48), True), (timedelta(hours=48, seconds=1), False)):
        stack = Stack(now=datetime(2026, 11, 19, 12, tzinfo=UTC) + age)
        body = page("a", news=news)
        stack.send(body)
        stack.drain()
        main, news_part = oracle.element_parts(body)
        [record] = [r for r in stack.notifications() if "digests" in r]
        expected = hashlib.sha256((main + (news_part if shown else "")).encode()).hexdigest()
        assert record["digests"] == {body["url"]: expected}


def test_marks_fill_a_message_while_under_200000_bytes() -> None:
    # 96 marks of 2,064 bytes and one of 1,855 come to 199,999 bytes: one more mark still fits in that message
    stack = Stack()
    marks = MarkBatch(stack.pipeline)
    write = page_write(state_from_event(parse(page("a"))))
    lengths = [2000] * 96 + [1791] + [100] * 20
    for i, length in enumerate(lengths):
        marks.add(replace(write, url=f"{BASE}/{i:03d}" + "x" * (length - len(BASE) - 4)))
    marks.flush()
    assert [len(json.loads(m.body)["marks"]) for m in stack.queues["rebuild"].messages] == [98, 19]


def test_a_section_s_cleanup_requests_share_its_rebuild_group() -> None:
    stack = Stack()
    stack.send(page("a", section="Über Uns"))
    [mark] = stack.queues["rebuild"].messages
    body, group, _dedup = cleanup_message("Über Uns", 1)
    assert group == mark.group and body == {"v": 1, "section": "Über Uns", "cleanup": True}


def test_an_event_failing_on_its_last_receive_is_dead_lettered_with_its_error() -> None:
    stack = Stack()
    pipeline = replace_settings(stack, ingest_max_receive_count=2)

    def broken(_url: str) -> None:
        raise RuntimeError("table unavailable")

    object.__setattr__(pipeline.store, "get_page", broken)
    body = json.dumps(page("a"))
    with pytest.raises(RuntimeError):
        ingest_message(body, "m-1", pipeline)  # the first receive: SQS will retry
    result = ingest_message(body, "m-1", pipeline, receive_count=2)
    assert type(result).__name__ == "DeadLettered"
    [dead] = stack.queues["dlq"].messages
    assert dead.attributes["reason"] == "failed on all 2 receives: RuntimeError: table unavailable"
    assert dead.attributes["receive_count"] == "2"


def test_a_long_rejection_reason_is_cut_to_1000_characters() -> None:
    stack = Stack()
    bad = page("a", images=[{"loc": f"ftp://x/{i}"} for i in range(60)])
    ingest_message(json.dumps(bad), "m-1", stack.pipeline)
    [dead] = stack.queues["dlq"].messages
    assert len(dead.attributes["reason"]) == 1000


def test_an_event_that_keeps_losing_races_raises_to_be_retried() -> None:
    stack = Stack()
    object.__setattr__(stack.store, "put_state", lambda *_args: False)
    with pytest.raises(IngestConflict):
        stack.send(page("a"))


def test_the_index_change_record_names_the_new_index() -> None:
    stack = Stack()
    stack.send(page("a"))
    stack.drain()
    [record] = [r for r in stack.notifications() if "index" in r]
    digest = hashlib.sha256(stack.s3.objects["sitemap.xml"].data).hexdigest()
    assert record == {"v": 1, "index": {"generation": 1, "sha256": digest, "names": ["sitemap.xml"]}}


def test_one_changed_page_rewrites_one_file_and_reads_only_its_snapshot_and_the_page() -> None:
    stack = Stack(max_urls=2)
    stack.send(*[page(f"p{i}", version=1) for i in range(6)])
    stack.drain()
    stack.send(page("p3", version=2, priority=0.4))
    bodies = [json.loads(m.body) for m in stack.queues["rebuild"].messages]
    stack.queues["rebuild"].messages.clear()
    [done] = rebuild_sections(stack.pipeline, [m for b in bodies for m in read_rebuild_request(b)])
    [name] = done.put
    [record] = [f for f in stack.store.file_records.values() if f.name == name]
    assert record.url_count == 2
    assert (done.entries_read, done.snapshots_read) == (1, 1)  # the changed page's item, and the file's snapshot
    assert done.changed_urls == {f"{BASE}/blog/p3": "updated"}
