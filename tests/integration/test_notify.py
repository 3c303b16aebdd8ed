"""Notifications against a real HTTP receiver: exact IndexNow bodies, nothing for non-changes, retries."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.adapters.search_console import SearchConsole
from sitemap_updater.core.messages import DirtyMark, index_change_record
from sitemap_updater.core.sharding import page_key
from sitemap_updater.local.runner import LocalRun
from sitemap_updater.local.stack import session
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.notify import Notifiers, notify, search_console_hint
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event
from tests.integration.conftest import FIXED_NOW, bodies

KEY = "local-indexnow-key-0001"


@pytest.fixture
def receiver(httpserver: HTTPServer) -> Iterator[tuple[HTTPServer, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    def accept(request: Request) -> Response:
        received.append({"body": json.loads(request.data), "content_type": request.headers["Content-Type"]})
        return Response(status=202)

    httpserver.expect_request("/indexnow", method="POST").respond_with_handler(accept)
    yield httpserver, received


@pytest.fixture
def run(
    moto_endpoint: str, receiver: tuple[HTTPServer, list[dict[str, Any]]], request: pytest.FixtureRequest
) -> Iterator[LocalRun]:
    server, _ = receiver
    name = f"n{abs(hash(request.node.nodeid)) % 10**8}"
    with LocalRun(
        BASE,
        None,
        moto_endpoint,
        clock=lambda: FIXED_NOW,
        name=name,
        indexnow_endpoint=server.url_for("/indexnow"),
        parameters={"IndexNowWindowSeconds": "0"},  # every change is sent; the window has its own test
    ) as local:
        yield local


def expected(urls: list[str]) -> dict[str, Any]:
    return {"host": "www.example.com", "key": KEY, "keyLocation": f"{BASE}/{KEY}.txt", "urlList": urls}


def test_new_updated_and_deleted_pages_are_sent_exactly(
    run: LocalRun, receiver: tuple[HTTPServer, list[dict[str, Any]]]
) -> None:
    _, received = receiver
    a, b = f"{BASE}/blog/a", f"{BASE}/blog/b"
    run.send_wave(bodies([event(a, version=1), event(b, version=1)]))
    run.send_wave(bodies([event(a, version=2, lastmod="2026-11-21")]))
    run.send_wave(bodies([event(b, type="delete", version=2, occurred_at="2026-11-21T00:00:00Z")]))
    assert received == [
        {"body": expected([a, b]), "content_type": "application/json; charset=utf-8"},
        {"body": expected([a]), "content_type": "application/json; charset=utf-8"},
        {"body": expected([b]), "content_type": "application/json; charset=utf-8"},
    ]
    assert run.published(everything=True)[f"{KEY}.txt"] == KEY.encode()


def wake_up(run: LocalRun) -> list[list[str]]:
    """What the scheduled wake-up does on AWS (an EventBridge event into the notifier's FIFO group), then the
    URL lists the notifier reported."""
    scheduled = {"id": str(uuid.uuid4()), "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    sqs.send_message(
        QueueUrl=run.stack.queue_url("NotifyQueue"), MessageBody=json.dumps(scheduled), MessageGroupId="notify"
    )
    return [n["urls"] for n in run.send_wave([]).as_dict()["notifications"]]


def window_scenario(run: LocalRun, now: list[Any]) -> list[list[list[str]]]:
    """Two pages announced; then, inside IndexNow's 300 s window, one changes twice, one is deleted and a new one
    is added; then wake-ups before, at and after the window's end, and the same content again. Returns the URL
    lists each step reported."""
    a, b, c = f"{BASE}/blog/a", f"{BASE}/blog/b", f"{BASE}/blog/c"
    start = now[0]
    steps: list[list[list[str]]] = []

    def wave(at_s: int, events: list[dict[str, Any]]) -> None:
        now[0] = start + timedelta(seconds=at_s)
        steps.append([n["urls"] for n in run.send_wave(bodies(events)).as_dict()["notifications"]])

    def wake(at_s: int) -> None:
        now[0] = start + timedelta(seconds=at_s)
        steps.append(wake_up(run))

    wave(0, [event(a, version=1), event(b, version=1)])
    wave(10, [event(a, version=2, lastmod="2026-11-21")])
    wave(20, [event(a, version=3, lastmod="2026-11-22"), event(b, type="delete", version=2), event(c, version=1)])
    wake(100)
    wake(301)
    wake(360)
    wave(400, [event(a, version=4, lastmod="2026-11-22")])  # a newer version with the content already announced
    return steps


WINDOW_STEPS = [
    [[f"{BASE}/blog/a", f"{BASE}/blog/b"]],
    [],  # a changed inside its window: held, not dropped
    [[f"{BASE}/blog/c"]],  # c is new; a's second change replaces its first, b's removal waits too
    [],  # the window has not ended
    [[f"{BASE}/blog/a", f"{BASE}/blog/b"]],  # sent once the window ends
    [],
    [],  # never twice for the same content
]


def test_a_change_inside_the_quiet_window_is_sent_once_it_ends_and_only_once(
    httpserver: HTTPServer, moto_endpoint: str
) -> None:
    httpserver.expect_request("/indexnow", method="POST").respond_with_data("", status=202)
    now = [FIXED_NOW]
    endpoint = httpserver.url_for("/indexnow")
    with LocalRun(BASE, None, moto_endpoint, clock=lambda: now[0], name="window", indexnow_endpoint=endpoint) as run:
        steps = window_scenario(run, now)
        assert run.pipeline.store.held("indexnow", 10**10) == {}
    assert steps == WINDOW_STEPS
    posted = [json.loads(request.data)["urlList"] for request, _ in httpserver.log]
    assert posted == [urls for step in WINDOW_STEPS for urls in step]


def test_a_dry_run_reports_the_same_lists_as_a_real_run(moto_endpoint: str) -> None:
    now = [FIXED_NOW]
    with LocalRun(BASE, None, moto_endpoint, clock=lambda: now[0], name="window-dry") as run:
        assert run.settings.notify_dry_run
        assert window_scenario(run, now) == WINDOW_STEPS  # the real run's lists, asserted above


# Every step of a notifier run that holds, sends and releases; "before mark_sent" is "after request".
CRASHES = [("held", "before"), ("hold", "before"), ("hold", "after"), ("request", "before"), ("request", "after"),
           ("mark_sent", "after"), ("release", "before"), ("release", "after")]  # fmt: skip


@pytest.mark.parametrize(("step", "when"), CRASHES)
def test_a_notifier_crash_at_any_step_loses_no_held_change_and_repeats_at_most_the_unrecorded_request(
    httpserver: HTTPServer, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, step: str, when: str
) -> None:
    httpserver.expect_request("/indexnow", method="POST").respond_with_data("", status=200)
    now = [FIXED_NOW]
    url = f"{BASE}/blog/a"
    endpoint = httpserver.url_for("/indexnow")
    name = f"crash-{step}-{when}".replace("_", "-")
    with LocalRun(BASE, None, moto_endpoint, clock=lambda: now[0], name=name, indexnow_endpoint=endpoint) as run:
        run.send_wave(bodies([event(url, version=1)]))
        crashed: list[str] = []

        def crash_once(call: Callable[..., Any]) -> Callable[..., Any]:
            def wrapped(*args: Any, **kwargs: Any) -> Any:
                if when == "before" and not crashed:
                    crashed.append(step)
                    raise ConnectionError(f"died before {step}")
                result = call(*args, **kwargs)
                if when == "after" and not crashed:
                    crashed.append(step)
                    raise ConnectionError(f"died after {step}")
                return result

            return wrapped

        if step == "request":
            monkeypatch.setattr(HttpClient, "request", crash_once(HttpClient.request))
        else:
            object.__setattr__(run.pipeline.store, step, crash_once(getattr(run.pipeline.store, step)))
        now[0] = FIXED_NOW + timedelta(seconds=10)
        run.send_wave(bodies([event(url, version=2, lastmod="2026-11-21")]))  # held: inside the window
        now[0] = FIXED_NOW + timedelta(seconds=301)
        wake_up(run)
        wake_up(run)
        assert crashed == [step]
        assert run.pipeline.store.held("indexnow", 10**10) == {}
        sqs = session().client("sqs", endpoint_url=run.endpoint_url)
        dead_letters = run.stack.queue_url("NotifyDeadLetterQueue")
        dead = sqs.get_queue_attributes(QueueUrl=dead_letters, AttributeNames=["ApproximateNumberOfMessages"])
        assert dead["Attributes"]["ApproximateNumberOfMessages"] == "0"
    posted = [json.loads(request.data)["urlList"] for request, _ in httpserver.log]
    # The first content once; the second once, or twice when the crash fell between IndexNow's answer and its record
    assert posted == [[url]] + [[url]] * (2 if (step, when) == ("request", "after") else 1)


def test_duplicates_and_identical_republishes_send_nothing(
    run: LocalRun, receiver: tuple[HTTPServer, list[dict[str, Any]]]
) -> None:
    _, received = receiver
    wave = bodies([event(f"{BASE}/blog/p{i}", version=1) for i in range(5)])
    run.send_wave(wave)
    assert len(received) == 1
    run.send_wave(wave)  # the same wave again
    run.send_wave(bodies([event(f"{BASE}/blog/p{i}", version=2) for i in range(5)]))  # same content, newer version
    assert len(received) == 1


def test_indexnow_url_lists_equal_the_changed_urls_of_each_wave(
    run: LocalRun, receiver: tuple[HTTPServer, list[dict[str, Any]]]
) -> None:
    waves = [
        [event(f"{BASE}/{s}/p{i}", version=1) for s in ("blog", "docs") for i in range(6)],
        [event(f"{BASE}/blog/p{i}", version=2, lastmod="2026-11-21") for i in range(3)]
        + [event(f"{BASE}/docs/p0", type="delete", version=2, occurred_at="2026-11-21T00:00:00Z")],
    ]
    for wave in waves:
        report = run.send_wave(bodies(wave)).as_dict()
        sent = sorted(url for n in report["notifications"] for url in n["urls"])
        assert sent == report["changed_urls"] and sent


def test_a_page_added_and_deleted_before_any_file_showed_it_sends_nothing(
    run: LocalRun, receiver: tuple[HTTPServer, list[dict[str, Any]]]
) -> None:
    _, received = receiver
    shown, ghost, never = f"{BASE}/blog/shown", f"{BASE}/blog/ghost", f"{BASE}/blog/never"
    run.send_wave(bodies([event(shown, version=1)]))
    assert [r["body"]["urlList"] for r in received] == [[shown]]
    # When one batch publishes and deletes a new page, and a page never published is deleted
    gone = event(ghost, type="delete", version=2, occurred_at="2026-11-21T00:00:00Z")
    report = run.send_wave(bodies([event(ghost, version=1), gone])).as_dict()
    assert [name for name in report["s3"]["put"] if name.endswith(".xml.gz")] == []  # (the index: a lastmod moved)
    again = run.send_wave(bodies([event(never, version=1, type="delete", occurred_at="2026-11-21T00:00:00Z")]))
    # Then no sitemap file's bytes changed and nothing is announced, by IndexNow or in a change record
    assert [name for name in again.as_dict()["s3"]["put"] if name.endswith(".xml.gz")] == []
    assert report["changed_urls"] == again.as_dict()["changed_urls"] == []
    assert [r["body"]["urlList"] for r in received] == [[shown]]


def test_a_page_shown_by_a_rebuild_that_died_before_its_change_record_is_announced_once_it_goes(
    run: LocalRun, receiver: tuple[HTTPServer, list[dict[str, Any]]]
) -> None:
    _, received = receiver
    a, p = f"{BASE}/blog/a", f"{BASE}/blog/p"
    run.send_wave(bodies([event(a, version=1)]))
    # Given a rebuild that put the file showing a new page and died before sending its change record
    pipeline = run.pipeline
    ingest(json.dumps(event(p, version=1)), pipeline)  # its mark waits in the rebuild queue
    notify_queue = pipeline.notify_queue

    def die(*_: Any) -> None:
        raise RuntimeError("the function timed out")

    object.__setattr__(pipeline, "notify_queue", type("Dead", (), {"send": staticmethod(die)})())
    section = "root"  # this stack names no sections
    with pytest.raises(RuntimeError):
        rebuild_section(pipeline, section, [DirtyMark(section, url=p, key=page_key(p), change="added")])
    object.__setattr__(pipeline, "notify_queue", notify_queue)
    [record] = pipeline.store.files(section)
    assert record.unsettled and record.pending is not None  # its intent, in DynamoDB
    # When the page is deleted before the rebuild runs again
    run.send_wave(bodies([event(p, type="delete", version=2, occurred_at="2026-11-21T00:00:00Z")]))
    # Then the removal is announced (a crawler may have read the page), once, and the record is settled again
    assert [r["body"]["urlList"] for r in received] == [[a], [p]]
    [record] = pipeline.store.files(section)
    assert not record.unsettled and record.pending is None and record.shown == ()


def test_429_is_retried_after_retry_after_and_422_is_not(httpserver: HTTPServer, moto_endpoint: str) -> None:
    calls: list[int] = []

    def busy_then_ok(request: Request) -> Response:
        calls.append(1)
        if len(calls) == 1:
            return Response(status=429, headers={"Retry-After": "0"})
        return Response(status=200)

    httpserver.expect_request("/retry", method="POST").respond_with_handler(busy_then_ok)
    httpserver.expect_request("/refuse", method="POST").respond_with_data("key not valid for this host", status=422)
    with LocalRun(
        BASE, None, moto_endpoint, clock=lambda: FIXED_NOW, name="retry", indexnow_endpoint=httpserver.url_for("/retry")
    ) as local:
        report = local.send_wave(bodies([event(f"{BASE}/blog/a")])).as_dict()
        assert len(calls) == 2
        assert report["notifications"][0]["status"] == 200
    with LocalRun(
        BASE,
        None,
        moto_endpoint,
        clock=lambda: FIXED_NOW,
        name="refuse",
        indexnow_endpoint=httpserver.url_for("/refuse"),
    ) as local:
        report = local.send_wave(bodies([event(f"{BASE}/blog/a")])).as_dict()
        refused = [line for line in local.logs if "notification refused" in line]
        assert report["notifications"][0]["status"] == 422
        assert len(refused) == 1 and "key not valid for this host" in refused[0]
        assert any('"NotificationsRejected"' in line for line in local.logs)
    assert len([r for r, _ in httpserver.log if r.path == "/refuse"]) == 1  # not retried


def test_without_an_endpoint_a_local_run_sends_nothing_and_records_it(moto_endpoint: str) -> None:
    with LocalRun(BASE, None, moto_endpoint, clock=lambda: FIXED_NOW, name="dry") as local:
        report = local.send_wave(bodies([event(f"{BASE}/blog/a")])).as_dict()
    assert report["notifications"] == [
        {"endpoint": "https://api.indexnow.org/indexnow", "status": None, "urls": [f"{BASE}/blog/a"]}
    ]


def test_search_console_gets_the_index_once_per_interval_and_403_explains(
    httpserver: HTTPServer, moto_endpoint: str
) -> None:
    puts: list[str] = []

    def record(request: Request) -> Response:
        puts.append(unquote(request.path))
        assert request.headers["Authorization"] == "Bearer test-token"
        return Response(status=204)

    # the property and feed are percent-encoded in the path; the receiver sees them decoded
    path = "/wm/sites/https://www.example.com//sitemaps/https://www.example.com/sitemap.xml"
    httpserver.expect_request(path, method="PUT").respond_with_handler(record)
    with LocalRun(BASE, None, moto_endpoint, clock=lambda: FIXED_NOW, name="gsc") as local:
        http = HttpClient()
        notifiers = Notifiers(http, SearchConsole(http, lambda: "test-token", httpserver.url_for("/wm")))
        settings = local.pipeline.settings.model_copy(update={"notify_dry_run": False, "indexnow_key": ""})
        object.__setattr__(local.pipeline, "settings", settings)
        first = notify([index_change_record(1, "s1", ["sitemap.xml"]).body], local.pipeline, notifiers)
        again = notify([index_change_record(2, "s2", ["sitemap.xml"]).body], local.pipeline, notifiers)
    assert [n.status for n in first.sent] == [204] and again.sent == []
    assert puts == [path]
    assert "not an owner" in search_console_hint(403) and "sc-domain:" in search_console_hint(403)


def test_a_held_change_overtaken_by_a_newer_announcement_is_not_sent_again(
    httpserver: HTTPServer, moto_endpoint: str
) -> None:
    httpserver.expect_request("/indexnow", method="POST").respond_with_data("", status=202)
    now = [FIXED_NOW]
    url = f"{BASE}/blog/a"
    endpoint = httpserver.url_for("/indexnow")
    with LocalRun(BASE, None, moto_endpoint, clock=lambda: now[0], name="overtaken", indexnow_endpoint=endpoint) as run:
        run.send_wave(bodies([event(url, version=1)]))
        now[0] = FIXED_NOW + timedelta(seconds=10)
        run.send_wave(bodies([event(url, version=2, lastmod="2026-11-21")]))
        store = run.pipeline.store
        (held,) = store.held("indexnow", 0).values()
        now[0] = FIXED_NOW + timedelta(seconds=301)
        run.send_wave(bodies([event(url, version=3, lastmod="2026-11-22")]))  # the newest content, sent now
        # Given the held older change left behind (a run that died after its send was recorded, before releasing)
        store.hold({url: held}, "indexnow", 10**10)
        for later in (360, 700):
            now[0] = FIXED_NOW + timedelta(seconds=later)
            assert wake_up(run) == []
        assert store.held("indexnow", 0) == {}
    assert [json.loads(request.data)["urlList"] for request, _ in httpserver.log] == [[url], [url]]
