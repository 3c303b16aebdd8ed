"""A site's first import (service/bulk_import.py): the newest state of each URL whatever the line order, every
section and the index published once, rejected lines named by their number, nothing written when nothing was
accepted, and no page announced (a first import is not news; the index is). On the in-memory stack of ``test_recovery``,
judged by the independent reference model."""

from __future__ import annotations

import json

import pytest

from sitemap_updater.service.bulk_import import ImportRefused, import_events
from tests.unit.test_recovery import Crash, Stack, crash, page


def test_an_import_publishes_the_newest_state_of_every_page_once() -> None:
    stack = Stack(max_urls=3)
    events = [
        page("a", version=2, priority=0.9),
        page("a", version=1, priority=0.1),  # older, after the newer one
        *[page(f"p{i}", version=1) for i in range(4)],
        page("gone", version=1),
        page("gone", type="delete", version=2),
        page("d", version=1, section="docs"),
    ]
    stack.sent += events
    result = import_events([json.dumps(e) for e in events], stack.pipeline)
    assert result.pages == 6 and result.rejections == []
    assert [s.section for s in result.sections] == ["blog", "docs"]
    assert result.index is not None and result.index.written
    stack.check()  # published = the reference model, every file named by the index
    # no page is announced to search engines (only the new index is)
    assert [sorted(json.loads(m.body)) for m in stack.queues["notify"].messages] == [["index", "v"]]


def test_rejected_lines_are_named_by_number_and_the_rest_imported() -> None:
    stack = Stack()
    good = page("a", version=1)
    stack.sent.append(good)
    result = import_events(["{broken", json.dumps(good), json.dumps(page("b", priority=7))], stack.pipeline)
    assert [number for number, _ in result.rejections] == [1, 3]
    assert "priority" in result.rejections[1][1]
    assert result.pages == 1
    stack.check()


def test_an_import_where_nothing_was_accepted_writes_nothing() -> None:
    stack = Stack()
    result = import_events(["{broken", "[]"], stack.pipeline)
    assert (result.pages, result.sections, result.index) == (0, [], None)
    assert stack.store.pages == {} and stack.s3.objects == {}


def test_a_second_import_into_a_published_site_is_refused_and_writes_nothing() -> None:
    # Given a site imported once
    stack = Stack(max_urls=3)
    first = [page(f"p{i}", version=1) for i in range(4)]
    stack.sent += first
    import_events([json.dumps(e) for e in first], stack.pipeline)
    before = (dict(stack.store.pages), dict(stack.s3.objects))
    # When another export is imported into it (which could hold older states, or move pages between sections)
    second = [page("p0", version=0, priority=0.4), page("p1", version=2, section="docs")]
    with pytest.raises(ImportRefused, match="ingest queue"):
        import_events([json.dumps(e) for e in second], stack.pipeline)
    # Then nothing is written: the published site stays as the first import made it
    assert (dict(stack.store.pages), dict(stack.s3.objects)) == before
    stack.check()


def test_an_import_that_died_after_the_index_named_some_of_its_files_can_be_run_again() -> None:
    # Given an import that dies in its second section, after the deployed index function (asked by the first
    # section's rebuild) has already published a sitemap.xml
    stack = Stack(max_urls=3)
    events = [page("a", version=1), page("b", version=1, section="docs"), page("c", version=1, section="docs")]
    stack.sent += events
    with crash(stack.pipeline.bucket, "publish_over", when=lambda name, *_: "docs" in name), pytest.raises(Crash):
        import_events([json.dumps(e) for e in events], stack.pipeline)
    stack.drain()
    assert stack.s3.objects.get("sitemap.xml") is not None
    # When it is run again, it is not refused, and every page is published
    result = import_events([json.dumps(e) for e in events], stack.pipeline)
    assert result.pages == 3 and result.index is not None
    stack.check()
    # And once it has finished, another import is refused
    with pytest.raises(ImportRefused):
        import_events([json.dumps(e) for e in events], stack.pipeline)
