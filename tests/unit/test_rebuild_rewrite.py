"""A file rewritten from its snapshot and its changed pages (``core/states.py``) is the file a full build of the
same pages renders, byte for byte, whichever of its pages change (at its ends too) and whatever they carry
(images, hreflang alternates, news fresh and stale, deletes); and the rewrite decodes only the pages it changes.
On the in-memory stack of ``test_recovery``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.core import records, states
from sitemap_updater.core.layout import build_site
from sitemap_updater.core.messages import DirtyMark, read_rebuild_request
from sitemap_updater.core.reduce import reduce_states, split_states, state_from_event
from sitemap_updater.core.sharding import Limits, page_key
from sitemap_updater.service import rebuild
from sitemap_updater.service.ingest import page_write
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import AS_OF_US, BASE, parse
from tests.unit.test_recovery import Stack, page

FRESH = {"publication_name": "T & <Co>", "publication_language": "en", "publication_date": "2026-11-21",
         "title": "fresh"}  # fmt: skip
STALE = {**FRESH, "publication_date": "2026-11-10", "title": "stale"}  # older than two days at AS_OF_US
MAX_URLS = 1000


def _shaped(name: str, shape: int, version: int = 1) -> dict[str, Any]:
    shapes: list[dict[str, Any]] = [
        {},
        {"images": [{"loc": f"{BASE}/{name}.jpg", "caption": "a & b"}]},
        {"alternates": [{"hreflang": "de", "href": f"{BASE}/de/{name}"}, {"hreflang": "en", "href": f"{BASE}/{name}"}]},
        {"news": FRESH},
        {"news": STALE},
    ]
    fields = shapes[shape]
    return page(name, version=version, lastmod=f"2026-11-{1 + version % 20:02d}", **fields)


def _by_key(names: list[str]) -> list[str]:
    return sorted(names, key=lambda name: page_key(f"{BASE}/blog/{name}"))


def _built(stack: Stack, max_urls: int = MAX_URLS) -> dict[str, bytes]:
    """What a full build renders from every event the stack was sent."""
    site = stack.pipeline.site
    newest = reduce_states(state_from_event(parse(body, site)) for body in stack.sent)
    entries, tombstones = split_states(newest.values())
    built = build_site(entries, tombstones, Limits(max_urls=max_urls), AS_OF_US, BASE)
    return {name: f.data for name, f in built.files.items()}


def _published(stack: Stack) -> dict[str, bytes]:
    return {name: obj.data for name, obj in stack.s3.objects.items() if name.endswith(".xml.gz")}


EDITS = ["change first", "change last", "delete first", "delete last", "add before first", "add after last",
         "change middle", "news fresh to stale at the end"]  # fmt: skip


@pytest.mark.parametrize("edit", EDITS)
def test_a_file_rewritten_from_its_snapshot_is_the_file_a_build_renders(edit: str) -> None:
    # Given one file of 40 pages of every shape, published
    stack = Stack(max_urls=MAX_URLS)
    names = _by_key([f"p{i}" for i in range(40)])
    stack.send(*(_shaped(name, i % 5) for i, name in enumerate(names)))
    stack.drain()
    assert _published(stack) == _built(stack) and len(_published(stack)) == 1
    # When pages at its ends (or inside it) change, are deleted, or new pages land past its ends
    first, last = names[0], names[-1]
    candidates = _by_key([f"n{i}" for i in range(400)])
    bodies = {
        "change first": [_shaped(first, 2, version=2)],
        "change last": [_shaped(last, 1, version=2)],
        "delete first": [page(first, type="delete", version=2)],
        "delete last": [page(last, type="delete", version=2), page(names[-2], type="delete", version=2)],
        "add before first": [_shaped(n, 3) for n in candidates[:2]],
        "add after last": [_shaped(n, 1) for n in candidates[-2:]],
        "change middle": [_shaped(names[20], 3, version=2), _shaped(names[21], 0, version=2)],
        "news fresh to stale at the end": [_shaped(last, 4, version=2), _shaped(first, 3, version=2)],
    }[edit]
    stack.send(*bodies)
    # (each rewrite reads the file's snapshot and the changed pages only)
    marks = [m for message in stack.queues["rebuild"].messages for m in _marks(message.body)]
    stack.queues["rebuild"].messages.clear()
    done = rebuild_section(stack.pipeline, "blog", marks)
    assert (done.snapshots_read, done.entries_read) == (1, len(bodies)) and done.put
    stack.drain()
    # Then the rewritten file is, byte for byte, the file a full build of the same pages renders
    assert _published(stack) == _built(stack)
    # and another rewrite of it, from the snapshot this one wrote, is too
    stack.send(_shaped(names[10], 1, version=3))
    stack.drain()
    assert _published(stack) == _built(stack)
    stack.check()


def _marks(body: str) -> list[DirtyMark]:
    return read_rebuild_request(json.loads(body))


@pytest.mark.parametrize("change", ["updated", "deleted"])
def test_a_rewrite_of_one_page_decodes_that_page_s_states_only(monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    # Given a published file of 2,000 pages
    stack = Stack(max_urls=5000)
    stack.sent = [_shaped(f"p{i}", i % 5) for i in range(2000)]
    writes = [page_write(state_from_event(parse(body, stack.pipeline.site))) for body in stack.sent]
    stack.store.import_pages(writes)
    rebuild_section(stack.pipeline, "blog", [DirtyMark("blog", writes[0].url, writes[0].key, "added")])
    stack.drain()
    assert _published(stack) == _built(stack, 5000)
    decoded: list[int] = []
    decode = records.decode_block

    def counted(data: bytes) -> Any:
        found = decode(data)
        decoded.append(len(found[0]))
        return found

    for module in (records, states, rebuild):  # wherever a rebuild may call it from
        monkeypatch.setattr(module, "decode_block", counted, raising=False)
    # When one of its pages changes
    stack.send(_shaped("p7", 1, version=2) if change == "updated" else page("p7", type="delete", version=2))
    stack.drain()
    # Then the rewrite decodes the one page it replaces, not the 2,000 it keeps
    assert _published(stack) == _built(stack, 5000)
    assert 0 < sum(decoded) <= 10, decoded
