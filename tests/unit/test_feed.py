"""The recent-changes Atom feed: newest first, removed pages leave it, valid Atom read by a real parser, kept from
the notifier's change records with no table read, and written only when it changes."""

from __future__ import annotations

import json
from typing import Any

import feedparser  # type: ignore[import-untyped]
import pytest

from sitemap_updater.core.feed import FEED_NAME, FEED_STATE, FeedChange, FeedState, apply, render_atom
from sitemap_updater.core.messages import change_record
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.notify import Notifiers, notify
from tests.conftest import BASE
from tests.unit.test_announce import Engine
from tests.unit.test_recovery import Crash, Stack, crash, page, replace_settings

T = 1_795_000_000_000_000


class NoHttp:
    timeout = 20.0

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        raise AssertionError("no request expected")


def test_added_and_updated_pages_go_to_the_top_and_removed_ones_leave() -> None:
    state = apply(FeedState(), [FeedChange(f"{BASE}/{n}", "added", "blog", T + n) for n in range(5)], limit=3)
    assert [e.url for e in state.entries] == [f"{BASE}/4", f"{BASE}/3", f"{BASE}/2"]
    state = apply(
        state, [FeedChange(f"{BASE}/2", "updated", "blog", T + 9), FeedChange(f"{BASE}/4", "removed", "blog", 0)], 3
    )
    assert [e.url for e in state.entries] == [f"{BASE}/2", f"{BASE}/3"]
    # A page that moved to another section stays when its old section reports it removed
    moved = apply(
        state, [FeedChange(f"{BASE}/3", "added", "news", T + 10), FeedChange(f"{BASE}/3", "removed", "blog", 0)], 3
    )
    assert [e.url for e in moved.entries] == [f"{BASE}/3", f"{BASE}/2"]


def test_the_feed_is_atom_a_real_parser_reads_without_complaint() -> None:
    state = apply(
        FeedState(),
        [FeedChange(f"{BASE}/a?x=1&y=2", "added", "blog", T), FeedChange(f"{BASE}/b", "added", "blog", T + 1)],
        10,
    )
    parsed = feedparser.parse(render_atom(BASE, state))
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert parsed.feed.title == "Recent changes on www.example.com"
    assert [e.link for e in parsed.entries] == [f"{BASE}/b", f"{BASE}/a?x=1&y=2"]
    assert [e.id for e in parsed.entries] == [f"{BASE}/b", f"{BASE}/a?x=1&y=2"]
    assert parsed.entries[0].updated_parsed[:6] == parsed.feed.updated_parsed[:6]


def test_the_notifier_keeps_the_feed_from_change_records_and_writes_it_only_when_it_changes() -> None:
    # Given a stack with a feed of 5 pages, and pages published
    stack = Stack(max_urls=3, notifiers=False)
    stack.pipeline = replace_settings(stack, feed_entries=5)
    stack.send(*[page(f"p{n}", section="blog", lastmod=f"2026-11-0{n + 1}") for n in range(7)])
    stack.drain()
    records = stack.notifications()
    # When the notifier handles their change records
    notify(records, stack.pipeline, Notifiers(NoHttp()))
    # Then the feed lists the 5 newest pages, newest first, with their lastmods
    parsed = feedparser.parse(stack.s3.objects[FEED_NAME].data)
    assert [e.link for e in parsed.entries] == [f"{BASE}/blog/p{n}" for n in (6, 5, 4, 3, 2)]
    assert parsed.entries[0].updated.startswith("2026-11-07")
    assert json.loads(stack.s3.objects[FEED_STATE].data)["seq"] == 1
    # And the same records again write nothing; a deleted page leaves the feed
    feed = stack.s3.objects[FEED_NAME]
    notify(records, stack.pipeline, Notifiers(NoHttp()))
    assert stack.s3.objects[FEED_NAME] is feed
    stack.queues["notify"].messages.clear()
    stack.send(page("p6", section="blog", type="delete", occurred_at="2026-11-21T10:00:00Z"))
    stack.drain()
    notify(stack.notifications(), stack.pipeline, Notifiers(NoHttp()))
    parsed = feedparser.parse(stack.s3.objects[FEED_NAME].data)
    assert [e.link for e in parsed.entries] == [f"{BASE}/blog/p{n}" for n in (5, 4, 3, 2)]


def test_the_feed_and_its_state_are_kept_where_the_notify_function_may_read_and_write_them() -> None:
    # On AWS a key the policy does not name is AccessDenied (moto and the fakes grant everything)
    from tests.cfn_template import stack

    role = stack({"SiteUrl": BASE, "RecentChangesFeed": "20"}).of_type("AWS::IAM::Role")["NotifyFunctionRole"]
    granted = set()
    for policy in role["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            actions, resources = statement["Action"], statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                granted |= {(action, r) for r in ([resources] if isinstance(resources, str) else resources)}
    for key in (FEED_NAME, FEED_STATE):
        arn = f"<SitemapBucket.Arn>/{key}"
        assert {("s3:GetObject", arn), ("s3:PutObject", arn)} <= granted


def test_a_removal_told_to_indexnow_before_the_notifier_died_still_takes_the_page_off_the_feed() -> None:
    # Given a feed and IndexNow that were told of blog/a
    stack = Stack(notifiers=False)
    pipeline = replace_settings(stack, feed_entries=5, indexnow_key="0123456789abcdef", indexnow_window_seconds=0)
    url = f"{BASE}/blog/a"
    stack.send(page("a", version=1))  # its page state (live: only the removal below can take it off the feed)
    engine = Engine()
    added = change_record("blog", {url: "added"}, {url: "d1"}, [], {url: T}, {url: "1"}).body
    notify([added], pipeline, Notifiers(engine))
    assert [e.link for e in feedparser.parse(stack.s3.objects[FEED_NAME].data).entries] == [url]
    # When its removal (a delete where no file showed it: removed if announced) is told to IndexNow, and the
    # notifier dies before it writes the feed
    removal = change_record("blog", {}, {}, [], {}, {}, {url: "6"}).body
    with crash(pipeline.bucket, "publish", when=lambda name, *_a, **_k: name == FEED_NAME), pytest.raises(Crash):
        notify([removal], pipeline, Notifiers(engine))
    assert engine.lists == [[url], [url]]
    # Then the record delivered again takes the page off the feed, and tells IndexNow nothing more
    notify([removal], pipeline, Notifiers(engine))
    assert feedparser.parse(stack.s3.objects[FEED_NAME].data).entries == []
    assert engine.lists == [[url], [url]]
