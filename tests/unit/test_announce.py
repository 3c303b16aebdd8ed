"""What a section rebuild announces (service/announce.py, core/changes.py): exactly the pages whose entry in a
published file was added, changed or removed, also when a rebuild dies between its put and its change record,
and a page no file showed never. On the in-memory stack of ``test_recovery``; what the search engine receives is
what the real notifier sends for the change records the rebuilds queued."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.core.changes import View, changes
from sitemap_updater.core.messages import read_rebuild_request
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.notify import Notifiers, notify
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import AS_OF_US, BASE, parse
from tests.unit.test_recovery import Stack, crash, page, replace_settings

ALL = KeyRange(0, KEY_SPACE, 0)


class Engine:
    """IndexNow on the in-memory stack: accepts every request and keeps its URL list."""

    timeout = 20.0

    def __init__(self) -> None:
        self.lists: list[list[str]] = []

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        self.lists.append(list(body["urlList"]))
        return HttpResponse(200, {}, "")


class Announcements:
    """Runs the notifier over the change records queued since the last run, as the notify function would."""

    def __init__(self, stack: Stack) -> None:
        self.stack, self.engine, self._seen = stack, Engine(), 0
        self.pipeline = replace_settings(stack, indexnow_key="announce-key-0001", indexnow_window_seconds=0)

    def run(self) -> list[list[str]]:
        messages = self.stack.queues["notify"].messages[self._seen :]
        self._seen += len(messages)
        before = len(self.engine.lists)
        notify([json.loads(m.body) for m in messages], self.pipeline, Notifiers(self.engine))
        return self.engine.lists[before:]


def _url(name: str) -> str:
    return f"{BASE}/blog/{name}"


def test_a_page_put_by_a_rebuild_that_died_before_its_change_record_is_announced_when_it_goes() -> None:
    # Given a published page, and a new page whose rebuild put the file and died before its change record
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    stack.send(page("p", version=1))
    with crash(stack.pipeline.notify_queue, "send") as hits:
        stack.until(hits)
    assert _url("p") in stack.shown()  # a crawler may have read it
    # When the page is deleted before the rebuild is retried
    stack.send(page("p", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.drain()
    # Then its removal is announced (the retry knows what the dead attempt put), and nothing else
    assert announcements.run() == [[_url("p")]]
    stack.check()


def test_a_put_that_never_happened_announces_nothing() -> None:
    # Given a published page, and a new page whose rebuild recorded its intent and died before its put
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    announcements.run()
    stack.send(page("p", version=1))
    with crash(stack.s3, "put_object", when=lambda **kw: kw["Key"].endswith(".xml.gz")) as hits:
        stack.until(hits)
    assert _url("p") not in stack.shown()
    # When the page is deleted before the rebuild is retried
    stack.send(page("p", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.drain()
    # Then nothing is announced: no file ever showed it
    assert announcements.run() == []
    stack.check()


def test_a_page_moved_to_another_section_and_deleted_before_that_section_showed_it_is_announced_removed() -> None:
    # Given a page announced while blog showed it
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    # When it moves to news, blog is rebuilt (the page is live elsewhere: nothing to announce), and the page is
    # deleted before news was rebuilt
    stack.send(page("a", version=2, section="news"))
    bodies = [json.loads(m.body) for m in stack.queues["rebuild"].messages]
    stack.queues["rebuild"].messages = [m for m in stack.queues["rebuild"].messages if '"blog"' not in m.body]
    marks = [mark for body in bodies if body["section"] == "blog" for mark in read_rebuild_request(body)]
    assert rebuild_section(stack.pipeline, "blog", marks).changed_urls == {}
    stack.send(page("a", version=3, type="delete", section="news", occurred_at="2026-11-21T00:00:00Z"))
    stack.drain()
    # Then its removal is announced once: news never showed it, but the search engines were told it exists
    assert announcements.run() == [[_url("a")]]


def test_a_page_announced_nowhere_and_deleted_is_not_announced_by_a_section_that_never_showed_it() -> None:
    # Given a page published in one batch with its delete (no file ever showed it)
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    announcements.run()
    stack.send(page("ghost", version=1), page("ghost", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.drain()
    # Then no change record names it as changed, and nothing is sent
    assert all(_url("ghost") not in json.loads(m.body).get("changed", {}) for m in stack.queues["notify"].messages)
    assert announcements.run() == []


# --- the comparison itself ---------------------------------------------------------------------------------
def _state(name: str, **fields: Any) -> Any:
    return state_from_event(parse(page(name, **fields)))


def test_the_same_entries_announce_nothing_and_a_changed_or_new_entry_is_announced() -> None:
    a, b = _state("a", version=1), _state("b", version=1)
    assert changes([ALL], [a, b], [View(ALL, [a, b])], [], AS_OF_US).shown == {}
    newer = _state("a", version=2, lastmod="2026-11-09")
    found = changes([ALL], [newer, b, _state("c", version=1)], [View(ALL, [a, b])], [], AS_OF_US)
    assert {url: kind for url, (kind, _) in found.shown.items()} == {_url("a"): "updated", _url("c"): "added"}


def test_a_page_moving_between_files_of_a_section_is_no_change() -> None:
    a, b = _state("a", version=1), _state("b", version=1)
    low, high = sorted([a, b], key=lambda s: s.key)
    half = KeyRange(0, KEY_SPACE // 2, 1) if low.key < KEY_SPACE // 2 <= high.key else ALL
    region = [half, KeyRange(KEY_SPACE // 2, KEY_SPACE, 1)] if half != ALL else [ALL]
    # one file became two (or, for keys on one side, the same file): the entries shown are the same
    assert changes(region, [low, high], [View(ALL, [low, high])], [], AS_OF_US).shown == {}


def test_news_that_aged_out_is_no_change() -> None:
    published = "2026-11-10T00:00:00Z"
    news = {"publication_name": "Example Times", "publication_language": "en", "publication_date": published,
            "title": "News"}  # fmt: skip
    state = _state("a", version=1, news=news)
    as_of_later = AS_OF_US + 30 * 86_400 * 1_000_000  # the news is weeks old now: not rendered
    assert changes([ALL], [state], [View(ALL, [state])], [], as_of_later).shown == {}


def test_a_file_whose_announced_snapshot_is_lost_announces_every_page_it_shows() -> None:
    a, b = _state("a", version=1), _state("b", version=1)
    found = changes([ALL], [a, b], [View(ALL, None)], [], AS_OF_US)
    assert sorted(found.shown) == [_url("a"), _url("b")] and found.vanished == []


@pytest.mark.parametrize("since_shows_it", [True, False])
def test_a_page_shown_only_by_bytes_put_since_the_last_announcement_vanishes_once_gone(since_shows_it: bool) -> None:
    a, p = _state("a", version=1), _state("p", version=1)
    since = [View(ALL, [a, p] if since_shows_it else [a])]
    found = changes([ALL], [a], [View(ALL, [a])], since, AS_OF_US)
    assert found.vanished == ([_url("p")] if since_shows_it else []) and found.shown == {}
