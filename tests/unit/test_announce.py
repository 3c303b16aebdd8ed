"""What a section rebuild announces (service/announce.py, core/changes.py): exactly the pages whose entry in a
published file was added, changed or removed, also when a rebuild dies between its put and its change record,
and a page no file showed never. On the in-memory stack of ``test_recovery``; what the search engine receives is
what the real notifier sends for the change records the rebuilds queued."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from sitemap_updater.core.changes import View, changes, shown_digest
from sitemap_updater.core.messages import DirtyMark, change_record, read_rebuild_request
from sitemap_updater.core.records import decode_states, encode_state
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.core.snapshots import SnapshotRef, pack_block
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.announce import announce, block_view
from sitemap_updater.service.notify import Notifiers, notify
from sitemap_updater.service.publish import snapshot_id
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


def _with_a_announced() -> tuple[Stack, Announcements]:
    """An in-memory stack whose page ``a`` is published and announced, and its notifier."""
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    return stack, announcements


def test_a_page_put_by_a_rebuild_that_died_before_its_change_record_is_announced_when_it_goes() -> None:
    # Given a published page, and a new page whose rebuild put the file and died before its change record
    stack, announcements = _with_a_announced()
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
    stack, announcements = _with_a_announced()
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


@pytest.mark.parametrize("news_shows_it", [False, True])
def test_a_page_shown_only_by_a_dead_put_that_moves_on_is_announced_once_whatever_its_next_section_does(
    news_shows_it: bool,
) -> None:
    # Given a page whose blog rebuild put the file and died before its change record (never announced)
    stack, announcements = _with_a_announced()
    stack.send(page("p", version=1))
    with crash(stack.pipeline.notify_queue, "send") as hits:
        stack.until(hits)
    assert _url("p") in stack.shown()
    # When it moves to news before blog is rebuilt again, and news deletes it before showing it (or shows it)
    stack.send(page("p", version=2, section="news"))
    held = _hold_back(stack, "news")
    stack.drain()  # blog rebuilt: p gone from its file
    if not news_shows_it:
        stack.send(page("p", version=3, type="delete", section="news", occurred_at="2026-11-21T00:00:00Z"))
    stack.queues["rebuild"].messages += held
    stack.drain()
    # Then the search engines hear of it, and what they were last told is what the files show
    sent = [url for urls in announcements.run() for url in urls]
    assert sent.count(_url("p")) == 1
    assert (_url("p") in stack.shown()) == news_shows_it
    told = stack.store.sent_records([_url("p")], "indexnow", AS_OF_US // 1_000_000 + 86_400)[_url("p")]
    assert bool(told.digest) == news_shows_it  # removed (""), or the entry news shows
    stack.check()


def test_a_page_deleted_and_published_again_before_its_retiring_file_was_unnamed_is_announced_once() -> None:
    """A section's only page deleted: its file retires, still named until the index is rebuilt; the page published
    again before the index unnamed the file was never shown as removed by any published file, so nothing is
    announced (soak seed 3210: the retiring rebuild announced the removal at once, then the page again)."""
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("p", version=1))
    stack.drain()
    assert announcements.run() == [[_url("p")]]
    stack.send(page("p", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.step()  # the section rebuild only: its file retires, still named by the index
    held = stack.queues["index"].messages
    stack.queues["index"].messages = []
    assert _url("p") in stack.shown()
    removal = announcements.run()
    stack.send(page("p", version=3, occurred_at="2026-11-21T01:00:00Z"))  # published again, the same entry
    stack.drain()
    stack.queues["index"].messages += held
    stack.drain()
    assert _url("p") in stack.shown()
    assert removal + announcements.run() == []  # no file stopped showing it: nothing to announce


@pytest.mark.parametrize("index_crashes", [False, True])
def test_a_retired_files_removal_is_announced_once_the_index_no_longer_names_it(index_crashes: bool) -> None:
    # Given a section whose only page is published and announced (retired files kept an hour once unnamed)
    stack = Stack()
    stack.pipeline = replace_settings(stack, retired_file_grace_seconds=3600)
    announcements = Announcements(stack)
    stack.send(page("p", version=1))
    stack.drain()
    assert announcements.run() == [[_url("p")]]
    # When it is deleted and its section rebuilt, the index not yet
    stack.send(page("p", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.step()
    # Then nothing is announced while the index still names the retired file, which shows the page
    assert _url("p") in stack.shown()
    assert announcements.run() == []
    # And once the index stops naming it (even when the index rebuild dies after that, and runs again)
    if index_crashes:
        with crash(stack.pipeline.rebuild_queue, "send", when=lambda *args, **_: "cleanup" in str(args)) as hits:
            stack.until(hits)
        assert _url("p") not in stack.shown()  # unnamed: the index's request to the section was lost
        assert announcements.run() == []
    stack.drain()
    assert _url("p") not in stack.shown()
    # Then its removal is announced, once
    assert announcements.run() == [[_url("p")]]
    stack.send(page("q", version=1))  # a later rebuild of the section finds nothing left to announce
    stack.drain()
    assert announcements.run() == [[_url("q")]]
    stack.check()


def _hold_back(stack: Stack, section: str) -> list[Any]:
    """Take ``section``'s rebuild requests off the queue (its rebuild has not run yet); returns them."""
    held = [m for m in stack.queues["rebuild"].messages if f'"section": "{section}"' in m.body]
    stack.queues["rebuild"].messages = [m for m in stack.queues["rebuild"].messages if m not in held]
    return held


def test_a_delete_naming_another_section_undone_before_the_shown_file_dropped_the_page_announces_no_removal() -> None:
    # Given a page announced while blog showed it
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    # When a delete naming news arrives, news is rebuilt and the notifier runs before blog is rebuilt
    stack.send(page("a", version=3, type="delete", section="news", occurred_at="2026-11-21T00:00:00Z"))
    held = _hold_back(stack, "blog")
    stack.drain()
    assert _url("a") in stack.shown()  # blog's file still shows it
    # Then nothing is announced: no file has dropped the page
    assert announcements.run() == []
    # And when the page is published again in blog before blog's rebuild, its new content is announced once
    stack.send(page("a", version=6, lastmod="2026-11-05"))
    stack.queues["rebuild"].messages[:0] = held
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    assert _url("a") in stack.shown()
    stack.check()


def test_a_page_deleted_from_files_merged_and_split_again_before_the_index_unnamed_them_is_announced_removed() -> None:
    # Given four pages in two files (three URLs a file at most: the upper quarters of the key space), announced
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(*[page(name, version=1) for name in ("p3", "p4", "p6", "p10")])
    stack.drain()
    assert sorted(stack.named()) == ["sitemap-blog-80000000.xml.gz", "sitemap-blog-c0000000.xml.gz"]
    assert len(announcements.run()[0]) == 4
    # When one is deleted, the section's files merge into one (the two retire, still named by the index)
    stack.send(page("p3", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.step()
    assert announcements.run() == []  # the retired files still show it
    # And a page is added before the index rebuild: the section splits again, under the retired files' names
    stack.send(page("p11", version=1))
    stack.step()
    assert {f.name: f.state for f in stack.store.file_records.values()} == {
        "sitemap-blog-00000000.xml.gz": "retiring",
        "sitemap-blog-80000000.xml.gz": "live",
        "sitemap-blog-c0000000.xml.gz": "live",
    }
    stack.drain()
    # Then the deleted page's removal and the new page are each announced once, and nothing else
    sent = [url for urls in announcements.run() for url in urls]
    assert sorted(sent) == [_url("p11"), _url("p3")]
    assert _url("p3") not in stack.shown()
    stack.check()


@pytest.mark.parametrize("news_first", [True, False])
def test_a_page_moved_away_and_back_before_its_first_file_dropped_it_is_last_announced_as_that_file_shows_it(
    news_first: bool,
) -> None:
    # Given a page announced while blog showed it
    stack, announcements = _with_a_announced()
    first = stack.shown()[_url("a")]
    # When it moves to news with another lastmod, news's file shows it (announced) while blog's still does
    stack.send(page("a", version=2, section="news", lastmod="2026-11-05"))
    held = _hold_back(stack, "blog")
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    # And it moves back to blog as it was before blog's file was rebuilt without it
    stack.send(page("a", version=3, section="blog"))
    if news_first:  # news drops it first, then blog is rebuilt with what it showed all along
        stack.queues["rebuild"].messages += held
    else:
        stack.queues["rebuild"].messages[:0] = held
    stack.drain()
    # Then the search engines are told once more, of the entry blog's file shows
    assert announcements.run() == [[_url("a")]]
    assert stack.shown() == {_url("a"): first}
    told = stack.store.sent_records([_url("a")], "indexnow", AS_OF_US // 1_000_000 + 86_400)[_url("a")]
    assert told.digest == stack.store.current_pages()[_url("a")].digest
    stack.check()


def test_a_page_published_again_as_it_was_announced_is_not_announced_again() -> None:
    # Given a page announced while blog showed it
    stack, announcements = _with_a_announced()
    # When a newer event says what it said (another version, the same entry)
    stack.send(page("a", version=2))
    stack.drain()
    # Then nothing is announced, and the feed lists no change
    assert announcements.run() == []
    stack.check()


@pytest.mark.parametrize("via", ["", "docs"])
def test_a_delete_naming_another_section_is_announced_once_the_shown_file_drops_the_page(via: str) -> None:
    # Given a page announced while blog showed it (and, with ``via``, moved on to a section that never showed it)
    stack = Stack()
    announcements = Announcements(stack)
    stack.send(page("a", version=1))
    stack.drain()
    assert announcements.run() == [[_url("a")]]
    if via:
        stack.send(page("a", version=2, section=via))
        _hold_back(stack, via)
        stack.drain()  # blog drops the page, which is live elsewhere: nothing to announce
        assert _url("a") not in stack.shown()
        assert announcements.run() == []
    # When a delete naming news arrives and every section is rebuilt
    stack.send(page("a", version=3, type="delete", section="news", occurred_at="2026-11-21T00:00:00Z"))
    stack.drain()
    # Then the removal is announced once, and no file shows the page
    assert announcements.run() == [[_url("a")]]
    assert _url("a") not in stack.shown()
    stack.check()


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


@pytest.mark.parametrize(("delete_rank", "told"), [("r2", ""), ("r0", "d")])
def test_a_delete_left_to_the_notifier_replaces_an_older_change_of_the_same_batch(delete_rank: str, told: str) -> None:
    # Given one batch: blog announces a change of a page, and news a delete of it that no file of news showed
    stack = Stack()
    announcements = Announcements(stack)
    url = _url("a")
    records = [
        change_record("blog", {url: "updated"}, {url: "d"}, [], {}, {url: "r1"}).body,
        change_record("news", {}, {}, [], {}, {}, {url: delete_rank}).body,
    ]
    notify(records, announcements.pipeline, Notifiers(announcements.engine))
    # Then the URL is sent once, and recorded as what the newer of the two says
    assert announcements.engine.lists == [[url]]
    assert stack.store.sent_records([url], "indexnow", 0)[url].digest == told


# --- the comparison itself ---------------------------------------------------------------------------------
DAY_US = 86_400 * 1_000_000
NEWS_AT = "2026-11-10T00:00:00Z"
NEWS_US = 1_794_268_800 * 1_000_000  # NEWS_AT in microseconds


def _state(name: str, **fields: Any) -> Any:
    return state_from_event(parse(page(name, **fields)))


def _news(title: str = "News") -> dict[str, str]:
    return {"publication_name": "Example Times", "publication_language": "en", "publication_date": NEWS_AT,
            "title": title}  # fmt: skip


def _copy(state: Any) -> Any:
    """The same state as another object (read back from a snapshot, say)."""
    [again] = decode_states(encode_state(state))
    return again


def _kinds(found: Any) -> dict[str, str]:
    return {url: kind for url, (kind, _) in found.shown.items()}


def _sorted(*states: Any) -> list[Any]:
    return sorted(states, key=lambda s: (s.key, s.url))


def test_the_same_entries_announce_nothing_whether_or_not_they_are_the_same_objects() -> None:
    a, b = _state("a", version=1), _state("b", version=1, news=_news())
    now = _sorted(a, b)
    assert changes([ALL], now, [View(ALL, now)], [], AS_OF_US).shown == {}
    assert changes([ALL], now, [View(ALL, [_copy(s) for s in now])], [], AS_OF_US).shown == {}


def test_pages_added_changed_and_gone_anywhere_in_a_file_are_each_found() -> None:
    pages = _sorted(*(_state(f"p{i}", version=1) for i in range(8)))
    changed = _state(pages[2].url.rsplit("/", 1)[1], version=2, lastmod="2026-11-09")
    added = _state("new", version=1)
    now = _sorted(*(s for n, s in enumerate(pages) if n not in (2, 5)), changed, added)
    found = changes([ALL], now, [View(ALL, pages)], [], AS_OF_US)
    assert _kinds(found) == {changed.url: "updated", added.url: "added"}
    assert found.vanished == [pages[5].url]


def test_a_page_moving_between_files_of_a_section_is_no_change() -> None:
    a, b = _state("a", version=1), _state("b", version=1)
    low, high = _sorted(a, b)
    halves = [KeyRange(0, KEY_SPACE // 2, 1), KeyRange(KEY_SPACE // 2, KEY_SPACE, 1)]
    # one file became two (its pages now in the halves their keys fall in): the entries shown are the same
    assert changes(halves, [low, high], [View(ALL, [low, high])], [], AS_OF_US).shown == {}


def test_news_counts_while_files_render_it_that_is_for_two_days() -> None:
    with_news, other_news = _state("a", version=1, news=_news()), _state("a", version=2, news=_news("Other"))
    # the digest announced is of the entry as shown: with its news up to two days, without it after
    assert shown_digest(with_news, NEWS_US + 2 * DAY_US) == with_news.digest
    assert shown_digest(with_news, NEWS_US + 2 * DAY_US + 1) == hashlib.sha256(with_news.entry.body).hexdigest()
    assert shown_digest(_state("b", version=1), AS_OF_US) == _state("b", version=1).digest
    # a change of the news alone is a change while it is shown, none once no file renders it
    view = [View(ALL, [with_news])]
    assert _kinds(changes([ALL], [other_news], view, [], NEWS_US + 2 * DAY_US)) == {with_news.url: "updated"}
    assert changes([ALL], [other_news], view, [], NEWS_US + 2 * DAY_US + 1).shown == {}


def test_a_file_whose_announced_snapshot_is_lost_announces_every_page_it_shows_as_updated() -> None:
    a, b = _state("a", version=1), _state("b", version=1)
    found = changes([ALL], _sorted(a, b), [View(ALL, None)], [], AS_OF_US)
    assert _kinds(found) == {a.url: "updated", b.url: "updated"} and found.vanished == []


def test_bytes_put_since_the_last_announcement_are_compared_too() -> None:
    a, p, q = _state("a", version=1), _state("p", version=1), _state("q", version=1)
    a2 = _state("a", version=2, lastmod="2026-11-09")
    announced = [View(ALL, _sorted(a, q))]
    # shown since and gone now: vanished (once, though announced too)
    assert changes([ALL], [], announced, [View(ALL, _sorted(a, p, q))], AS_OF_US).vanished == sorted(
        [a.url, p.url, q.url]
    )
    # shown otherwise since, or not at all though its file covered it, and back as announced now: updated
    found = changes([ALL], _sorted(a, q), announced, [View(ALL, [_copy(a2)])], AS_OF_US)
    assert _kinds(found) == {a.url: "updated", q.url: "updated"}
    # shown since as announced and as it is now: nothing
    assert changes([ALL], [a], [View(ALL, [a])], [View(ALL, [_copy(a)])], AS_OF_US).shown == {}
    # shown since as it is now, never announced: added
    assert _kinds(changes([ALL], [p], [], [View(ALL, [p])], AS_OF_US)) == {p.url: "added"}
    # since bytes not known: every page they covered is told
    assert _kinds(changes([ALL], _sorted(a, p), announced, [View(ALL, None)], AS_OF_US)) == {
        a.url: "updated",
        p.url: "added",
    }
    # what such bytes showed outside the region rendered now is not this rebuild's to judge
    low, high = _sorted(a, p)
    half = next(
        r for r in (KeyRange(0, KEY_SPACE // 2, 1), KeyRange(KEY_SPACE // 2, KEY_SPACE, 1)) if r.contains(low.key)
    )
    if not half.contains(high.key):
        assert changes([half], [low], [View(half, [low])], [View(ALL, [low, high])], AS_OF_US).vanished == []


# --- what the record says --------------------------------------------------------------------------------
def test_a_block_is_read_over_the_range_its_head_names() -> None:
    stack = Stack()
    a = _state("a", version=1)
    where = KeyRange(a.key >> 61 << 61, (a.key >> 61 << 61) + (KEY_SPACE >> 3), 3)
    block = pack_block(snapshot_id("sha", where), encode_state(a))
    stack.pipeline.bucket.write_snapshots("_state/sitemap-blog/0000000000000001-1-0.states", [block])
    ref = SnapshotRef("_state/sitemap-blog/0000000000000001-1-0.states", 0, len(block))
    assert block_view(stack.pipeline.bucket, "sitemap-blog-00000000.xml.gz", ref, ALL) == View(where, [a])
    gone = SnapshotRef("_state/sitemap-blog/0000000000000002-1-0.states", 0, 10)
    assert block_view(stack.pipeline.bucket, "sitemap-blog-00000000.xml.gz", gone, where) == View(where, None)


def test_the_record_names_how_each_page_changed_with_its_digest_rank_and_lastmod() -> None:
    stack = Stack()
    stack.send(page("gone", version=1), page("gone", version=2, type="delete", occurred_at="2026-11-21T00:00:00Z"))
    stack.send(page("moved", version=1), page("moved", version=2, section="news"))
    undated, gone, moved = (
        _state("undated", version=1, lastmod=None),
        _state("gone", version=1),
        _state("moved", version=1),
    )
    tombstone = stack.store.pages[gone.url]
    announced = [View(ALL, _sorted(gone, moved))]
    loaded = {gone.url: _tomb(gone, "the rank of the tombstone here")}
    found = announce(stack.pipeline, [ALL], [undated], (announced, []), loaded, [], AS_OF_US)
    # a page without lastmod shows when it was published; a deleted page is removed with its tombstone's rank; a
    # page moved to another section is that section's to announce
    assert found.changed == {undated.url: "added", gone.url: "removed"}
    assert found.lastmods == {undated.url: AS_OF_US} and found.digests[gone.url] == ""
    assert found.ranks == {undated.url: undated.rank, gone.url: loaded[gone.url].rank}
    # a page whose tombstone went to another section is removed with the rank of its page state
    elsewhere = announce(stack.pipeline, [ALL], [], (announced, []), {}, [], AS_OF_US)
    assert elsewhere.changed == {gone.url: "removed"} and elsewhere.ranks == {gone.url: tombstone.rank}


def test_only_deletes_of_pages_no_file_here_showed_are_left_to_what_was_announced() -> None:
    stack = Stack()
    a, b, c = _state("a", version=1), _state("b", version=1), _state("c", version=1)
    tomb_a, tomb_b = _tomb(a, "r-a"), _tomb(b, "r-b")
    marks = [_mark(a, "removed"), _mark(b, "removed"), _mark(c, "removed"), _mark(b, "added")]
    # a was shown and is deleted: removed; b was never shown: left to the notifier; c is live again, as announced
    found = announce(stack.pipeline, [ALL], [c], ([View(ALL, _sorted(a, c))], []), {a.url: tomb_a, b.url: tomb_b,
                     c.url: c}, marks, AS_OF_US)  # fmt: skip
    assert found.changed == {a.url: "removed"}
    assert found.unless_unannounced == {b.url: "r-b"}
    # a mark that only says added asks for nothing
    assert (
        announce(stack.pipeline, [ALL], [], ([], []), {b.url: tomb_b}, [_mark(b, "added")], AS_OF_US).unless_unannounced
        == {}
    )


def _tomb(state: Any, rank: str) -> Any:
    """A tombstone of ``state``'s page whose rank is ``rank``."""
    return type("Tomb", (), {"url": state.url, "key": state.key, "entry": None, "rank": rank})()


def _mark(state: Any, change: str) -> DirtyMark:
    return DirtyMark("blog", url=state.url, key=state.key, change=change)
