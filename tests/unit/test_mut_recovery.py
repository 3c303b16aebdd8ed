"""Targeted rebuild and ingest cases on the in-memory stack of ``test_recovery`` (issue 13's survivors of
service/ingest.py and service/rebuild.py, which the simulation used to kill): a redelivered state with a newer
version but the same content is a no-op, a delete naming another section reports the removal once, a
rebuild of changes in two files reads those files alone, and of two rebuilds that take the same version the
later render is published."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import replace
from datetime import timedelta

import pytest

from sitemap_updater.core.messages import DirtyMark, read_rebuild_request
from sitemap_updater.core.reduce import PageState, state_from_event
from sitemap_updater.core.sharding import KEY_SPACE, page_key
from sitemap_updater.service.index import rebuild_index
from sitemap_updater.service.ingest import Outcome, page_write
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, parse
from tests.unit.test_recovery import NOW, Stack, page

QUARTER, HALF = KEY_SPACE // 4, KEY_SPACE // 2


def test_the_same_content_again_with_a_newer_version_is_a_no_op() -> None:
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    notified = len(stack.notifications())
    [result] = stack.send(page("a", version=2))
    assert (result.outcome, result.change) == (Outcome.NOOP, None)
    assert stack.queues["rebuild"].messages == []
    stack.drain()
    assert len(stack.notifications()) == notified


def test_a_delete_naming_another_section_reports_the_removal_once() -> None:
    # Given a page published in blog
    stack = Stack()
    stack.send(page("b", version=1))
    stack.drain()
    notified = len(stack.notifications())
    # When its delete names the news section (its tombstone goes there; blog is rebuilt without it)
    [result] = stack.send(page("b", version=2, type="delete", section="news"))
    assert (result.outcome, result.change) == (Outcome.ACCEPTED, "removed")
    stack.drain()
    # Then the page is gone, and one change record says it was removed: blog's, whose file showed it (news, which
    # never showed it, leaves the removal to the section the delete moved the page out of)
    url = f"{BASE}/blog/b"
    assert url not in stack.shown()
    records = [n for n in stack.notifications()[notified:] if "changed" in n]
    assert [(n["section"], n["changed"]) for n in records if n["changed"]] == [("blog", {url: "removed"})]
    assert [n for n in records if url in n.get("removed_if_announced", {})] == []


def _record_at(stack: Stack, name: str, key: int, version: int = 1) -> DirtyMark:
    """Record the page ``name`` of the blog section as if its URL hashed to ``key``; the mark its change sends."""
    state = state_from_event(parse(page(name, version=version, priority=0.1 * version)))
    assert state.entry is not None
    stack.store.import_pages([page_write(PageState(state.url, state.order, state.entry._replace(key=key), None))])
    return DirtyMark("blog", url=state.url, key=key, change="added" if version == 1 else "updated")


def test_changes_in_the_first_and_last_files_read_those_two_files_alone() -> None:
    # Given three files of two pages each: [0, 1/4), [1/4, 1/2) and [1/2, 1)
    stack = Stack(max_urls=2)
    keys = {"a": 5, "b": 6, "c": QUARTER + 5, "d": QUARTER + 6, "e": HALF + 5, "f": HALF + 6}
    done = rebuild_section(stack.pipeline, "blog", [_record_at(stack, name, key) for name, key in keys.items()])
    assert len(done.put) == 3
    rebuild_index(stack.pipeline)
    # When a page of the first file and one of the last change
    edits = [_record_at(stack, "a", keys["a"], version=2), _record_at(stack, "f", keys["f"], version=2)]
    done = rebuild_section(stack.pipeline, "blog", edits)
    # Then those two files are rewritten from their snapshots and the two changed pages, the middle one untouched
    assert done.put == ["sitemap-blog-00000000.xml.gz", "sitemap-blog-80000000.xml.gz"]
    assert (done.snapshots_read, done.entries_read) == (2, 2)
    assert done.changed_urls == {f"{BASE}/blog/a": "updated", f"{BASE}/blog/f": "updated"}


def test_of_two_rebuilds_that_take_the_same_version_the_later_render_is_published(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a published page a, and a rebuild A started for page b (it reads the section's sequence)...
    stack = Stack()
    stack.send(page("a", version=1))
    stack.drain()
    stack.send(page("b", version=1))
    stack.queues["rebuild"].messages.clear()
    taken = stack.store.next_rebuild

    def meanwhile(section: str, began_us: int = 0) -> int:
        # ...while page c is recorded and a rebuild B for c runs to its end before A takes its number: B renders
        # a newer sequence from the file's snapshot, without b; A's sequence plus its later number is the same
        monkeypatch.setattr(stack.store, "next_rebuild", taken)
        stack.send(page("c", version=1))
        stack.queues["rebuild"].messages.clear()
        rebuild_section(stack.pipeline, "blog", [_mark("c")])
        return taken(section, began_us)

    monkeypatch.setattr(stack.store, "next_rebuild", meanwhile)
    later = replace(stack.pipeline, clock=lambda: NOW + timedelta(seconds=1))
    done = rebuild_section(later, "blog", [_mark("b")])
    # Then A's render, made later from the newer manifest, is what the bucket holds: all three pages
    [name] = done.put
    listed = re.findall(r"<loc>([^<]+)</loc>", gzip.decompress(stack.s3.objects[name].data).decode())
    assert listed == sorted(listed, key=page_key) and set(listed) == {f"{BASE}/blog/{n}" for n in "abc"}


def _mark(name: str) -> DirtyMark:
    url = f"{BASE}/blog/{name}"
    return DirtyMark("blog", url=url, key=page_key(url), change="added")


def test_a_rebuild_reports_the_time_from_the_change_to_its_publication() -> None:
    # The PublishLatency metric: from the moment the ingest queued the mark to the rebuild that published it
    stack = Stack()
    stack.send(page("a", version=1))
    [message] = stack.queues["rebuild"].messages
    marks = read_rebuild_request(json.loads(message.body))
    later = replace(stack.pipeline, clock=lambda: NOW + timedelta(seconds=2))
    done = rebuild_section(later, "blog", marks)
    assert done.put and done.latencies_s == [2.0]
