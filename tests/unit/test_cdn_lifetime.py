"""What the index names while the CDN may still serve a file's previous bytes, and when a retired file may go."""

from __future__ import annotations

from sitemap_updater.core.layout import PREV_UNDATED, PublishedFile
from sitemap_updater.core.render import IndexItem, render_index
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.core.snapshots import SnapshotRef
from sitemap_updater.service.index import grace_over, index_items

S = 1_000_000  # microseconds in a second
NOW = 1_795_262_400 * S
LIFETIME = 5 * S
SNAPSHOT = SnapshotRef("_state/sitemap-blog/0000000000000000-1-0.states", 0, 100)


def _file(
    name: str, published_us: int, prev_lastmod_us: int, state: str = "live", unnamed_us: int = 0
) -> PublishedFile:
    return PublishedFile("blog", KeyRange(0, 1, 0), name, "sha", 900, 1, 10, state=state, published_us=published_us,
                         prev_lastmod_us=prev_lastmod_us, unnamed_us=unnamed_us, snapshot=SNAPSHOT)  # fmt: skip


def test_a_file_changed_within_the_lifetime_is_named_with_the_lastmod_the_cdn_may_still_serve() -> None:
    changed = _file("a", published_us=NOW - 2 * S, prev_lastmod_us=800)
    items, settling = index_items([changed], NOW, LIFETIME)
    assert items == [IndexItem("a", 800)] and settling == 1


def test_at_the_end_of_the_lifetime_the_file_is_named_with_its_own_lastmod() -> None:
    for published_us in (NOW - LIFETIME, NOW - LIFETIME - 1):
        items, settling = index_items([_file("a", published_us, prev_lastmod_us=800)], NOW, LIFETIME)
        assert items == [IndexItem("a", 900)] and settling == 0
    items, settling = index_items([_file("a", NOW - LIFETIME + 1, prev_lastmod_us=800)], NOW, LIFETIME)
    assert items == [IndexItem("a", 800)] and settling == 1


def test_a_file_whose_earlier_bytes_showed_no_lastmod_is_named_without_one_meanwhile() -> None:
    # its pages had no lastmod (adopted without one); now one has: the CDN may still serve the undated bytes
    items, settling = index_items([_file("a", NOW, prev_lastmod_us=PREV_UNDATED)], NOW, LIFETIME)
    assert items == [IndexItem("a", 0)] and settling == 1
    assert b"<lastmod>" not in render_index("https://www.example.com", items)
    items, settling = index_items([_file("a", NOW - LIFETIME, prev_lastmod_us=PREV_UNDATED)], NOW, LIFETIME)
    assert items == [IndexItem("a", 900)] and settling == 0


def test_a_new_name_has_no_older_bytes_to_wait_for() -> None:
    items, settling = index_items([_file("a", published_us=NOW, prev_lastmod_us=0)], NOW, LIFETIME)
    assert items == [IndexItem("a", 900)] and settling == 0


def test_without_a_cdn_lifetime_every_file_is_named_with_its_own_lastmod() -> None:
    items, settling = index_items([_file("a", published_us=NOW, prev_lastmod_us=800)], NOW, 0)
    assert items == [IndexItem("a", 900)] and settling == 0


def test_a_file_the_index_stopped_naming_goes_only_after_its_grace() -> None:
    grace = 3600 * S
    assert not grace_over(_file("a", 0, 0, state="unnamed", unnamed_us=NOW - grace + 1), NOW, grace)
    assert grace_over(_file("a", 0, 0, state="unnamed", unnamed_us=NOW - grace), NOW, grace)
    assert not grace_over(_file("a", 0, 0, state="retiring", unnamed_us=0), NOW, grace)
    assert grace_over(_file("a", 0, 0, state="unnamed", unnamed_us=NOW), NOW, 0)
