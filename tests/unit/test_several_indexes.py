"""Past the files one index may name, the site gets several index files: each within the limit, every file named
once, stable as files come and go. Tried with a small limit so that it runs fast."""

from __future__ import annotations

import re

import pytest

from sitemap_updater.core.errors import LimitExceeded
from sitemap_updater.core.render import IndexItem, render_indexes, split_index
from sitemap_updater.core.sharding import INDEX_NAME, MAX_INDEX_FILES
from tests.conftest import BASE
from tests.sim.fakes import S3Object
from tests.unit.test_recovery import Stack, page

LOC = re.compile(rb"<loc>https://www\.example\.com/([^<]+)</loc>")


def items(count: int) -> list[IndexItem]:
    return [IndexItem(f"sitemap-s{n}-00000000.xml.gz", 1_700_000_000_000_000 + n) for n in range(count)]


def test_a_site_within_the_limit_has_one_index() -> None:
    assert list(split_index(items(3), max_entries=3)) == [INDEX_NAME]


def test_past_the_limit_every_file_is_named_once_by_index_files_within_the_limit() -> None:
    # Given 100 files and at most 10 a index
    indexes = render_indexes(BASE, items(100), max_entries=10)
    # Then sitemap.xml is one of a power of two of index files, none naming more than 10, each file named once
    assert INDEX_NAME in indexes and len(indexes) in (16, 32)
    named = [name for data in indexes.values() for name in LOC.findall(data)]
    assert all(len(LOC.findall(data)) <= 10 for data in indexes.values())
    assert sorted(named) == sorted(i.name.encode() for i in items(100))
    assert all(re.fullmatch(r"sitemap(-index-\d+)?\.xml", name) for name in indexes)


def test_the_split_depends_on_the_set_of_files_not_their_order() -> None:
    assert render_indexes(BASE, items(100), 10) == render_indexes(BASE, list(reversed(items(100))), 10)


def test_a_file_added_or_removed_changes_one_index_file() -> None:
    # Given a site split over several index files
    before = render_indexes(BASE, items(100), max_entries=10)
    # When one file is added (the number of index files staying), or one removed
    added = render_indexes(BASE, [*items(100), IndexItem("sitemap-new-00000000.xml.gz", 0)], max_entries=10)
    removed = render_indexes(BASE, items(100)[1:], max_entries=10)
    # Then exactly one index file changes
    for after in (added, removed):
        assert set(after) == set(before)
        assert sum(after[name] != before[name] for name in before) == 1


def test_more_files_than_the_index_files_can_name_stop_with_advice() -> None:
    with pytest.raises(LimitExceeded, match="--sections"):
        split_index(items(MAX_INDEX_FILES + 1), max_entries=1)


def test_the_pipeline_publishes_several_index_files_and_drops_those_it_no_longer_needs() -> None:
    # Given a stack whose index files may name 2 files each, and pages in 9 sections (one file each)
    stack = Stack(max_urls=3, max_files_per_index=2)
    stack.send(*[page(f"p{n}", section=f"s{n}") for n in range(9)])
    stack.drain()
    # Then several index files name every file once, each within the limit, as the reference model has it
    indexes = sorted(n for n in stack.s3.objects if re.fullmatch(r"sitemap(-index-\d+)?\.xml", n))
    assert len(indexes) >= 5 and INDEX_NAME in indexes
    assert all(len(LOC.findall(stack.s3.objects[n].data)) <= 2 for n in indexes)
    stack.check()
    # And Search Console is told of each index file written
    [record] = [r for r in stack.notifications() if "index" in r]
    assert record["index"]["names"] == indexes
    # When all but one page are deleted
    stack.send(
        *[page(f"p{n}", type="delete", section=f"s{n}", occurred_at="2026-11-21T10:00:00Z") for n in range(1, 9)]
    )
    stack.drain()
    # Then only sitemap.xml is left, naming the one file left
    assert sorted(n for n in stack.s3.objects if n.endswith(".xml")) == [INDEX_NAME]
    stack.check()


def test_an_index_file_left_by_an_older_index_rebuild_is_deleted_and_a_section_named_index_kept() -> None:
    # Given a site in several index files, one section named "index" (its files are sitemap-index-<hex>.xml.gz),
    # and a further index file that an index rebuild of an older generation wrote after a newer one deleted it
    stack = Stack(max_urls=3, max_files_per_index=2)
    stack.send(*[page(f"p{n}", section="index" if n == 0 else f"s{n}") for n in range(6)])
    stack.drain()
    assert "sitemap-index-00000000.xml.gz" in stack.s3.objects
    stray = "sitemap-index-31.xml"
    stack.s3.objects[stray] = S3Object(b"<sitemapindex/>", "etag", 1)
    # When a page is added and the index files change
    stack.send(page("p9", section="s9"))
    stack.drain()
    # Then the stray index file is gone, the section's file is still there, and the site is as the model has it
    assert stray not in stack.s3.objects
    assert "sitemap-index-00000000.xml.gz" in stack.s3.objects
    stack.check()


@pytest.mark.parametrize("count", range(3, 40))
def test_every_index_file_names_at_least_one_sitemap_as_the_schema_requires(count: int) -> None:
    # Given sites of 3 to 39 files, at most 2 an index (so sitemap.xml's own share is sometimes empty)
    indexes = render_indexes(BASE, items(count), max_entries=2)
    # Then every index file names between 1 and 2 files, each file once, and sitemap.xml is among them
    assert INDEX_NAME in indexes
    assert all(1 <= len(LOC.findall(data)) <= 2 for data in indexes.values())
    named = [name for data in indexes.values() for name in LOC.findall(data)]
    assert sorted(named) == sorted(i.name.encode() for i in items(count))
