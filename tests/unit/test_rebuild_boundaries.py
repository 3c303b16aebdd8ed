"""Rebuilds at the edges of the key tree and after a dead-lettered rebuild: a page whose key is exactly where a
file's range starts, a change there reading only its own file, and a file a dead rebuild left ``writing`` that
no later mark names. On the in-memory stack of ``test_recovery``.

A URL's key is its 64-bit hash, so no findable URL lands on a range boundary (0, 2**63, ...); such pages are
recorded here with the key set by hand, as the manifest would hold them for a URL that hashes there."""

from __future__ import annotations

import gzip
import re

from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.reduce import PageState, state_from_event
from sitemap_updater.core.sharding import KEY_SPACE, page_key
from sitemap_updater.service.index import rebuild_index
from sitemap_updater.service.ingest import page_write
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, parse
from tests.unit.test_recovery import Stack, crash, page

HALF = KEY_SPACE // 2


def _record_at(stack: Stack, name: str, key: int, **fields: object) -> DirtyMark:
    """Record the page ``name`` of the blog section as if its URL hashed to ``key``; the mark its change sends."""
    fields.setdefault("version", 1)
    state = state_from_event(parse(page(name, **fields)))
    assert state.entry is not None
    moved = PageState(state.url, state.order, state.entry._replace(key=key), None)
    stack.store.import_pages([page_write(moved)])
    return DirtyMark("blog", url=state.url, key=key, change="added")


def _listed(stack: Stack) -> dict[str, list[str]]:
    """File name -> the URLs it lists, over the files the published index names."""
    index = stack.s3.objects["sitemap.xml"].data.decode()
    names = re.findall(r"<loc>https://www\.example\.com/([^<]+)</loc>", index)
    texts = {n: gzip.decompress(stack.s3.objects[n].data).decode() for n in names}
    return {n: re.findall(r"<url><loc>([^<]+)</loc>", text) for n, text in texts.items()}


def test_a_page_whose_key_is_exactly_where_its_file_starts_is_listed() -> None:
    # Given pages at key 0 and at 2**63 (the first keys of the two halves of the key space), one more in each half
    stack = Stack(max_urls=2)
    marks = [
        _record_at(stack, "zero", 0),
        _record_at(stack, "low", 5),
        _record_at(stack, "half", HALF),
        _record_at(stack, "high", HALF + 5),
    ]
    # When the section is built and indexed
    rebuild_section(stack.pipeline, "blog", marks)
    rebuild_index(stack.pipeline)
    # Then each half is one file, listing both of its pages, the one on the boundary first
    assert _listed(stack) == {
        "sitemap-blog-00000000.xml.gz": [f"{BASE}/blog/zero", f"{BASE}/blog/low"],
        "sitemap-blog-80000000.xml.gz": [f"{BASE}/blog/half", f"{BASE}/blog/high"],
    }


def test_a_change_to_the_first_page_of_a_file_rewrites_and_reads_that_file_alone() -> None:
    # Given two files, the second starting with a page whose key is exactly its range's start
    stack = Stack(max_urls=2)
    marks = [_record_at(stack, "low", 5), _record_at(stack, "half", HALF), _record_at(stack, "high", HALF + 5)]
    rebuild_section(stack.pipeline, "blog", marks)
    rebuild_index(stack.pipeline)
    before = {name: obj.data for name, obj in stack.s3.objects.items()}
    # When that first page changes
    edit = _record_at(stack, "half", HALF, version=2, priority=0.9)
    done = rebuild_section(stack.pipeline, "blog", [edit])
    # Then only the second file is read (its snapshot and the one changed page) and written, with its snapshot
    assert done.put == ["sitemap-blog-80000000.xml.gz"]
    assert (done.snapshots_read, done.entries_read) == (1, 1)
    changed = {name for name, obj in stack.s3.objects.items() if before.get(name) != obj.data}
    snapshot = next(f.snapshot for f in stack.store.files("blog") if f.name == "sitemap-blog-80000000.xml.gz")
    assert snapshot is not None and changed == {"sitemap-blog-80000000.xml.gz", snapshot.key}


def test_a_file_left_writing_by_a_dead_lettered_rebuild_is_published_by_the_next_rebuild_of_its_section() -> None:
    # Given two pages, each in a file of its own, and an empty part of the key space beside them
    stack = Stack(max_urls=1)
    names = [f"w{i}" for i in range(400)]
    low = [n for n in names if page_key(f"{BASE}/blog/{n}") < HALF // 2]
    stack.send(page(low[0], version=1), page(low[1], version=1))
    stack.drain()
    ranges = [f.key_range for f in stack.store.file_records.values()]
    gap = next(n for n in names if not any(r.contains(page_key(f"{BASE}/blog/{n}")) for r in ranges))
    # And a new page there whose rebuild dies after putting its file, on every receive, until SQS gives its
    # message to the dead-letter queue (its file's record is left "writing")
    stack.send(page(gap, version=1))
    with crash(stack.store, "put_file", when=lambda f: f.state != "writing"):
        stack.step()
    assert [f.state for f in stack.store.file_records.values()].count("writing") == 1
    stack.queues["rebuild"].messages.clear()
    # When another page of the section changes
    stack.send(page(low[0], version=2, priority=0.3))
    stack.drain()
    # Then the page of the dead rebuild is published too, and nothing is left behind
    assert f"{BASE}/blog/{gap}" in stack.shown()
    stack.check()


def _names(low: int, high: int) -> tuple[list[str], list[str]]:
    """Page names whose keys fall in the lower and the upper half of the key space."""
    lower: list[str] = []
    upper: list[str] = []
    i = 0
    while len(lower) < low or len(upper) < high:
        name = f"k{i}"
        (lower if page_key(f"{BASE}/blog/{name}") < KEY_SPACE // 2 else upper).append(name)
        i += 1
    return lower[:low], upper[:high]


def test_a_split_that_died_after_the_first_half_s_snapshot_keeps_the_other_half_s_deletes_in_its_lastmod() -> None:
    # Given a file whose live pages all sit in the lower half of the key space, and whose upper half holds only
    # deletes (later than every lastmod)
    stack = Stack(max_urls=3)
    lower, upper = _names(3, 2)
    stack.send(*[page(n, version=1) for n in lower], page(upper[0], version=1))
    stack.drain()
    stack.send(page(upper[0], type="delete", version=2, occurred_at="2026-11-18T00:00:00Z"))
    stack.drain()
    # When a new page in the upper half splits it in two, and the rebuild dies right after keeping the lower
    # half's snapshot: same name, same bytes as the whole file had (the upper half had no live page)
    stack.send(page(upper[1], version=1))
    with crash(stack.pipeline.bucket, "write_snapshots", after=True) as hits:
        stack.until(hits)
    stack.drain()
    # Then the upper file's lastmod still counts the delete in its range, as the rules say
    stack.check()
    index = stack.s3.objects["sitemap.xml"].data.decode()
    assert "sitemap-blog-80000000.xml.gz</loc><lastmod>2026-11-18T00:00:00+00:00</lastmod>" in index


def test_a_file_published_again_while_the_index_read_it_gets_another_index_rebuild() -> None:
    # Given a file published, and its index request on the queue
    stack = Stack(max_urls=3)
    stack.send(page("a", version=1))
    while stack.queues["rebuild"].messages:
        stack.step()
    assert stack.queues["index"].messages
    # When the index rebuild finds the record changed before it could mark it named (a newer put, whose own
    # request SQS may have merged into the one this run came from)
    real = stack.store.clear_pending_index
    stack.store.clear_pending_index = lambda published: False  # type: ignore[method-assign]
    stack.queues["index"].messages.clear()
    rebuild_index(stack.pipeline)
    stack.store.clear_pending_index = real  # type: ignore[method-assign]
    # Then it asks for another index rebuild, which names the file and settles it
    assert stack.queues["index"].messages
    stack.drain()
    stack.check()
