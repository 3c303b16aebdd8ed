"""The DynamoDB adapter (``ManifestStore`` and its ``FileRecords``) on moto, method by method, for what the
simulation's fakes answer in its place: file records read back as written and moved only from the state and
content expected, the scan page by page, outboxes, rebuild numbers, the import hold, parked rebuild requests and
held changes. The table has the template's key schema."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.adapters.manifest import ManifestStore
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.pages import EntryItem, PageWrite, SentRecord
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.core.snapshots import PendingPut, SnapshotRef
from sitemap_updater.ports import ImportHold
from tests.conftest import BASE

TABLE = "manifest"


@pytest.fixture
def store() -> Iterator[ManifestStore]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        )
        yield ManifestStore(client, TABLE, sleep=lambda _s: None)


def _file(**fields: Any) -> PublishedFile:
    ref = SnapshotRef("_state/snapshots/blog-1", 10, 2_000)
    values: dict[str, Any] = {
        "section": "blog", "key_range": KeyRange(0, 1 << 63, 1), "name": "sitemap-blog-00000000.xml.gz",
        "sha256": "a" * 64, "lastmod_us": 1_795_262_400_000_000, "url_count": 12, "entry_bytes": 3_456,
        "state": "live", "news_until_us": 1_795_262_400_000_001, "pending_index": True, "unsettled": True,
        "published_us": 1_795_262_400_000_002, "prev_lastmod_us": 1_795_262_300_000_000, "unnamed_us": 42,
        "snapshot": ref, "pending": PendingPut(ref, 8), "shown": (ref, SnapshotRef("_state/snapshots/blog-0", 0, 9)),
    }  # fmt: skip
    return PublishedFile(**{**values, **fields})


def test_a_file_record_reads_back_as_it_was_written(store: ManifestStore) -> None:
    full = _file()
    bare = _file(key_range=KeyRange(1 << 63, 1 << 64, 1), name="sitemap-blog-80000000.xml.gz",
                 pending=None, shown=(), unnamed_us=0, pending_index=False, unsettled=False)  # fmt: skip
    store.put_file(full)
    store.put_file(bare)
    store.put_file(_file(section="docs", name="sitemap-docs-00000000.xml.gz"))
    assert store.files("blog") == [full, bare]
    assert len(store.files()) == 3


def test_a_file_record_moves_only_from_the_state_and_content_expected(store: ManifestStore) -> None:
    live = _file(pending=None, shown=(), unnamed_us=0)
    store.put_file(live)
    assert store.move_file_state(live, "live", "retiring", removals=True) is True  # its removals wait
    assert store.move_file_state(live, "live", "retiring") is False  # no longer live
    assert store.move_file_state(dataclasses.replace(live, sha256="b" * 64), "retiring", "unnamed", 5) is False
    assert store.move_file_state(live, "retiring", "unnamed", 1_795_262_400_000_009) is True
    [moved] = store.files("blog")
    assert (moved.state, moved.unnamed_us, moved.removals_pending) == ("unnamed", 1_795_262_400_000_009, True)
    assert store.move_file_state(live, "unnamed", "unnamed", moved.unnamed_us, removals=False) is True  # announced
    [told] = store.files("blog")
    assert (told.state, told.unnamed_us, told.removals_pending) == ("unnamed", 1_795_262_400_000_009, False)
    # An intent recorded before a put, with the blocks earlier attempts put; then cleared for the index
    ref = SnapshotRef("_state/snapshots/blog-2", 0, 77)
    store.mark_unsettled(live, PendingPut(ref, 9), (ref,))
    assert store.clear_pending_index(live) is True
    assert store.clear_pending_index(dataclasses.replace(live, sha256="c" * 64)) is False
    [marked] = store.files("blog")
    assert (marked.unsettled, marked.pending, marked.shown, marked.pending_index) == (
        True,
        PendingPut(ref, 9),
        (ref,),
        False,
    )
    # Deleted only in the state expected
    assert store.delete_file(live, "live") is False
    assert store.delete_file(live, "unnamed") is True
    assert store.files("blog") == []


def _write(n: int, **fields: Any) -> PageWrite:
    values: dict[str, Any] = {
        "url": f"{BASE}/blog/p{n}", "rank": f"{n + 1:020d}:{0:020d}:0:d:blog", "kind": "live", "section": "blog",
        "key": n * 1_000, "digest": f"d{n}", "lastmod": "2026-11-20", "change": "added", "moved_from": "",
        "record": b"r",
    }  # fmt: skip
    return PageWrite(**{**values, **fields})


def test_the_scan_reads_every_page_state_page_by_page_and_nothing_else(store: ManifestStore) -> None:
    for n in range(7):
        assert store.put_state(_write(n), None, "outbox-1")
        assert store.put_entry(_write(n))  # an item of another kind in the table
    store.put_file(_file())
    found, cursor, pages = [], None, 0
    while True:
        records, cursor = store.scan_pages(0, 1, cursor, limit=3)
        found += [r.url for r in records]
        pages += 1
        if cursor is None:
            break
    assert sorted(found) == sorted(f"{BASE}/blog/p{n}" for n in range(7)) and pages >= 5


def test_a_state_keeps_the_rank_of_its_entry_only_when_that_differs(store: ManifestStore) -> None:
    older = "00000000000000000001:00000000000000000000:0:d:blog"
    store.put_state(_write(1), None, "o", entry_rank=older)
    store.put_state(_write(2), None, "o", entry_rank=_write(2).rank)
    first, second = store.get_page(f"{BASE}/blog/p1"), store.get_page(f"{BASE}/blog/p2")
    assert first is not None and (first.rank, first.entry_rank) == (_write(1).rank, older)
    assert second is not None and second.entry_rank == second.rank


def test_open_outboxes_are_listed_with_their_urls_until_closed(store: ManifestStore) -> None:
    store.open_outbox("0001-a", [f"{BASE}/blog/a", f"{BASE}/blog/b"])
    store.open_outbox("0002-b", [])
    store.open_outbox("0009-c", [f"{BASE}/blog/c"])
    assert store.outboxes("0005") == [("0001-a", [f"{BASE}/blog/a", f"{BASE}/blog/b"]), ("0002-b", [])]
    assert store.outbox_open("0001-a")
    store.close_outbox("0001-a")
    assert not store.outbox_open("0001-a") and store.outboxes("0005") == [("0002-b", [])]


def test_each_rebuild_of_a_section_takes_a_larger_number_and_keeps_when_it_began(store: ManifestStore) -> None:
    assert store.rebuild_times("blog") == (0, 0)
    assert [store.next_rebuild("blog", 100), store.next_rebuild("blog"), store.next_rebuild("docs", 7)] == [1, 2, 1]
    assert (store.rebuild_times("blog"), store.rebuild_times("docs")) == ((100, 0), (7, 0))
    store.hold_due("blog", 500)
    assert store.next_rebuild("blog", 300) == 3 and store.rebuild_times("blog") == (300, 500)


def test_an_import_is_held_by_one_execution_at_a_time(store: ManifestStore) -> None:
    first, other = ImportHold("arn:first", "run-1", 100), ImportHold("arn:other", "run-2", 200)
    assert store.import_hold() is None and not store.import_running()
    assert store.begin_import(first) is True
    assert store.begin_import(other) is False
    assert store.begin_import(dataclasses.replace(first, began_us=150)) is True  # a retry keeps when it began
    assert store.import_hold() == first and store.import_running()
    assert store.end_import("arn:other") is False
    assert store.end_import("arn:first") is True and store.import_hold() is None


def test_rebuild_requests_are_parked_only_while_an_import_runs(store: ManifestStore) -> None:
    requests = [("blog", '{"section": "blog"}'), ("caf\u00e9", '{"section": "caf\u00e9"}')]
    assert store.park(f"{5:016x}#m1", requests) is False  # nothing runs: the caller rebuilds at once
    assert store.parked() == [] and store.oldest_parked_us() is None
    store.set_import_running(True, 1)
    assert store.park(f"{9:016x}#m2", requests[:1]) is True
    assert store.park(f"{5:016x}#m1", requests) is True
    assert store.parked() == [
        (f"{5:016x}#m1#00", [requests[0]]),
        (f"{5:016x}#m1#01", [requests[1]]),
        (f"{9:016x}#m2#00", [requests[0]]),
    ]
    assert store.oldest_parked_us() == 5
    for parked_id in (f"{5:016x}#m1#00", f"{5:016x}#m1#01"):
        store.unpark(parked_id)
    assert store.oldest_parked_us() == 9


def test_a_held_change_is_replaced_by_a_newer_one_forgotten_on_release_and_ignored_once_expired(
    store: ManifestStore,
) -> None:
    a, b = f"{BASE}/blog/a", f"{BASE}/blog/b"
    store.hold({a: SentRecord(100, "d1", "r1"), b: SentRecord(100, "d2")}, "indexnow", expires_at_s=1_000)
    store.hold({a: SentRecord(200, "d3", "r3")}, "indexnow", expires_at_s=1_000)
    store.hold({a: SentRecord(300, "other")}, "search-console", expires_at_s=1_000)
    assert store.held("indexnow", now_s=50) == {a: SentRecord(200, "d3", "r3"), b: SentRecord(100, "d2")}
    store.release([a, a], "indexnow")
    assert store.held("indexnow", now_s=50) == {b: SentRecord(100, "d2")}
    assert store.held("indexnow", now_s=1_000) == {}
    assert store.held("search-console", now_s=50) == {a: SentRecord(300, "other")}


def test_a_document_s_urls_are_replaced_by_a_later_webhook_only(store: ManifestStore) -> None:
    from sitemap_updater.adapters.webhook_documents import DocumentUrls

    documents = DocumentUrls(store._client, TABLE)
    assert documents.recall("ghost", "post-1") == []
    assert documents.remember("ghost", "post-1", [f"{BASE}/a"], "0001") is True
    assert documents.remember("ghost", "post-1", [f"{BASE}/b", f"{BASE}/c"], "0002") is True  # renamed
    assert documents.remember("ghost", "post-1", [f"{BASE}/a"], "0001") is False  # a late, older webhook
    assert documents.recall("ghost", "post-1") == [f"{BASE}/b", f"{BASE}/c"]
    assert documents.remember("ghost", "post-1", [], "0002") is True  # the same order again: withdrawn
    assert documents.recall("ghost", "post-1") == [] and documents.recall("ghost", "post-2") == []


def test_an_update_written_alone_replaces_only_a_current_older_entry_and_returns_the_item(
    store: ManifestStore,
) -> None:
    # Given p1's entry written current at rank 1, and p2's entry written not current
    first = _write(1, rank="1", record=b"one")
    assert store.put_entry(first, "outbox-1", current=True)
    assert store.put_entry(_write(2, rank="1", record=b"two"))
    # Then an update of a newer rank replaces p1's entry and returns the item it replaced, unbilled
    assert store.update_entry(replace(first, rank="3", record=b"three"), "outbox-2") == (
        True, EntryItem("1", b"one", True, "outbox-1"))  # fmt: skip
    # And an older one is refused, with the item that is there (its rank, record, outbox)
    assert store.update_entry(replace(first, rank="2"), "outbox-3") == (
        False,
        EntryItem("3", b"three", True, "outbox-2"),
    )
    # And an entry not current (p2), or none at all (p3), is never replaced by an update alone
    assert store.update_entry(_write(2, rank="4"), "o") == (False, EntryItem("1", b"two", False, ""))
    assert store.update_entry(_write(3, rank="4"), "o") == (False, None)
    assert store.entry_item("blog", _write(3).key, _write(3).url) is None
    # And a removal marker is read back without a record
    assert store.leave_section("blog", _write(2, rank="5"))
    assert store.entry_item("blog", _write(2).key, _write(2).url) == EntryItem("5", b"", False, "")
