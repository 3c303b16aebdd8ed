"""The names a change is reported and recorded by (service/ingest.py, service/rebuild.py): a delete of a live page
is recorded as a ``deleted`` page and reported ``removed``, an upsert after it ``added``; a rebuild that shrinks
a section reports the files it retired. On the in-memory stack of ``test_recovery``."""

from __future__ import annotations

from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE
from tests.unit.test_recovery import Stack, page


def test_a_delete_is_recorded_as_deleted_and_reported_removed() -> None:
    stack = Stack()
    url = f"{BASE}/blog/a"
    assert stack.send(page("a", version=1))[0].change == "added"
    assert stack.send(page("a", version=2, priority=0.5))[0].change == "updated"
    gone = stack.send(page("a", type="delete", version=3))[0]
    assert (gone.outcome, gone.change) == ("accepted", "removed")
    assert stack.store.pages[url].kind == "deleted"
    # a delete of a page already deleted changes nothing, and says nothing
    again = stack.send(page("a", type="delete", version=4))[0]
    assert again.change is None
    assert stack.send(page("a", version=5))[0].change == "added"


def test_a_rebuild_that_shrinks_a_section_reports_the_files_it_retired() -> None:
    stack = Stack(max_urls=1)
    stack.send(*[page(f"p{i}", version=1) for i in range(3)])
    stack.drain()
    before = {f.name for f in stack.store.file_records.values() if f.state == "live"}
    stack.send(*[page(f"p{i}", type="delete", version=2) for i in range(2)])
    stack.queues["rebuild"].messages.clear()
    done = rebuild_section(
        stack.pipeline,
        "blog",
        [DirtyMark("blog", cleanup=True)]
        + [
            DirtyMark("blog", url=f"{BASE}/blog/p{i}", key=stack.store.pages[f"{BASE}/blog/p{i}"].key, change="removed")
            for i in range(2)
        ],
    )
    assert done.retired and set(done.retired) <= before
