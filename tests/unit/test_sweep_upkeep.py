"""The scheduled functions (service/sweep.py): the sweep queues every change still pending and checks robots.txt
when asked; upkeep asks a rebuild of each file whose news is past two days old (not a microsecond before), and a
cleanup of each section holding files whose grace is over. On the in-memory stack of ``test_recovery``."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from sitemap_updater.core.moments import to_micros
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.marks import OUTBOX_ABANDONED_S
from sitemap_updater.service.sweep import robots_warning, sweep, upkeep
from tests.conftest import BASE
from tests.unit.test_recovery import NOW, Crash, Stack, crash, page, replace_settings

INDEX = f"{BASE}/sitemap.xml"


class Robots:
    """The WebGet port: answers every GET with one status and body; records (method, URL)."""

    def __init__(self, status: int, body: str = "") -> None:
        self.answer = HttpResponse(status, {}, body)
        self.requests: list[tuple[str, str]] = []

    def get(self, url: str, max_bytes: int, seconds: float) -> HttpResponse:
        self.requests.append(("GET", url))
        return self.answer


@pytest.mark.parametrize(
    "body", [f"User-agent: *\nSitemap: {INDEX}\n", f"User-agent: *\n  SITEMAP :  {INDEX}  \nDisallow:\n"]
)
def test_a_robots_txt_naming_the_index_gives_no_warning(body: str) -> None:
    http = Robots(200, body)
    assert robots_warning(Stack().pipeline, http) is None
    assert http.requests == [("GET", f"{BASE}/robots.txt")]


@pytest.mark.parametrize(
    ("status", "body", "warning"),
    [
        (
            200,
            "User-agent: *\nDisallow:\n",
            f"robots.txt does not name the sitemap index; add the line 'Sitemap: {INDEX}'",
        ),
        (200, f"Allow: {INDEX}\nSitemap: {BASE}/other.xml\n", "robots.txt does not name the sitemap index"),
        (404, f"Sitemap: {INDEX}", f"robots.txt answered HTTP 404; add 'Sitemap: {INDEX}' to it"),
        (201, f"Sitemap: {INDEX}", "robots.txt answered HTTP 201"),
    ],
)
def test_a_robots_txt_that_does_not_name_the_index_is_warned_about(status: int, body: str, warning: str) -> None:
    found = robots_warning(Stack().pipeline, Robots(status, body))
    assert found is not None and found.startswith(warning)


def test_the_sweep_queues_each_pending_change_and_checks_robots_only_when_asked() -> None:
    stack = Stack()
    for name in ("a", "b"):
        with crash(stack.pipeline.rebuild_queue, "send_batch"), pytest.raises(Crash):
            stack.send(page(name, version=1))
    http = Robots(404)
    assert sweep(stack.pipeline, http).requeued == 0  # their batches might still be running
    later = replace(stack.pipeline, clock=lambda: NOW + timedelta(seconds=OUTBOX_ABANDONED_S + 1))
    assert sweep(later, http).requeued == 2 and http.requests == []
    assert not stack.store.outbox
    stack.drain()
    stack.check()
    # nothing pending any more; the robots check runs only when enabled and given a client
    checking = replace_settings(stack, robots_check=True)
    assert sweep(checking).robots_warning is None
    done = sweep(checking, http)
    assert done.requeued == 0 and done.robots_warning is not None and len(http.requests) == 1


def _news(published: str) -> dict[str, str]:
    return {"publication_name": "T", "publication_language": "en", "publication_date": published, "title": "n"}


def test_upkeep_expires_news_once_it_is_past_two_days_old_and_not_before() -> None:
    # Given a file showing news published an hour before NOW, and a file without news
    stack = Stack(max_urls=1)
    stack.send(page("story", version=1, news=_news("2026-11-20T09:00:00Z")), page("plain", version=1))
    stack.drain()
    [until] = [f.news_until_us for f in stack.store.file_records.values() if f.news_until_us]
    assert until == to_micros(datetime(2026, 11, 22, 9, tzinfo=UTC))
    # When upkeep runs a microsecond before the news turns two days old: nothing to do
    at = [datetime(2026, 11, 22, 9, tzinfo=UTC) - timedelta(microseconds=1)]
    stack.pipeline = replace(stack.pipeline, clock=lambda: at[0])
    assert upkeep(stack.pipeline).news_expired == 0 and not stack.queues["rebuild"].messages
    # A microsecond after it turned two days old, one rebuild of that file, by its key range's start
    at[0] += timedelta(microseconds=2)
    assert upkeep(stack.pipeline).news_expired == 1
    [message] = stack.queues["rebuild"].messages
    [story] = [f for f in stack.store.file_records.values() if f.news_until_us]
    assert json.loads(message.body) == {"v": 1, "section": "blog", "key": f"{story.key_range.start:016x}"}
    assert message.group == "blog"
    stack.drain()
    # Then the file lists the page without its news
    text = gzip.decompress(stack.s3.objects[story.name].data).decode()
    assert f"{BASE}/blog/story" in text and "<news:news>" not in text


def test_upkeep_asks_one_cleanup_per_section_whose_unnamed_files_are_past_their_grace() -> None:
    # Given two sections that each shrank from two files to one, with an hour's grace
    stack = Stack(max_urls=1)
    stack.pipeline = replace_settings(stack, retired_file_grace_seconds=3600)
    for section in ("blog", "news"):
        stack.send(*[page(f"{section}-{i}", version=1, section=section) for i in range(2)])
    stack.drain()
    for section in ("blog", "news"):
        stack.send(page(f"{section}-0", type="delete", version=2, section=section))
    stack.drain()
    unnamed = [f for f in stack.store.file_records.values() if f.state == "unnamed"]
    assert {f.section for f in unnamed} == {"blog", "news"}
    # When upkeep runs within the grace: nothing; once it is over: one cleanup per section
    now = datetime.fromtimestamp(max(f.unnamed_us for f in unnamed) / 1e6, UTC) + timedelta(seconds=3600)
    stack.pipeline = replace(stack.pipeline, clock=lambda: now - timedelta(seconds=1))
    assert upkeep(stack.pipeline).cleanups == 0
    stack.pipeline = replace(stack.pipeline, clock=lambda: now)
    assert upkeep(stack.pipeline).cleanups == 2
    bodies = [json.loads(m.body) for m in stack.queues["rebuild"].messages]
    assert bodies == [{"v": 1, "section": "blog", "cleanup": True}, {"v": 1, "section": "news", "cleanup": True}]
    stack.drain()
    assert not any(f.state == "unnamed" for f in stack.store.file_records.values())
