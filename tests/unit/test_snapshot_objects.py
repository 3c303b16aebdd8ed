"""One object of snapshots per rebuild: what it costs in S3 requests, what the next rebuild reads of it, and when
objects are deleted."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest

from sitemap_updater.core.messages import DirtyMark, read_rebuild_request
from sitemap_updater.core.snapshots import STATE_PREFIX
from sitemap_updater.service.publish import SNAPSHOT_GRACE_S, SWEEP_EVERY
from sitemap_updater.service.rebuild import rebuild_section, rebuild_sections
from sitemap_updater.service.reconcile import reconcile
from tests.unit.test_recovery import NOW, Stack, crash, page


def _calls(stack: Stack, method: str) -> list[dict[str, Any]]:
    """Record the keyword arguments of each call of ``stack.s3.<method>`` to a snapshot object (and, for a GET,
    the number of bytes it returned)."""
    calls: list[dict[str, Any]] = []
    original = getattr(stack.s3, method)

    def wrapped(**kw: Any) -> Any:
        result = original(**kw)
        if kw["Key"].startswith(STATE_PREFIX):
            calls.append({**kw, "returned": len(result["Body"].data) if method == "get_object" else 0})
        return result

    object.__setattr__(stack.s3, method, wrapped)
    return calls


def _at(stack: Stack, moment: datetime) -> None:
    object.__setattr__(stack.pipeline, "clock", lambda: moment)


def _rebuild(stack: Stack) -> list[Any]:
    """Run the queued rebuild requests in one batch; what each section's rebuild did."""
    bodies = [json.loads(m.body) for m in stack.queues["rebuild"].messages]
    stack.queues["rebuild"].messages.clear()
    return rebuild_sections(stack.pipeline, [m for b in bodies for m in read_rebuild_request(b)])


def _files(stack: Stack) -> dict[str, bytes]:
    return {n: gzip.decompress(o.data) for n, o in stack.s3.objects.items() if n.endswith(".xml.gz")}


def _snapshot_objects(stack: Stack) -> set[str]:
    return {n for n in stack.s3.objects if n.startswith(STATE_PREFIX)}


def _named(stack: Stack) -> set[str]:
    return {f.snapshot.key for f in stack.store.files()}


def _site(stack: Stack) -> None:
    stack.send(*[page(f"p{i}", version=1) for i in range(12)])
    stack.drain()


def test_a_rebuild_of_many_files_puts_one_object_of_snapshots_each_record_naming_its_block() -> None:
    stack = Stack(max_urls=2)
    puts = _calls(stack, "put_object")
    _site(stack)
    records = [f for f in stack.store.files() if f.section == "blog"]
    assert len(records) >= 4
    assert len(puts) == 1  # one rebuild of the section, one snapshot PUT for all its files
    blocks = sorted((f.snapshot.offset, f.snapshot.length) for f in records)
    assert {f.snapshot.key for f in records} == {puts[0]["Key"]}
    assert len(blocks) == len(records) and blocks[0][0] == 0
    assert all(a + n == b for (a, n), (b, _) in pairwise(blocks))  # one after another
    assert blocks[-1][0] + blocks[-1][1] == len(stack.s3.objects[puts[0]["Key"]].data)


def test_the_next_rebuild_reads_only_its_file_s_block_and_renders_what_the_manifest_would() -> None:
    # Given a section of several files, and the same site where the snapshots are gone (read from DynamoDB)
    stack, bare = Stack(max_urls=2), Stack(max_urls=2)
    _site(stack)
    _site(bare)
    for name in _snapshot_objects(bare):
        del bare.s3.objects[name]
    whole = {len(stack.s3.objects[n].data) for n in _snapshot_objects(stack)}
    gets = _calls(stack, "get_object")
    # When one page changes in both
    stack.send(page("p3", version=2, priority=0.4))
    bare.send(page("p3", version=2, priority=0.4))
    [done], [from_manifest] = _rebuild(stack), _rebuild(bare)
    # Then the one file is read from its block alone: one ranged GET of that block's bytes, not the object's
    [name] = done.put
    record = next(f for f in stack.store.files() if f.name == name)
    assert (done.snapshots_read, done.entries_read) == (1, 1)
    assert (from_manifest.snapshots_read, from_manifest.put) == (0, [name])
    assert len(gets) == 1 and gets[0]["returned"] < min(whole)
    assert gets[0]["Range"].startswith("bytes=") and gets[0]["returned"] > 0
    assert record.snapshot.length > 0
    # and the bytes published are the ones a render from the manifest gives
    assert _files(stack) == _files(bare)


def _orphaned() -> tuple[Stack, str]:
    """A site whose rebuild died right after putting its snapshots; its retry put another object, which its
    records name: the stack and the object nothing names."""
    stack = Stack(max_urls=2)
    _site(stack)
    stack.send(page("p3", version=2, priority=0.4))
    with crash(stack.pipeline.bucket, "write_snapshots", after=True) as hits:
        stack.until(hits)
    stack.drain()
    [orphan] = _snapshot_objects(stack) - _named(stack)
    return stack, orphan


def test_a_crash_after_the_snapshot_put_leaves_an_object_that_a_later_sweep_deletes() -> None:
    # Given a site, and a rebuild that dies right after putting its snapshots (before any record names them)
    stack, orphan = _orphaned()
    # When the section is rebuilt by the rebuild that lists the section's objects, first at once, then long after
    _sweeping_rebuild(stack, page("p5", version=2, priority=0.3))
    assert orphan in stack.s3.objects  # its writer may still be on its way to its records
    _at(stack, NOW + timedelta(seconds=SNAPSHOT_GRACE_S + 1))
    _sweeping_rebuild(stack, page("p5", version=3, priority=0.2))
    # Then the object nothing names is deleted, and every object a record names is still there
    assert orphan not in stack.s3.objects
    assert _named(stack) <= _snapshot_objects(stack)


def _sweeping_rebuild(stack: Stack, event: dict[str, Any]) -> None:
    """Rebuild the section of ``event`` in a rebuild whose version makes it list the section's objects."""
    counter = "\0rebuilds#blog"
    while (stack.store.seqs[counter] + 1) % SWEEP_EVERY:
        stack.store.seqs[counter] += 1
    stack.send(event)
    _rebuild(stack)


def test_reconcile_deletes_objects_of_snapshots_no_record_names_and_keeps_the_others() -> None:
    stack, orphan = _orphaned()
    named = _named(stack)
    assert not reconcile(stack.pipeline).dead_snapshots  # written just now: a writer may still be on its way
    _at(stack, NOW + timedelta(hours=2))
    stack.clock.now += 2 * 3600  # the bucket's clock: when objects were written
    done = reconcile(stack.pipeline)
    assert done.dead_snapshots == [orphan] and not done.stray
    assert _snapshot_objects(stack) == named


def test_an_object_a_record_still_names_is_never_deleted() -> None:
    # Given a site whose files were all written by one rebuild, in one object
    stack = Stack(max_urls=2)
    _site(stack)
    [first] = _snapshot_objects(stack)
    # When one file is rewritten again and again, long after, each time in the rebuild that lists the objects
    moment = NOW
    for version in range(2, 2 + 2 * SWEEP_EVERY):
        moment += timedelta(seconds=SNAPSHOT_GRACE_S + 1)
        _at(stack, moment)
        stack.send(page("p3", version=version, priority=0.4))
        stack.drain()
        # Then every object a record names is there, the first one too while other files' records name it
        assert _named(stack) <= _snapshot_objects(stack)
    assert first in _named(stack) and first in stack.s3.objects
    # and the objects no record names any more, written long before, were deleted along the way
    assert len(_snapshot_objects(stack) - _named(stack)) <= 1  # the one the last rebuild replaced, if recent


def test_a_rebuild_of_more_states_than_one_object_holds_puts_several_each_file_reading_its_own_block() -> None:
    # Given a rebuild whose objects hold at most five states each
    stack = Stack(max_urls=2)
    puts = _calls(stack, "put_object")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sitemap_updater.service.publish.PART_STATES", 5)
        _site(stack)
    # Then its files' snapshots went into several objects, none holding more than five states' files
    records = [f for f in stack.store.files() if f.section == "blog"]
    objects = {f.snapshot.key for f in records}
    assert len(puts) == len(objects) > 1
    assert all(sum(f.url_count for f in records if f.snapshot.key == key) <= 5 for key in objects)
    # and the next rebuild of each file reads its own block
    for i in range(12):
        stack.send(page(f"p{i}", version=2, priority=0.4))
    [done] = _rebuild(stack)
    assert done.snapshots_read == len(records) and done.entries_read == 12


def test_a_file_rendered_again_from_the_same_states_keeps_its_block_and_the_object_holding_it() -> None:
    # Given a section of one file, written long ago
    stack = Stack(max_urls=50)
    _site(stack)
    [first] = _snapshot_objects(stack)
    [record] = [f for f in stack.store.files() if f.section == "blog"]
    _at(stack, NOW + timedelta(seconds=SNAPSHOT_GRACE_S + 1))
    puts = _calls(stack, "put_object")
    # When a rebuild renders one file again from the very states its snapshot holds (say, its news expired)
    done = rebuild_section(stack.pipeline, "blog", [DirtyMark("blog", key=record.key_range.start)])
    # Then nothing is put, its record still names its block, and the object holding it stays
    assert (done.put, done.snapshots_read, puts) == ([], 1, [])
    assert next(f for f in stack.store.files() if f.name == record.name).snapshot == record.snapshot
    assert first in stack.s3.objects
