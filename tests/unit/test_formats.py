"""Every stored format and every message carries its version: what a writer writes, its reader reads, and the same
at another version (or with none) is refused with UnknownFormat, which names what was read, the version found and
the one this code reads; a function meeting one dead-letters its message with that reason."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, cast

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.adapters.manifest import ManifestStore, page_record
from sitemap_updater.core.feed import FeedEntry, FeedState
from sitemap_updater.core.formats import UnknownFormat
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import (
    pending_index_request,
    read_change_records,
)
from sitemap_updater.core.pages import SentRecord
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.core.snapshots import SnapshotRef, pack_block, unpack_block
from sitemap_updater.handlers import bootstrap as bootstrap_handler
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.ports import ImportHold
from sitemap_updater.service import bootstrap
from sitemap_updater.service.batches import index_batch, notify_batch, rebuild_batch
from sitemap_updater.service.dead_letters import DeadLetterKind, classify
from sitemap_updater.service.ingest import DeadLettered, ingest_message, page_write
from sitemap_updater.service.resection import segments
from tests.conftest import BASE, event, parse
from tests.sim.world import Config, Simulation
from tests.unit.test_batch_outcomes import Engine, _change, _marks, _notifiers, _with_dead_letters
from tests.unit.test_dead_letter_reasons import Sqs, attributes, record
from tests.unit.test_recovery import Stack, page

URL = f"{BASE}/blog/a"
READS = "; this version of sitemap-updater reads version 1 only"


def _refused(what: str, found: str = "is of format version 2") -> str:
    """The message of an UnknownFormat, as a pattern to match."""
    return f"^{re.escape(f'{what} {found}{READS}')}$"


# --- DynamoDB items: written by the adapter, read back, then refused at another version --------------------------
@pytest.fixture
def table() -> Iterator[tuple[Any, ManifestStore]]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client, ManifestStore(client, "t")


def _write() -> Any:
    return page_write(state_from_event(parse(event(URL, version=2))))


ITEM_OF = ManifestStore(cast(Any, None), "t")  # builds items; makes no call


def _park(store: ManifestStore) -> None:
    store.set_import_running(True)
    store.park("0000000000000001#m", [("g", "{}")])


SNAPSHOT = SnapshotRef("_state/sitemap-blog/0000000000000001-1-0.states", 0, 10)
FILE = PublishedFile("blog", KeyRange(0, KEY_SPACE, 0), "sitemap-blog.xml.gz", "s", 1, 1, 10, snapshot=SNAPSHOT)
Step = Callable[[ManifestStore], Any]
# (item kind, how it is written, its key, how it is read, what the refusal names)
ITEMS: list[tuple[str, Step, dict[str, str], Step, str]] = [
    ("page state", lambda s: s.put_state(_write(), None, "o"), {"pk": f"page#{URL}", "sk": "state"},
     lambda s: s.get_page(URL), f"the page state of {URL}"),
    ("page state, scanned", lambda s: s.put_state(_write(), None, "o"), {"pk": f"page#{URL}", "sk": "state"},
     lambda s: s.scan_pages(0, 1, None)[0], f"the page state of {URL}"),
    ("entry", lambda s: s.put_entry(_write()), {"pk": "sec#blog", "sk": f"{_write().key:016x}#{URL}"},
     lambda s: s.entries("blog", KeyRange(0, KEY_SPACE, 0)), f"the blog entry {_write().key:016x}#{URL}"),
    ("entry, by page", lambda s: s.put_entry(_write()), {"pk": "sec#blog", "sk": f"{_write().key:016x}#{URL}"},
     lambda s: s.entries_for("blog", [(_write().key, URL)]), f"the blog entry {_write().key:016x}#{URL}"),
    ("entry's rank", lambda s: s.put_entry(_write()), {"pk": "sec#blog", "sk": f"{_write().key:016x}#{URL}"},
     lambda s: s.entry_rank("blog", _write().key, URL), f"the blog entry of {URL}"),
    ("removal marker", lambda s: s.leave_section("news", _write()),
     {"pk": "sec#news", "sk": f"{_write().key:016x}#{URL}"},
     lambda s: s.entries("news", KeyRange(0, KEY_SPACE, 0)), f"the news entry {_write().key:016x}#{URL}"),
    ("file record", lambda s: s.put_file(FILE), {"pk": "files", "sk": f"blog#{0:016x}"},
     lambda s: s.files("blog"), f"the file record blog#{0:016x}"),
    ("sent", lambda s: s.mark_sent({URL: "d"}, "indexnow", 10, 20, {URL: "r"}), {"pk": f"sent#{URL}", "sk": "indexnow"},
     lambda s: s.sent_records([URL], "indexnow", 0), f"what indexnow accepted for {URL}"),
    ("held", lambda s: s.hold({URL: SentRecord(10, "d", "r")}, "indexnow", 20),
     {"pk": "held#indexnow", "sk": ManifestStore._held_key(URL, "indexnow")["sk"]["S"]},
     lambda s: s.held("indexnow", 0), "a change indexnow holds back"),
    ("outbox", lambda s: s.open_outbox("0000000000000001#b", [URL]), {"pk": "outbox", "sk": "0000000000000001#b"},
     lambda s: s.outboxes("1"), "outbox 0000000000000001#b"),
    ("parked", _park, {"pk": "parked", "sk": "0000000000000001#m#00"},
     lambda s: s.parked(), "parked request 0000000000000001#m#00"),
    ("import", lambda s: s.set_import_running(True, 5), {"pk": "import", "sk": "import"},
     lambda s: s.import_hold(), "the import item"),
    ("import of an execution", lambda s: s.begin_import(ImportHold("arn:x", "run", 5)),
     {"pk": "import", "sk": "import"}, lambda s: s.import_hold(), "the import item"),
    ("index", lambda s: s.put_index_sha("s", 1), {"pk": "index", "sk": "index"},
     lambda s: s.index_sha(), "the index item"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "write", "key", "read", "what"), ITEMS, ids=[i[0] for i in ITEMS])
def test_an_item_is_read_at_its_version_and_refused_at_any_other(
    table: tuple[Any, ManifestStore], kind: str, write: Step, key: dict[str, str], read: Step, what: str
) -> None:
    client, store = table
    # Given an item as its writer writes it: version 1, which its reader reads
    write(store)
    dynamo_key = {name: {"S": value} for name, value in key.items()}
    assert client.get_item(TableName="t", Key=dynamo_key)["Item"]["v"] == {"N": "1"}
    read(store)
    # When the item is of version 2, or carries none, the reader refuses it, saying which and why
    client.update_item(TableName="t", Key=dynamo_key, UpdateExpression="SET v = :v",
                       ExpressionAttributeValues={":v": {"N": "2"}})  # fmt: skip
    with pytest.raises(UnknownFormat, match=_refused(what)):
        read(store)
    client.update_item(TableName="t", Key=dynamo_key, UpdateExpression="REMOVE v")
    with pytest.raises(UnknownFormat, match=_refused(what, "carries no format version")):
        read(store)


def test_a_page_state_names_the_sections_it_leaves_as_a_list_and_none_when_it_leaves_none() -> None:
    write = _write()
    item = ITEM_OF._page_item(write, "o")
    assert "moved_from" not in item and page_record(URL, item).moved_from == ()
    moved = ITEM_OF._page_item(replace(write, moved_from=("a", "b")), "o")
    assert moved["moved_from"] == {"L": [{"S": "a"}, {"S": "b"}]}
    assert page_record(URL, moved).moved_from == ("a", "b")


# --- snapshots -------------------------------------------------------------------------------------------------
def test_a_snapshot_block_carries_its_version_and_one_of_another_is_refused() -> None:
    block = pack_block("id", b"states")
    assert block.startswith(b"1 id\n") and unpack_block(block) == ("id", b"states")
    with pytest.raises(UnknownFormat, match=_refused("the snapshot of f")):
        unpack_block(b"2" + block[1:], "the snapshot of f")
    with pytest.raises(UnknownFormat, match=_refused("a snapshot block", "is of format version 'id'")):
        unpack_block(block[2:])
    assert unpack_block(None) is None and unpack_block(block[:3]) is None  # none, or not whole: read the manifest


def test_a_rebuild_meeting_a_snapshot_of_another_version_is_dead_lettered_with_that_reason() -> None:
    # Given a published file whose snapshot block is of version 2
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    [published] = stack.store.file_records.values()
    snapshot = stack.s3.objects[published.snapshot.key]
    assert published.snapshot.offset == 0 and snapshot.data.startswith(b"1 ")
    snapshot.data = b"2" + snapshot.data[1:]
    # When a change to that file is rebuilt on the rebuild queue's last receive
    stack.send(page("a", version=2, priority=0.2))
    sqs = Sqs()
    pipeline = _with_dead_letters(stack, sqs, 1)
    bodies = [m.body for m in stack.queues["rebuild"].messages]
    outcome = rebuild_batch([record(f"m{i}", 1, body) for i, body in enumerate(bodies)], pipeline)
    # Then its messages are dead-lettered with the reason, and nothing was published over the file
    [dead] = outcome.dead_lettered
    assert dead.reason == (
        f"failed on all 1 receives: blog: UnknownFormat: the snapshot of {published.name} is of format version 2{READS}"
    )
    assert outcome.sections == [] and list(stack.store.file_records.values()) == [published]


# --- messages --------------------------------------------------------------------------------------------------
def test_a_rebuild_request_of_another_version_is_dead_lettered_alone_with_that_reason() -> None:
    sqs = Sqs()
    stack = Stack()
    stack.send(page("a", version=1))
    stack.queues["rebuild"].messages.clear()
    pipeline = _with_dead_letters(stack, sqs, 2)
    newer = json.dumps({**json.loads(_marks(("b", "blog"))), "v": 2})
    batch = [record("new", 2, newer), record("ok", 1, _marks(("a", "blog")))]
    outcome = rebuild_batch(batch, pipeline)
    assert [s.section for s in outcome.sections] == ["blog"] and outcome.sections[0].put
    [dead] = outcome.dead_lettered
    reason = f"failed on all 2 receives: UnknownFormat: a rebuild request is of format version 2{READS}"
    assert (dead.message_id, dead.reason) == ("new", reason)
    # as it came, and a failure the redrive sends again (once a version reading it is deployed), not a rejection
    assert sqs.sent[0]["MessageBody"] == newer
    assert classify(attributes(sqs.sent[0])) is DeadLetterKind.FAILED


def test_a_change_record_of_another_version_is_dead_lettered_alone_and_the_rest_is_announced() -> None:
    sqs = Sqs()
    pipeline = _with_dead_letters(Stack(), sqs, 1)
    engine = Engine(200)
    newer = json.dumps({**json.loads(_change(f"{BASE}/blog/b")), "v": 2})
    wake_up = json.dumps({"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}})
    batch = [record("new", 1, newer), record("ok", 1, _change(URL)), record("wake", 1, wake_up)]
    _, settled = notify_batch(batch, pipeline, _notifiers(engine))
    assert engine.posts == [[URL]]
    [dead] = settled.dead_lettered
    reason = "UnknownFormat: a change record is of format version 2"
    assert (dead.message_id, dead.reason) == ("new", f"failed on all 1 receives: {reason}{READS}")
    with pytest.raises(UnknownFormat, match=_refused("a change record", "carries no format version")):
        read_change_records([{"changed": {}}])


def test_an_index_request_of_another_version_is_dead_lettered_alone_and_the_index_is_still_rebuilt() -> None:
    sqs = Sqs()
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    pipeline = _with_dead_letters(stack, sqs, 1)
    ok = json.dumps(pending_index_request(1, 0, 0).body)
    newer = json.dumps({**pending_index_request(1, 0, 0).body, "v": 2})
    done, settled = index_batch([record("new", 1, newer), record("ok", 1, ok)], pipeline)
    assert not isinstance(done, str) and settled.failures == []
    [dead] = settled.dead_lettered
    reason = "UnknownFormat: an index request is of format version 2"
    assert (dead.message_id, dead.reason) == ("new", f"failed on all 1 receives: {reason}{READS}")


def test_every_message_the_pipeline_sends_carries_the_version_its_reader_reads() -> None:
    # Given a page published, then moved to another section
    stack = Stack()
    stack.send(page("a", version=1), page("a", version=2, section="news"))
    # When every rebuild and index request is handled
    bodies: list[dict[str, Any]] = []
    while True:
        bodies += [json.loads(m.body) for name in ("rebuild", "index") for m in stack.queues[name].messages]
        if not stack.step():
            break
    # Then each of them, and each change record, carries version 1, which their readers read
    kinds = {"marks", "section", "index"} & {key for body in bodies for key in body}
    assert kinds == {"marks", "section"} and {body["v"] for body in bodies + stack.notifications()} == {1}
    assert len(read_change_records(stack.notifications()).digests) == 1


# --- the feed's state ------------------------------------------------------------------------------------------
def test_the_feed_state_carries_its_version_and_one_of_another_is_refused() -> None:
    state = FeedState([FeedEntry(URL, 5, "blog")], 3)
    assert FeedState.from_json(state.to_json()) == state and json.loads(state.to_json())["v"] == 1
    newer = json.dumps({**json.loads(state.to_json()), "v": 2}).encode()
    with pytest.raises(UnknownFormat, match=_refused("the feed's state (_state/feed.json)")):
        FeedState.from_json(newer)


# --- the bootstrap: payloads and the files its steps leave for each other -----------------------------------------
@pytest.mark.parametrize("step", ["begin", "chunk", "plan", "render", "finish", "release", "check"])
def test_a_bootstrap_step_refuses_a_payload_of_another_version_before_doing_anything(step: str) -> None:
    context = cast(Any, LocalContext("bootstrap"))
    for payload, found in (({"v": 2}, "is of format version 2"), ({}, "carries no format version")):
        with pytest.raises(UnknownFormat, match=_refused(f"the payload of bootstrap step '{step}'", found)):
            bootstrap_handler.handler({**payload, "step": step, "run": "r"}, context)


def test_the_files_bootstrap_steps_leave_for_each_other_carry_their_version() -> None:
    sim = Simulation(Config(0))
    pipeline = sim.pipeline
    bootstrap.write_counts(pipeline, "r", "chunk", {"blog": 3})
    planned = bootstrap.plan(pipeline, "r")
    ranges = json.loads(pipeline.bucket.read(planned["key"]) or b"")
    assert ranges and {item["v"] for item in ranges} == {1}
    written = segments(pipeline, "r", 2)
    assert {item["v"] for item in json.loads(pipeline.bucket.read(written["key"]) or b"")} == {1}
    # A file of another version is refused by the step that reads it, naming it
    for name in (planned["key"], written["key"]):
        items = json.loads(pipeline.bucket.read(name) or b"")
        sim.s3.objects[name].data = json.dumps([{**item, "v": 2} for item in items]).encode()
    with pytest.raises(UnknownFormat, match=_refused(f"an item of {planned['key']}")):
        bootstrap.plan(pipeline, "r")
    with pytest.raises(UnknownFormat, match=_refused(f"an item of {written['key']}")):
        segments(pipeline, "r", 2)
    [counts] = pipeline.bucket.names("_bootstrap/r/counts/")
    sim.s3.objects[counts].data = json.dumps({"v": 2, "sections": {"blog": 3}}).encode()
    sim.s3.objects.pop(planned["key"])
    with pytest.raises(UnknownFormat, match=_refused(f"an item of {counts}")):
        bootstrap.plan(pipeline, "r")


# --- ingest: a page state of another version ---------------------------------------------------------------------
def test_an_event_for_a_page_whose_state_is_of_another_version_is_dead_lettered_with_that_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    simulation = Simulation(Config(1, fault_rate=0.0))
    pipeline = simulation.pipeline
    newer = {**ITEM_OF._page_item(_write(), "o"), "v": {"N": "2"}}
    monkeypatch.setattr(pipeline.store, "get_page", lambda url: page_record(url, newer))
    body = json.dumps(event(URL, version=3))
    with pytest.raises(UnknownFormat):
        ingest_message(body, "m-1", pipeline, receive_count=1)
    result = ingest_message(body, "m-1", pipeline, receive_count=pipeline.settings.ingest_max_receive_count)
    assert isinstance(result, DeadLettered)
    count = pipeline.settings.ingest_max_receive_count
    reason = f"failed on all {count} receives: UnknownFormat: the page state of {URL} is of format version 2{READS}"
    assert result.reason == reason
    dead = simulation.ingest_queue.dead_letter
    assert dead is not None and dead.messages[-1].attributes["reason"] == reason
