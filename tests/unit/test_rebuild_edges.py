"""Rebuild and index behaviour the recovery tests leave unstated: the retired-file grace to the microsecond, the
CDN lifetime when a merged file reuses a name, an incremental plan at the byte limit and below a recorded file
after the limits changed, rebuilds asked for a key in no file, no index work for a rebuild that changed nothing,
and what an index rebuild reports. All on the in-memory stack of ``test_recovery``."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from sitemap_updater.core.messages import DirtyMark, news_expiry_message, read_rebuild_request
from sitemap_updater.core.render import FILE_OVERHEAD
from sitemap_updater.core.sharding import Limits
from sitemap_updater.service.index import StaleIndex, rebuild_index
from sitemap_updater.service.rebuild import rebuild_section, rebuild_sections
from tests.conftest import BASE, event
from tests.unit.test_recovery import NOW, Stack, page, replace_settings


def _with(stack: Stack, clock: list[datetime], **settings: int) -> None:
    """The stack's functions read ``clock[0]`` as the time and run with these settings."""
    stack.pipeline = replace(replace_settings(stack, **settings), clock=lambda: clock[0])


def _files(stack: Stack) -> set[str]:
    """The sitemap files in the bucket (not the index, not the rebuilds' snapshots)."""
    return {name for name in stack.s3.objects if name.endswith(".xml.gz")}


def _index_lastmods(stack: Stack) -> dict[str, str]:
    text = stack.s3.objects["sitemap.xml"].data.decode()
    pairs = re.findall(r"<loc>https://www\.example\.com/([^<]+)</loc>\s*<lastmod>([^<]+)</lastmod>", text)
    return dict(pairs)


def test_a_retired_file_stays_in_the_bucket_for_exactly_its_grace() -> None:
    # Given a section that shrank from several files to one, with an hour's grace for retired files
    clock = [NOW]
    stack = Stack(max_urls=2)
    _with(stack, clock, retired_file_grace_seconds=3600)
    stack.send(*[page(f"p{i}", version=1) for i in range(6)])
    stack.drain()
    before = _files(stack)
    stack.send(*[page(f"p{i}", type="delete", version=2) for i in range(5)])
    stack.drain()
    retired = before - set(_index_lastmods(stack))
    assert retired and retired <= _files(stack)  # unnamed by the index, still served to whoever holds the old one
    # When the section is rebuilt again one microsecond before the grace is over
    clock[0] = NOW + timedelta(seconds=3600, microseconds=-1)
    stack.send(page("p5", version=3, priority=0.2))
    stack.drain()
    # Then the retired files are still there
    assert retired <= _files(stack)
    # And once the grace is over, the next index rebuild (here for another section) has them deleted
    clock[0] = NOW + timedelta(seconds=3600)
    rebuild_index(stack.pipeline)
    stack.drain()
    assert not retired & _files(stack)
    stack.check()


def test_a_merged_file_reusing_a_name_is_indexed_with_the_lastmod_the_cdn_may_still_serve() -> None:
    # Given three pages in two files under a 5 s CDN lifetime, all published long ago
    clock = [NOW]
    stack = Stack(max_urls=2)
    _with(stack, clock, cdn_max_age_seconds=5)
    stack.send(*[page(f"p{i}", version=1, lastmod=f"2026-10-0{i + 1}") for i in range(3)])
    while stack.step():
        clock[0] += timedelta(seconds=6)
    first = _index_lastmods(stack)
    assert len(first) == 2
    # When a delete leaves two pages, in one file named like the first of the two (the range starting at 0)
    assert "sitemap-blog-00000000.xml.gz" in first
    stack.send(event(f"{BASE}/blog/p0", type="delete", version=2, occurred_at="2026-11-05T00:00:00Z"))
    stack.step()  # the section rebuild
    stack.step()  # the index rebuild, within the lifetime of the merged file's bytes
    [(name, lastmod)] = _index_lastmods(stack).items()
    # Then the index names the merged file with the lastmod of the bytes the CDN may still serve under its name
    assert name in first and lastmod == first[name]
    # And after the lifetime, with the merged file's own lastmod
    clock[0] += timedelta(seconds=6)
    while stack.step():
        clock[0] += timedelta(seconds=6)
    assert _index_lastmods(stack) == {name: "2026-11-05T00:00:00+00:00"}
    stack.check()


def test_an_incremental_rebuild_splits_a_file_one_byte_over_the_limit() -> None:
    stack = Stack(max_urls=50)
    stack.send(*[page(f"p{i}", version=1, priority=0.1) for i in range(16)])
    stack.drain()
    [record] = stack.store.file_records.values()
    total = record.entry_bytes + FILE_OVERHEAD
    assert total > 1100
    # When the byte limit is one byte under the file and one page is edited (same size)
    object.__setattr__(stack.pipeline, "limits", Limits(max_urls=50, max_bytes=total - 1))
    stack.send(page("p3", version=2, priority=0.2))
    stack.drain()
    # Then the file is split and no file exceeds the limit
    sizes = [len(gzip.decompress(stack.s3.objects[name].data)) for name in _files(stack)]
    assert len(sizes) == 2 and max(sizes) <= total - 1
    stack.check()


def test_after_the_limit_is_lowered_an_untouched_file_over_it_is_split_with_its_pages() -> None:
    # Given pages in files of up to four URLs
    stack = Stack(max_urls=4)
    stack.send(*[page(f"p{i}", version=1) for i in range(7)])
    stack.drain()
    assert len(_files(stack)) == 2
    # When files may now hold two URLs, and one page changes (its file alone is marked)
    object.__setattr__(stack.pipeline, "limits", Limits(max_urls=2))
    stack.send(page("p0", version=2, priority=0.4))
    stack.drain()
    # Then every page is still listed once, in files of at most two URLs
    stack.check()
    assert all(f.url_count <= 2 for f in stack.store.file_records.values())


def test_a_rebuild_that_changes_nothing_queues_no_index_rebuild() -> None:
    stack = Stack(max_urls=2)
    stack.send(*[page(f"p{i}", version=1) for i in range(5)])
    stack.drain()
    done = rebuild_section(stack.pipeline, "blog", [DirtyMark("blog", cleanup=True)])
    assert (done.put, done.retired, done.deleted) == ([], [], [])
    assert not stack.queues["index"].messages


def test_an_index_rebuild_reports_what_it_wrote() -> None:
    stack = Stack(max_urls=2)
    stack.send(*[page(f"p{i}", version=1) for i in range(3)])
    stack.step()
    stack.queues["index"].messages.clear()
    done = rebuild_index(stack.pipeline)
    assert done.written and done.files == 2
    again = rebuild_index(stack.pipeline)
    assert not again.written and again.files == 2
    stack.drain()
    stack.send(*[page(f"p{i}", type="delete", version=2) for i in range(3)])
    stack.step()  # the section rebuild (its index request is dropped: the index is rebuilt here)
    stack.queues["index"].messages.clear()
    removed = rebuild_index(stack.pipeline)
    assert removed.written and removed.files == 0


def test_an_index_put_that_lost_to_a_newer_one_raises_stale_index() -> None:
    stack = Stack()
    stack.send(page("a", version=1))
    stack.step()
    object.__setattr__(stack.pipeline.bucket, "publish", lambda *_args: False)
    with pytest.raises(StaleIndex, match="newer index"):
        rebuild_index(stack.pipeline)


def test_a_mark_for_a_key_next_to_a_file_but_in_none_is_rebuilt() -> None:
    # Given pages in files of one URL each, with empty parts of the key space between them
    stack = Stack(max_urls=1)
    stack.send(*[page(f"p{i}", version=1) for i in range(4)])
    stack.drain()
    live = [f.key_range for f in stack.store.file_records.values()]
    # When rebuilds are asked by key (as the sweep and news expiry ask) for keys touching a file but in none
    edges = {k for r in live for k in (r.start - 1, r.end) if 0 <= k < 1 << 64}
    edges = {k for k in edges if not any(r.contains(k) for r in live)}
    assert edges
    for key in sorted(edges):
        rebuild_sections(stack.pipeline, read_rebuild_request(news_expiry_message("blog", key, "any", 0).body))
    stack.drain()
    # Then each rebuild finishes, and every page is still listed once
    stack.check()


def test_a_merge_over_a_half_holding_only_a_delete_keeps_that_delete_in_the_lastmod() -> None:
    # Given a section in two files, one half of its key space holding a single page
    from sitemap_updater.core.sharding import page_key

    names = [f"q{i}" for i in range(200)]
    low = [n for n in names if page_key(f"{BASE}/blog/{n}") < 1 << 63][:1]
    high = [n for n in names if page_key(f"{BASE}/blog/{n}") >= 1 << 63][:3]
    stack = Stack(max_urls=2)
    stack.send(*[page(n, version=1, lastmod="2026-11-01") for n in low + high])
    stack.drain()
    # When the low page is deleted (its half keeps only the tombstone) and a high page is removed too, so that
    # the section fits one file again and the files merge over the half no file covered
    stack.send(page(low[0], type="delete", version=2, occurred_at="2026-11-18T00:00:00Z"))
    stack.drain()
    stack.send(page(high[0], type="delete", version=2, occurred_at="2026-11-05T00:00:00Z"))
    stack.drain()
    # Then the merged file's lastmod in the index is that of the latest delete in its range
    index = stack.s3.objects["sitemap.xml"].data.decode()
    assert re.findall(r"<lastmod>([^<]+)</lastmod>", index) == ["2026-11-18T00:00:00+00:00"]
    stack.check()
