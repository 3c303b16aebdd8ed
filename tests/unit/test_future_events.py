"""An event may name no moment past now plus the clock skew (core/event_rules.py ``Horizon``): a future occurred_at
would outrank every real change to its page (a delete made today stale, the page pinned) and a future lastmod would
be published. Both sides of the limit, on the model path and the build's fast path alike, and in every place events
come in: ``build`` (its --as-of), the pipeline's ingest, ``import``, a bootstrap's export objects and webhooks."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.event_rules import Horizon
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.spill import spill_state
from sitemap_updater.core.urls import Site
from sitemap_updater.core.webhooks_signatures import WebhookRequest
from sitemap_updater.local.webhooks import Sample
from sitemap_updater.service.bootstrap import export_prefix, load_chunk
from sitemap_updater.service.build import build
from sitemap_updater.service.bulk_import import import_events
from sitemap_updater.service.ingest import Outcome
from sitemap_updater.service.webhooks import WebhookReceiver
from sitemap_updater.settings import Settings
from sitemap_updater.wiring.webhooks import load_mapping
from tests.conftest import AS_OF_US, BASE, HORIZON, event
from tests.sim.fakes import S3Object
from tests.unit.test_recovery import Stack, page

SITE = Site.parse(BASE, sections=None)
NOW = "2026-11-21T12:00:00Z"  # AS_OF_US: the tests' now
LIMIT = "2026-11-21T12:05:00Z"  # now plus the default skew of 300 s
PAST_LIMIT = "2026-11-21T12:05:00.000001Z"
FAR = "9999-12-31T00:00:00Z"
SAMPLES = Path(__file__).resolve().parents[2] / "events" / "webhooks"


def _rejected(body: dict[str, Any], horizon: Horizon = HORIZON) -> EventRejected:
    with pytest.raises(EventRejected) as caught:
        parse_event(json.dumps(body), SITE, horizon)
    return caught.value


def test_the_default_skew_is_300_seconds() -> None:
    assert HORIZON.limit_us - AS_OF_US == 300_000_000
    assert Settings(site_url=BASE, manifest_table="t", bucket_name="b", rebuild_queue_url="r", index_queue_url="i",
                    notify_queue_url="n", ingest_dlq_url="d").event_clock_skew_seconds == 300  # fmt: skip
    env = {"SITE_URL": BASE, "MANIFEST_TABLE": "t", "BUCKET_NAME": "b", "REBUILD_QUEUE_URL": "r",
           "INDEX_QUEUE_URL": "i", "NOTIFY_QUEUE_URL": "n", "INGEST_DLQ_URL": "d",
           "EVENT_CLOCK_SKEW_SECONDS": "60"}  # fmt: skip
    assert Settings.from_env(env).event_clock_skew_seconds == 60


@pytest.mark.parametrize("moment", [NOW, LIMIT, "2026-11-21T17:35:00+05:30"])
def test_an_occurred_at_up_to_the_skew_past_now_is_accepted(moment: str) -> None:
    parsed = parse_event(json.dumps(event(occurred_at=moment)), SITE, HORIZON)
    assert parsed.event.occurred_at.isoformat().startswith(moment[:16])


@pytest.mark.parametrize("moment", [PAST_LIMIT, "2026-11-21T17:35:01+05:30", "2026-12-31T00:00:00Z", FAR])
def test_an_occurred_at_past_the_skew_is_rejected_naming_the_field_now_and_the_skew(moment: str) -> None:
    problem = _rejected(event(occurred_at=moment)).problems[0]
    assert problem.field == "occurred_at"
    assert problem.reason.endswith("is in the future: at most 300 s past now (2026-11-21T12:00:00Z) is accepted")


def test_a_lastmod_past_the_skew_is_rejected_naming_the_field() -> None:
    assert parse_event(json.dumps(event(lastmod=LIMIT)), SITE, HORIZON).event.lastmod is not None
    problem = _rejected(event(lastmod=PAST_LIMIT)).problems[0]
    assert (problem.field, problem.reason.split(" is ")[0]) == ("lastmod", "2026-11-21T12:05:00.000001+00:00")


def test_a_date_is_accepted_once_it_has_begun_somewhere() -> None:
    # At 12:00 UTC on the 21st, the 22nd has begun at UTC+14 (since 10:00 UTC), the 23rd nowhere
    assert parse_event(json.dumps(event(lastmod="2026-11-22")), SITE, HORIZON).event.lastmod is not None
    problem = _rejected(event(lastmod="2026-11-23")).problems[0]
    assert problem.field == "lastmod" and "has not begun anywhere" in problem.reason
    # and at 09:55 UTC (plus the skew, 10:00) the 22nd has just begun there
    early = Horizon(AS_OF_US - 2 * 3600 * 1_000_000 - 300_000_000)
    assert parse_event(json.dumps(event(lastmod="2026-11-22", occurred_at="2026-11-20T00:00:00Z")), SITE, early)
    assert _rejected(event(lastmod="2026-11-22", occurred_at="2026-11-20T00:00:00Z"), Horizon(early.now_us - 1))


def test_a_state_of_unknown_time_keeps_a_future_lastmod_as_adoption_writes_it() -> None:
    # occurred_at the epoch ranks below every other event, so it can pin nothing: its lastmod is kept as given
    body = event(occurred_at="1970-01-01T00:00:00Z", lastmod="2026-12-21T12:00:00Z")
    assert parse_event(json.dumps(body), SITE, HORIZON).event.lastmod is not None
    assert _rejected(event(occurred_at="1970-01-01T00:00:01Z", lastmod="2026-12-21T12:00:00Z")).problems[0].field == (
        "lastmod"
    )


@pytest.mark.parametrize(
    ("fields", "taken"),
    [
        ({"occurred_at": LIMIT}, True),
        ({"occurred_at": PAST_LIMIT}, False),
        ({"lastmod": LIMIT}, True),
        ({"lastmod": PAST_LIMIT}, False),
        ({"lastmod": "2026-11-22"}, True),
        ({"lastmod": "2026-11-23"}, False),
        ({"occurred_at": "1970-01-01T00:00:00Z", "lastmod": FAR}, False),  # the model path keeps it
        ({"type": "delete", "occurred_at": PAST_LIMIT}, False),
    ],
)
def test_the_fast_path_takes_an_event_only_on_the_near_side_of_the_limit(fields: dict[str, Any], taken: bool) -> None:
    raw = json.dumps(event(**fields)).encode()
    fast = LineParser(SITE, HORIZON).record(raw)
    assert (fast is not None) is taken
    try:
        model = spill_state(state_from_event(parse_event(raw, SITE, HORIZON).event))
    except EventRejected:
        assert fields.get("occurred_at") != "1970-01-01T00:00:00Z"
        return
    assert fast is None or fast == model


def test_build_rejects_a_future_event_so_todays_delete_removes_the_page(tmp_path: Path) -> None:
    # Given an export where a page was published with a far-future date, then really deleted today
    pinned, lastmod = f"{BASE}/blog/pinned", f"{BASE}/blog/ahead"
    bodies = [
        event(pinned, occurred_at=FAR),
        event(pinned, type="delete", occurred_at=NOW),
        event(lastmod, lastmod="2099-01-01T00:00:00Z"),
        *[event(f"{BASE}/blog/p{i}") for i in range(8)],
    ]
    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
    # When it is built as of the tests' now
    result = build(source, tmp_path / "out", SITE, Limits(), AS_OF_US, workers=1)
    # Then both future lines are rejected, naming the field, and neither page is published
    assert [(r.line, r.reason.split(":")[0]) for r in result.rejections] == [(1, "occurred_at"), (3, "lastmod")]
    text = b"".join(gzip.decompress(p.read_bytes()) for p in (tmp_path / "out").glob("*.gz"))
    assert pinned.encode() not in text and lastmod.encode() not in text and b"9999" not in text
    assert result.urls == 8


def test_the_pipeline_rejects_a_future_event_so_todays_delete_removes_the_page() -> None:
    stack = Stack()
    # Given a published page
    stack.send(page("a", occurred_at="2026-11-20T10:00:00Z"))
    stack.drain()
    assert f"{BASE}/blog/a" in stack.shown()
    # When an event dated 9999 arrives for it, then it is rejected naming occurred_at (the ingest dead-letters it)
    with pytest.raises(EventRejected, match=r"^occurred_at: 9999-12-31T00:00:00"):
        stack.send(page("a", occurred_at=FAR))
    stack.sent.pop()
    # And the CMS's delete, made now, removes the page
    [result] = stack.send(page("a", type="delete", occurred_at=NOW))
    assert result.outcome is Outcome.ACCEPTED
    stack.drain()
    assert f"{BASE}/blog/a" not in stack.shown()
    stack.check()


def test_import_rejects_a_future_event_by_its_line() -> None:
    stack = Stack()
    good = page("a")
    stack.sent.append(good)
    result = import_events([json.dumps(good), json.dumps(page("b", lastmod=FAR))], stack.pipeline)
    assert result.pages == 1
    assert [(n, why.split(":")[0]) for n, why in result.rejections] == [(2, "lastmod")]


def test_a_bootstrap_chunk_dead_letters_a_future_line() -> None:
    stack = Stack()
    key = export_prefix("run1") + "part-0.jsonl"
    lines = [page(f"p{i}") for i in range(9)] + [page("future", occurred_at=FAR)]
    stack.s3.objects[key] = S3Object("\n".join(json.dumps(b) for b in lines).encode(), '"e"', 0)
    result = load_chunk(stack.pipeline, "run1", key, threads=1)
    assert (result.accepted, result.rejected) == (9, 1)
    [dead] = stack.queues["dlq"].messages
    assert json.loads(dead.body)["url"] == f"{BASE}/blog/future"
    assert dead.attributes["reason"].startswith("line 10: occurred_at: 9999-12-31T00:00:00")


class _Queue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        self.sent.append(body)


class _Secrets:
    def secrets(self, cms: str) -> tuple[str, ...]:
        return ("the-secret",)

    def refresh(self) -> bool:
        return False


@pytest.mark.parametrize(("ahead_s", "status"), [(0, 202), (300, 202), (301, 400), (10**9, 400)])
def test_a_signed_webhook_dated_past_the_skew_is_refused_naming_the_field(ahead_s: int, status: int) -> None:
    # Given a correctly signed webhook whose updated_at is ``ahead_s`` past its arrival
    now_ms = int(time.time()) * 1000
    sample = Sample.load(SAMPLES / "generic" / "publish.json")
    body = json.loads(sample.body)
    body["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_ms // 1000 + ahead_s))
    sample = Sample(sample.cms, sample.method, sample.path, sample.headers, json.dumps(body).encode())
    queue = _Queue()
    receiver = WebhookReceiver(SITE, load_mapping("webhook-mapping.json"), _Secrets(), queue)
    # When it arrives
    reply = receiver.receive(
        WebhookRequest("POST", "/generic", sample.signed("the-secret", now_ms), sample.body, now_ms)
    )
    # Then up to the skew it is queued; past it, it is refused with the field named, and nothing is queued
    assert reply.status == status
    if status == 400:
        assert reply.body["error"].startswith("the mapped event is not valid: occurred_at: ")
        assert "is in the future" in reply.body["error"] and queue.sent == []
