"""In-memory AWS for the simulation. Every method that is one AWS call in the real adapter is one atomic
step here, made through :meth:`Scheduler.point` (where faults strike and other invocations interleave).

The DynamoDB store fakes ``ManifestStore`` method by method with the same conditions, except ingest's
conditional single-item writes and reads, the transaction and the batch calls, which are faked at the client
level (``tests/sim/dynamo.py``) so that the real code builds their conditions and reads their failures,
cancellation reasons and unprocessed items; each of ingest's writes is a step of its own, so a crash (or another
invocation) can come between any two of them. S3 is faked at the client level, so the real compare-and-swap
``SitemapBucket.publish`` (HEAD, then a conditional PUT) runs. The error shapes AWS answers with are drawn in
``tests/sim/faults.py``. The real adapters are exercised against moto in ``tests/integration``."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from sitemap_updater.adapters.manifest import ManifestStore, entry_pk, entry_sort_key, page_pk
from sitemap_updater.adapters.queues import batches
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import Message as OutMessage
from sitemap_updater.core.pages import EntryItem, PageRecord, PageWrite, SentRecord
from sitemap_updater.core.records import decode_states
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.core.snapshots import PendingPut, SnapshotRef
from sitemap_updater.ports import HttpResponse, ImportHold
from sitemap_updater.service.marks import stored
from sitemap_updater.sites import SiteConfig
from tests.conftest import AS_OF_US
from tests.sim.dynamo import FakeDynamoClient, check_item, check_key
from tests.sim.scheduler import Clock, Scheduler
from tests.sim.throughput import Throughput

_T = TypeVar("_T")


def _client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, operation)


# --- DynamoDB ----------------------------------------------------------------------------------------------
class FakeStore:
    """The manifest table as dictionaries: the ``Manifest`` port, with the conditions of :class:`ManifestStore`.
    Ingest's page writes and the batch calls (:data:`CLIENT_LEVEL`) are answered by the real adapter, ``aws``,
    running over a fake client (``tests/sim/dynamo.py``), so its handling of AWS's answers is what runs."""

    CLIENT_LEVEL = ("put_state", "put_entry", "leave_section", "entry_rank", "entry_item",
                    "update_entry", "sent_records", "mark_sent")  # fmt: skip

    def __init__(self, sched: Scheduler, clock: Clock, partitions: int = 1, prefix: str = "") -> None:
        self._sched = sched
        self.prefix = prefix  # the site's partition keys' prefix (core/site_keys.py): its items are all here
        self.sections: set[str] = set()  # the sections a site added at run time recorded (adapters/site_records.py)
        self.sites: dict[str, FakeStore] = {}  # the stores of the sites added at run time, by prefix
        self.pages: dict[str, PageRecord] = {}
        self.manifest: dict[str, dict[str, bytes]] = {}  # a removal marker's record is b""
        self.entry_ranks: dict[tuple[str, str], str] = {}  # by (section, sort key): the rank each item carries
        self.entry_tags: dict[tuple[str, str], tuple[bool, str]] = {}  # by (section, sort key): current, outbox
        self.seqs: dict[str, int] = {}  # the counters: rebuild numbers, when they began, the index generation
        self.file_records: dict[tuple[str, int], PublishedFile] = {}
        self.index: tuple[str, int] | None = None
        self.outbox: dict[str, list[str]] = {}  # open outboxes: name -> the URLs of their batch
        self.sent: dict[tuple[str, str], tuple[int, SentRecord]] = {}  # by (pk, channel)
        self.refused_urls: set[str] = set()  # pages whose every write DynamoDB refuses (tests/sim/dynamo.py)
        self.throughput: Throughput | None = None  # DynamoDB's limits, when a test sets them (tests/sim/dynamo.py)
        self.clock = clock
        self.waited_s = 0.0

        def sleep(seconds: float) -> None:  # a backoff passes virtual time
            clock.now += seconds
            self.waited_s += seconds

        self.sleep = sleep

        client: Any = FakeDynamoClient(self)
        self.aws = ManifestStore(client, "sim-manifest", sleep=sleep, partitions=partitions, prefix=prefix)

    def for_site(self, prefix: str) -> FakeStore:
        """The store of the site whose partition keys start with ``prefix``: the items of the same table under
        that prefix, which share no key with this store's (each a FakeStore of its own, kept here)."""
        if not prefix:
            return self
        if prefix not in self.sites:
            self.sites[prefix] = FakeStore(self._sched, self.clock, self.aws.partitions, prefix)
        return self.sites[prefix]

    def delete_site_records(self, urls: Sequence[str] = ()) -> int:
        """Every item of this site deleted (adapters/site_records.py finds them on DynamoDB); how many there were."""
        if not self.prefix:
            raise ValueError("the stack's own site has no prefix: its records are not removed this way")

        def delete() -> int:
            count = self.item_count()
            fresh = FakeStore(self._sched, self.clock, self.aws.partitions, self.prefix)
            for name, value in vars(fresh).items():
                if name not in ("aws", "sleep", "clock", "_sched"):
                    setattr(self, name, value)
            return count

        return int(self._call("delete_site_records", delete))

    def item_count(self) -> int:
        """How many items this store's dictionaries stand for (page states, section items, records, counters)."""
        records = len(self.file_records) + len(self.seqs) + len(self.outbox) + len(self.sent) + len(self.sections)
        return len(self.pages) + sum(len(m) for m in self.manifest.values()) + records + (self.index is not None)

    def put_state(self, write: PageWrite, expected_rank: str | None, outbox: str, entry_rank: str = "") -> bool:
        return self.aws.put_state(write, expected_rank, outbox, entry_rank)

    def put_entry(self, write: PageWrite, outbox: str = "", current: bool = False) -> bool:
        return self.aws.put_entry(write, outbox, current)

    def leave_section(self, section: str, write: PageWrite) -> bool:
        return self.aws.leave_section(section, write)

    def entry_rank(self, section: str, key: int, url: str) -> str | None:
        return self.aws.entry_rank(section, key, url)

    def entry_item(self, section: str, key: int, url: str) -> EntryItem | None:
        return self.aws.entry_item(section, key, url)

    def update_entry(self, write: PageWrite, outbox: str) -> tuple[bool, EntryItem | None]:
        return self.aws.update_entry(write, outbox)

    def sent_records(self, urls: list[str], channel: str, now_s: int) -> dict[str, SentRecord]:
        return self.aws.sent_records(urls, channel, now_s)

    def scan_pages(
        self, segment: int, total: int, cursor: dict[str, str] | None, limit: int | None = None
    ) -> tuple[list[PageRecord], dict[str, str] | None]:
        """All of a segment's page states in one page (segments by a hash of the URL, as DynamoDB's by its key)."""

        def scan() -> tuple[list[PageRecord], dict[str, str] | None]:
            pages = sorted(self.pages.items())
            return [p for url, p in pages if hashlib.sha256(url.encode()).digest()[0] % total == segment], None

        return self._call("scan", scan)  # type: ignore[no-any-return]

    def mark_sent(
        self,
        digests: dict[str, str],
        channel: str,
        quiet_until_s: int,
        expires_at_s: int,
        ranks: dict[str, str] | None = None,
    ) -> None:
        self.aws.mark_sent(digests, channel, quiet_until_s, expires_at_s, ranks)

    def _call(self, name: str, call: Callable[[], Any]) -> Any:
        return self._sched.point(f"dynamodb.{name}", call)

    def get_page(self, url: str) -> PageRecord | None:
        def get() -> PageRecord | None:
            check_key({"pk": {"S": page_pk(url)}, "sk": {"S": "state"}}, "GetItem")
            return self.pages.get(url)

        return self._call("get_item", get)  # type: ignore[no-any-return]

    @staticmethod
    def _record(write: PageWrite, outbox: str) -> PageRecord:
        return PageRecord(write.url, write.rank, write.kind, write.section, write.key, write.digest, write.lastmod,
                          write.change, write.moved_from, outbox, write.rank,
                          section_named=write.section_named)  # fmt: skip

    def current_pages(self) -> dict[str, PageRecord]:
        """Every page as it stands (not a call: for checks): its page state, or the newer state its entry records
        when an update wrote the entry alone (``marks.stored``)."""
        found = {}
        for url, page in self.pages.items():
            sk = entry_sort_key(page.key, url)
            record = self.manifest.get(page.section, {}).get(sk)
            item = None
            if record is not None:
                current, outbox = self.entry_tags.get((page.section, sk), (False, ""))
                item = EntryItem(self.entry_ranks[(page.section, sk)], record, current, outbox)
            found[url] = stored(page, item)
        return found

    def open_outbox(self, outbox: str, urls: list[str]) -> None:
        def put() -> None:
            check_item({"pk": {"S": "outbox"}, "sk": {"S": outbox}, "v": {"N": "1"}, "urls": {"S": "\n".join(urls)}},
                       "PutItem")  # fmt: skip
            self.outbox[outbox] = list(urls)

        self._call("put_item", put)

    def outbox_open(self, outbox: str) -> bool:
        return bool(self._call("get_item", lambda: outbox in self.outbox))

    def close_outbox(self, outbox: str) -> None:
        self._call("delete_item", lambda: self.outbox.pop(outbox, None))

    def outboxes(self, opened_before: str) -> list[tuple[str, list[str]]]:
        def query() -> list[tuple[str, list[str]]]:
            return [(name, list(urls)) for name, urls in sorted(self.outbox.items()) if name < opened_before]

        return list(self._call("query", query))

    def import_pages(self, writes: list[PageWrite]) -> None:
        def load() -> None:
            for write in writes:
                check_item(self.aws._page_item(write, ""), "BatchWriteItem")
                pk = entry_pk(write.section, write.key, self.aws.partitions)
                entry = {"pk": {"S": pk}, "sk": {"S": entry_sort_key(write.key, write.url)}}
                check_item({**entry, "v": {"N": "1"}, "rank": {"S": write.rank}, "record": {"B": write.record}},
                           "BatchWriteItem")  # fmt: skip
            for write in writes:
                self.pages[write.url] = self._record(write, "")
                self.manifest.setdefault(write.section, {})[entry_sort_key(write.key, write.url)] = write.record
                self.entry_ranks[(write.section, entry_sort_key(write.key, write.url))] = write.rank
                self.entry_tags[(write.section, entry_sort_key(write.key, write.url))] = (write.kind == "live", "")

        self._call("batch_write_item", load)

    def entries(self, section: str, key_range: KeyRange) -> list[PageState]:
        low, high = f"{key_range.start:016x}#", f"{key_range.end - 1:016x}#\x7f"

        def query() -> list[PageState]:
            items = sorted((k, v) for k, v in self.manifest.get(section, {}).items() if low <= k <= high)
            return [state for _, record in items for state in decode_states(record)]

        return list(self._call("query", query))

    def entries_for(self, section: str, pages: list[tuple[int, str]]) -> list[PageState]:
        def get() -> list[PageState]:
            found = self.manifest.get(section, {})
            keys = [entry_sort_key(key, url) for key, url in pages]
            return [state for key in keys if key in found for state in decode_states(found[key])]

        return list(self._call("batch_get_item", get))

    def files(self, section: str | None = None) -> list[PublishedFile]:
        def query() -> list[PublishedFile]:
            found = sorted(self.file_records.items())
            return [f for _, f in found if section is None or f.section == section]

        return list(self._call("query", query))

    def put_file(self, published: PublishedFile) -> None:
        def put() -> None:
            self.file_records[(published.section, published.key_range.start)] = published

        self._call("put_item", put)

    def _conditional_update(
        self,
        name: str,
        published: PublishedFile,
        holds: Callable[[PublishedFile], bool],
        change: Callable[[PublishedFile], PublishedFile | None],
    ) -> bool:
        key = (published.section, published.key_range.start)

        def update() -> bool:
            current = self.file_records.get(key)
            if current is None or not holds(current):
                return False
            changed = change(current)
            if changed is None:
                del self.file_records[key]
            else:
                self.file_records[key] = changed
            return True

        return bool(self._call(name, update))

    def move_file_state(
        self, published: PublishedFile, from_state: str, to_state: str, at_us: int = 0, removals: bool | None = None
    ) -> bool:
        return self._conditional_update(
            "update_item",
            published,
            lambda f: f.state == from_state and f.sha256 == published.sha256,
            lambda f: replace(
                f,
                state=to_state,
                unnamed_us=at_us,
                removals_pending=f.removals_pending if removals is None else removals,
            ),
        )

    def mark_unsettled(
        self, published: PublishedFile, pending: PendingPut | None = None, shown: tuple[SnapshotRef, ...] = ()
    ) -> None:
        def change(f: PublishedFile) -> PublishedFile:
            return (
                replace(f, unsettled=True)
                if pending is None
                else replace(f, unsettled=True, pending=pending, shown=shown)
            )

        self._conditional_update("update_item", published, lambda f: True, change)

    def clear_pending_index(self, published: PublishedFile) -> bool:
        return self._conditional_update(
            "update_item", published, lambda f: f.sha256 == published.sha256, lambda f: replace(f, pending_index=False)
        )

    def delete_file(self, published: PublishedFile, state: str) -> bool:
        return self._conditional_update("delete_item", published, lambda f: f.state == state, lambda f: None)

    def next_rebuild(self, section: str, began_us: int = 0) -> int:
        def add() -> int:
            self.seqs[f"\0rebuilds#{section}"] = self.seqs.get(f"\0rebuilds#{section}", 0) + 1
            if began_us:
                self.seqs[f"\0began#{section}"] = began_us
            return self.seqs[f"\0rebuilds#{section}"]

        return int(self._call("update_item", add))

    def rebuild_times(self, section: str) -> tuple[int, int]:
        def read() -> tuple[int, int]:
            return self.seqs.get(f"\0began#{section}", 0), self.seqs.get(f"\0due#{section}", 0)

        return self._call("get_item", read)  # type: ignore[no-any-return]

    def hold_due(self, section: str, due_us: int) -> None:
        self._call("update_item", lambda: self.seqs.__setitem__(f"\0due#{section}", due_us))

    def next_index_generation(self) -> int:
        def add() -> int:
            self.seqs["\0index"] = self.seqs.get("\0index", 0) + 1
            return self.seqs["\0index"]

        return int(self._call("update_item", add))

    def index_sha(self) -> str | None:
        return self._call("get_item", lambda: None if self.index is None else self.index[0])  # type: ignore[no-any-return]

    def put_index_sha(self, sha256: str, generation: int) -> None:
        def put() -> None:
            self.index = (sha256, generation)

        self._call("put_item", put)

    importing: bool = False
    holder: ImportHold | None = None  # who holds the import, when a bootstrap does (``importing`` is set too)

    def import_running(self) -> bool:
        return bool(self._call("get_item", lambda: self.importing))

    def set_import_running(self, running: bool, began_us: int = 0) -> None:
        def put() -> None:
            self.importing, self.holder = running, ImportHold("", "", began_us) if running else None

        self._call("put_item" if running else "delete_item", put)

    def import_hold(self) -> ImportHold | None:
        return self._call("get_item", lambda: self.holder if self.importing else None)  # type: ignore[no-any-return]

    def begin_import(self, hold: ImportHold) -> bool:
        def update() -> bool:
            if self.importing and (self.holder is None or self.holder.execution != hold.execution):
                return False
            began = self.holder.began_us if self.importing and self.holder is not None else hold.began_us
            self.importing, self.holder = True, ImportHold(hold.execution, hold.run, began)
            return True

        return bool(self._call("update_item", update))

    def end_import(self, execution: str) -> bool:
        def delete() -> bool:
            if not self.importing or self.holder is None or self.holder.execution != execution:
                return False
            self.importing, self.holder = False, None
            return True

        return bool(self._call("delete_item", delete))

    def oldest_parked_us(self) -> int | None:
        return self._call("query", lambda: min((int(k[:16], 16) for k in self._parked()), default=None))  # type: ignore[no-any-return]

    # --- rebuild batches parked while an import runs ----------------------------------------------------------
    parked_items: dict[str, list[tuple[str, str]]]

    def _parked(self) -> dict[str, list[tuple[str, str]]]:
        if not hasattr(self, "parked_items"):
            self.parked_items = {}
        return self.parked_items

    def park(self, parked_id: str, messages: list[tuple[str, str]]) -> bool:
        def put() -> bool:  # one item a request, as ManifestStore writes them, each within DynamoDB's limits
            items = {f"{parked_id}#{n:02d}": (group, body) for n, (group, body) in enumerate(messages)}
            for sk, pair in items.items():
                item = {"pk": {"S": "parked"}, "sk": {"S": sk}, "v": {"N": "1"}, "m": {"S": json.dumps(pair)}}
                check_item(item, "TransactWriteItems")
            if not self.importing:
                return False
            self._parked().update({sk: [pair] for sk, pair in items.items()})
            return True

        return bool(self._call("transact_write_items", put))

    def parked(self) -> list[tuple[str, list[tuple[str, str]]]]:
        return list(self._call("query", lambda: sorted((k, list(v)) for k, v in self._parked().items())))

    def unpark(self, parked_id: str) -> None:
        self._call("delete_item", lambda: self._parked().pop(parked_id, None))

    # --- changes held back by a quiet window, by (channel, URL): expiry and the held change -----------------
    held_items: dict[tuple[str, str], tuple[int, SentRecord]]

    def _held_items(self) -> dict[tuple[str, str], tuple[int, SentRecord]]:
        if not hasattr(self, "held_items"):
            self.held_items = {}
        return self.held_items

    def held(self, channel: str, now_s: int) -> dict[str, SentRecord]:
        def query() -> dict[str, SentRecord]:
            items = sorted(self._held_items().items())
            return {url: change for (ch, url), (expires, change) in items if ch == channel and expires > now_s}

        return dict(self._call("query", query))

    def hold(self, changes: dict[str, SentRecord], channel: str, expires_at_s: int) -> None:
        def put() -> None:
            for url, change in changes.items():
                self._held_items()[(channel, url)] = (expires_at_s, change)

        self._call("batch_write_item", put)

    def release(self, urls: list[str], channel: str) -> None:
        def delete() -> None:
            for url in urls:
                self._held_items().pop((channel, url), None)

        self._call("batch_write_item", delete)


# --- S3 ----------------------------------------------------------------------------------------------------
@dataclass
class S3Object:
    data: bytes
    etag: str
    seq: int
    written_at: float = 0.0  # virtual seconds


@dataclass
class FakeS3:
    """The S3 calls ``SitemapBucket`` makes, with conditional puts; ``watch`` sees every change."""

    sched: Scheduler
    objects: dict[str, S3Object] = field(default_factory=dict)
    watch: Callable[[str, S3Object | None, S3Object | None], None] = lambda _name, _old, _new: None

    def head_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803 - boto3's names
        def head() -> dict[str, Any]:
            found = self.objects.get(Key)
            if found is None:
                raise _client_error("404", "HeadObject")
            return {"ETag": found.etag, "Metadata": {"seq": str(found.seq)}}

        return self.sched.point("s3.head_object", head)

    def put_object(self, Bucket: str, Key: str, Body: bytes, Metadata: dict[str, str], **kwargs: Any) -> dict[str, Any]:  # noqa: N803
        def put() -> dict[str, Any]:
            current = self.objects.get(Key)
            if kwargs.get("IfNoneMatch") == "*" and current is not None:
                raise _client_error("PreconditionFailed", "PutObject")
            if "IfMatch" in kwargs and current is None:  # as S3 answers If-Match on no object (and moto)
                raise _client_error("NoSuchKey", "PutObject")
            if "IfMatch" in kwargs and current is not None and current.etag != kwargs["IfMatch"]:
                raise _client_error("PreconditionFailed", "PutObject")
            etag = f'"{hashlib.md5(Body).hexdigest()}"'
            new = S3Object(Body, etag, int(Metadata.get("seq", "0")), self.sched.clock.now)
            self.objects[Key] = new
            self.watch(Key, current, new)
            return {"ETag": new.etag}

        return self.sched.point("s3.put_object", put)

    def delete_object(self, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803
        def delete() -> dict[str, Any]:
            old = self.objects.pop(Key, None)
            if old is not None:
                self.watch(Key, old, None)
            return {}

        return self.sched.point("s3.delete_object", delete)

    def get_object(self, Bucket: str, Key: str, Range: str | None = None) -> dict[str, Any]:  # noqa: N803
        found = self.objects.get(Key)
        if found is None:
            raise _client_error("NoSuchKey", "GetObject")
        if Range is None:
            return {"Body": _Body(found.data)}
        first, last = (int(n) for n in Range.removeprefix("bytes=").split("-"))
        if first >= len(found.data):  # S3 answers 416 for a range that starts past the object's end
            raise _client_error("InvalidRange", "GetObject")
        return {"Body": _Body(found.data[first : last + 1])}  # 206, cut at the object's end

    def get_paginator(self, name: str) -> Any:
        assert name == "list_objects_v2"
        return _Pages(sorted(self.objects), {key: o.written_at for key, o in self.objects.items()})


@dataclass
class _Body:
    data: bytes

    def read(self) -> bytes:
        return self.data


@dataclass
class _Pages:
    keys: list[str]
    written_at: dict[str, float]

    def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        prefix, after = kwargs.get("Prefix", ""), kwargs.get("StartAfter", "")
        keys = [key for key in self.keys if key.startswith(prefix) and key > after]
        moment = datetime.fromtimestamp  # virtual seconds after AS_OF, as S3 gives LastModified
        contents = [{"Key": k, "LastModified": moment(AS_OF_US / 1e6 + self.written_at[k], UTC)} for k in keys]
        return iter([{"Contents": contents[start : start + 1000]} for start in range(0, len(contents), 1000)])


# --- SQS ---------------------------------------------------------------------------------------------------
@dataclass
class Message:
    id: str
    body: str
    attributes: dict[str, str]
    group: str | None
    sent_at: float
    available_at: float
    number: int = 0
    receive_count: int = 0
    received_at: float = 0.0
    receipt: str = ""
    deferred_until: float | None = None  # ChangeMessageVisibility while in flight


@dataclass
class SimQueueState:
    """One queue as SQS keeps it: visibility timeout, FIFO groups and deduplication, redrive after
    ``max_receive`` receives."""

    name: str
    fifo: bool
    visibility: float
    max_receive: int | None
    dead_letter: SimQueueState | None = None
    delay: float = 0.0  # the queue's DelaySeconds: every message waits at least this long
    messages: list[Message] = field(default_factory=list)
    dedup: dict[tuple[str | None, str], float] = field(default_factory=dict)
    in_flight: dict[str, Message] = field(default_factory=dict)
    counter: int = 0

    def add(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None, now: float,
            delay: float = 0.0) -> None:  # fmt: skip
        if self.fifo:
            key = (group, dedup or "")
            if now - self.dedup.get(key, -1e9) < 300:
                return  # a duplicate within the 5-minute deduplication interval is accepted and dropped
            self.dedup[key] = now
        self.counter += 1
        available = now + max(delay, self.delay)
        self.messages.append(
            Message(f"{self.name}-{self.counter}", body, attributes, group, now, available, self.counter)
        )

    def add_batch(self, entries: list[tuple[str, str | None, str | None]], now: float) -> None:
        """One SendMessageBatch request: each entry (body, group, deduplication ID) as ``add`` would."""
        for body, group, dedup in entries:
            SimQueueState.add(self, body, {}, group, dedup, now)  # not the metered ``add``: one request in all

    def receive(self, limit: int, now: float, rng: random.Random) -> list[Message]:
        """Receive up to ``limit`` visible messages. FIFO: in order within a group, and nothing from a group
        whose head is in flight or waiting out its visibility timeout."""
        candidates = list(self.messages)
        if not self.fifo:
            rng.shuffle(candidates)
        blocked: set[str | None] = {m.group for m in self.in_flight.values()} if self.fifo else set()
        taken: list[Message] = []
        for message in candidates:
            if len(taken) >= limit:
                break
            if message.group in blocked:
                continue
            if message.available_at > now:
                if self.fifo:
                    blocked.add(message.group)
                continue
            if self.max_receive is not None and message.receive_count >= self.max_receive:
                self.messages.remove(message)  # redrive: received max_receive times without being deleted
                if self.dead_letter is not None:
                    self.dead_letter.messages.append(message)
                continue
            taken.append(message)
        for message in taken:
            self.messages.remove(message)
            message.receive_count += 1
            message.received_at = now
            message.receipt = f"{message.id}#{message.receive_count}"
            self.in_flight[message.receipt] = message
        return taken

    def settle(self, message: Message, delete: bool, now: float) -> None:
        """After the invocation: delete, or leave invisible until the visibility timeout expires."""
        self.in_flight.pop(message.receipt, None)
        if not delete:
            until = message.received_at + self.visibility if message.deferred_until is None else message.deferred_until
            message.available_at, message.deferred_until = max(now, until), None
            self.messages.append(message)
            self.messages.sort(key=lambda m: m.number)  # a FIFO message goes back to the head of its group

    def defer(self, receipt: str, until: float) -> bool:
        """ChangeMessageVisibility of an in-flight message; False for a receipt no longer in flight."""
        message = self.in_flight.get(receipt)
        if message is None:
            return False
        message.deferred_until = until
        return True

    def depth(self) -> int:
        return len(self.messages) + len(self.in_flight)

    def next_available(self, after: float) -> float | None:
        """When the next message becomes visible (or its delay ends) after ``after``."""
        return min((m.available_at for m in self.messages if m.available_at > after), default=None)


# SQS's message limit (SendMessage, since 2025): the body and the message attributes' names, types and values.
SQS_MAX_MESSAGE_BYTES = 1_048_576


def _check_size(body: str, attributes: dict[str, str]) -> None:
    """Refuse a message SQS would refuse for its size, with SQS's answer."""
    size = len(body.encode()) + sum(len(k.encode()) + len("String") + len(v.encode()) for k, v in attributes.items())
    if size > SQS_MAX_MESSAGE_BYTES:
        reason = f"Message must be shorter than {SQS_MAX_MESSAGE_BYTES} bytes."
        error = {"Code": "InvalidParameterValue", "Message": f"One or more parameters are invalid. Reason: {reason}"}
        response: Any = {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}
        raise ClientError(response, "SendMessage")


class SimQueue:
    """The ``Queue`` port over a simulated queue (refusing a message past SQS's size as SQS does)."""

    def __init__(self, sched: Scheduler, clock: Clock, state: SimQueueState, url: str) -> None:
        self._sched, self._clock, self.state = sched, clock, state
        self.url = url
        self.fifo = state.fifo

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        if self.fifo and (group is None or dedup is None):
            raise ValueError("a FIFO queue needs a message group and a deduplication ID")
        text = json.dumps(body, sort_keys=True)
        _check_size(text, {})
        self._sched.point("sqs.send_message", lambda: self.state.add(text, {}, group, dedup, self._clock.now))

    def send_batch(self, messages: Sequence[OutMessage]) -> None:
        for chunk in batches([json.dumps(m.body, sort_keys=True) for m in messages]):
            for _, text in chunk:
                _check_size(text, {})
            if self.fifo and any(messages[i].group is None or messages[i].dedup is None for i, _ in chunk):
                raise ValueError("a FIFO queue needs a message group and a deduplication ID")
            entries: list[tuple[str, str | None, str | None]] = [
                (text, messages[i].group, messages[i].dedup) for i, text in chunk
            ]
            self._send_batch(entries)

    def _send_batch(self, entries: list[tuple[str, str | None, str | None]]) -> None:
        self._sched.point("sqs.send_message_batch", lambda: self.state.add_batch(entries, self._clock.now))

    def send_raw(self, body: str, attributes: dict[str, str]) -> None:
        self.send_raw_grouped(body, attributes, None, None)

    def defer(self, receipts: list[str], seconds: int) -> None:
        def change() -> None:
            refused = [r for r in receipts if not self.state.defer(r, self._clock.now + seconds)]
            if refused:
                raise RuntimeError(f"SQS did not defer {len(refused)} messages: ReceiptHandleIsInvalid")

        self._sched.point("sqs.change_message_visibility_batch", change)

    def send_raw_grouped(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None) -> None:
        if self.fifo and (group is None or dedup is None):
            raise ValueError("a FIFO queue needs a message group and a deduplication ID")
        _check_size(body or "(empty)", attributes)
        self._sched.point(
            "sqs.send_message", lambda: self.state.add(body or "(empty)", attributes, group, dedup, self._clock.now)
        )


# --- IndexNow ----------------------------------------------------------------------------------------------
@dataclass
class Post:
    task: str
    urls: list[str]
    status: int


class FakeIndexNow:
    """The ``Http`` port answering IndexNow POSTs: mostly 200, sometimes 503 (busy); records every request."""

    timeout = 20.0

    def __init__(self, sched: Scheduler, rng: random.Random, busy_rate: float) -> None:
        self._sched, self._rng, self._busy_rate = sched, rng, busy_rate
        self.posts: list[Post] = []

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        def post() -> HttpResponse:
            status = 503 if self._rng.random() < self._busy_rate else 200
            task = self._sched.current_name()
            self.posts.append(Post(task, list(body["urlList"]) if body else [], status))
            return HttpResponse(status, {"Retry-After": "1"} if status == 503 else {}, "")

        return self._sched.point("http.POST", post)


# --- the sites added at run time -----------------------------------------------------------------------------
class FakeSites:
    """The ``SiteDirectory`` port as a dictionary (adapters/sites.py keeps it in the manifest table); ``reads``
    counts the sites read one by one, as the functions do. The register of marks and cursors the scheduled
    functions visit the sites by goes through the scheduler (``sched``): its calls are where faults strike and
    other invocations interleave, as the manifest's do."""

    def __init__(self, sched: Scheduler | None = None) -> None:
        self.sites: dict[str, SiteConfig] = {}
        self.reads = 0
        self._sched = sched
        self.marked: dict[tuple[str, str], int] = {}  # (kind, host) -> when written, µs
        self.cursors: dict[str, str] = {}
        self.mark_writes = 0

    def _call(self, name: str, call: Callable[[], _T]) -> _T:
        return call() if self._sched is None else self._sched.point(f"dynamodb.{name}", call)

    def mark(self, kind: str, host: str, at_us: int) -> None:
        def put() -> None:
            self.marked[(kind, host)] = at_us
            self.mark_writes += 1

        self._call("put_item", put)

    def marks(self, kind: str) -> dict[str, int]:
        return self._call("query", lambda: {h: at for (k, h), at in sorted(self.marked.items()) if k == kind})

    def unmark(self, kind: str, host: str, at_us: int | None = None) -> bool:
        def delete() -> bool:
            if at_us is not None and self.marked.get((kind, host)) != at_us:
                return False
            self.marked.pop((kind, host), None)
            return True

        return self._call("delete_item", delete)

    def cursor(self, job: str) -> str:
        return self._call("get_item", lambda: self.cursors.get(job, ""))

    def set_cursor(self, job: str, host: str) -> None:
        self._call("put_item", lambda: self.cursors.__setitem__(job, host))

    def get_site(self, host: str) -> SiteConfig | None:
        self.reads += 1
        return self.sites.get(host)

    def put_site(self, site: SiteConfig) -> None:
        self.sites[site.host] = site

    def delete_site(self, host: str) -> None:
        self.sites.pop(host, None)

    def list_sites(self) -> list[SiteConfig]:
        return [self.sites[host] for host in sorted(self.sites)]
