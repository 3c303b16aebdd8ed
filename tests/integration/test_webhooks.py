"""Signed CMS webhooks over real HTTP on 127.0.0.1, through the real handler, onto a real (moto) ingest queue.

For every CMS: a valid webhook is queued as page events the ingest accepts; a wrong secret, a tampered body, a
replay outside the window and a missing signature header are refused with nothing queued; an unmapped payload
is a 400 with its reason. Then the HTTP contract: 413, 5xx when the queue fails, rotation without a redeploy,
redeliveries that give identical events, and one publish through the whole pipeline into a sitemap.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.adapters.secrets import CachedSecrets, secret_reader
from sitemap_updater.adapters.webhook_documents import DocumentUrls
from sitemap_updater.core.event_rules import Horizon
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.urls import Site
from sitemap_updater.core.webhooks_signatures import CMSES
from sitemap_updater.handlers.webhook import handler
from sitemap_updater.handlers.webhook import logger as handler_logger
from sitemap_updater.local.webhooks import Sample, deliver, send, serve
from sitemap_updater.service.webhooks import WebhookReceiver
from sitemap_updater.settings import WEBHOOK_MAX_BODY_BYTES
from sitemap_updater.wiring.webhooks import load_mapping, use_receiver
from tests.conftest import BASE
from tests.integration.conftest import LocalRunFactory

SAMPLES = Path(__file__).resolve().parents[2] / "events" / "webhooks"
SECRETS: dict[str, str] = {cms: f"{cms}-secret-{'x' * 40}"[:64] for cms in CMSES}
PUBLISH: dict[str, Path] = {cms: SAMPLES / cms / "publish.json" for cms in CMSES}
TIMESTAMPED = ("contentful", "sanity", "ghost", "generic")  # schemes with a signed time


@dataclass
class Endpoint:
    url: str
    sqs: Any
    queue_url: str
    secrets_client: Any
    secret_id: str
    documents: DocumentUrls

    def post(self, sample: Sample, headers: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, Any]:
        sent = sample.signed(SECRETS[sample.cms]) if headers is None else headers
        return send(self.url, sample.path, sent, sample.body if body is None else body)

    def queued(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            messages = got.get("Messages", [])
            if not messages:
                return found
            for message in messages:
                found.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


def _clients(endpoint: str) -> tuple[Any, Any, Any]:
    session = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    services = ("sqs", "secretsmanager", "dynamodb")
    sqs, secrets, dynamodb = (session.client(s, endpoint_url=endpoint) for s in services)  # type: ignore[call-overload]
    return sqs, secrets, dynamodb


@pytest.fixture
def endpoint(moto_endpoint: str) -> Iterator[Endpoint]:
    sqs, secrets, dynamodb = _clients(moto_endpoint)
    name = f"webhooks-{uuid.uuid4().hex[:12]}"
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    secret_id = secrets.create_secret(Name=name, SecretString=json.dumps(SECRETS))["ARN"]
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    documents = DocumentUrls(dynamodb, name)
    receiver = WebhookReceiver(
        site=Site.parse(BASE, sections=None),
        mapping=load_mapping("webhook-mapping.json"),
        secrets=CachedSecrets(secret_reader(secrets, secret_id), ttl_s=300, min_refresh_s=0),
        queue=MessageQueue(sqs, queue_url),
        documents=documents,
    )
    use_receiver(receiver)
    try:
        with serve(handler) as url:
            yield Endpoint(url, sqs, queue_url, secrets, secret_id, documents)
    finally:
        use_receiver(None)


def _resigned(sample: Sample, **changes: Any) -> Sample:
    data = json.loads(sample.body)
    for path, value in changes.items():
        target = data
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[key]
        if value is None:
            target.pop(keys[-1], None)
        else:
            target[keys[-1]] = value
    return replace(sample, body=json.dumps(data, separators=(",", ":")).encode())


# --- every CMS: valid, wrong secret, tampered, replayed, missing header, unmapped ---------------------------


@pytest.mark.parametrize("cms", CMSES)
def test_a_valid_publish_is_queued_as_events_the_ingest_accepts(endpoint: Endpoint, cms: str) -> None:
    status, answer = endpoint.post(Sample.load(PUBLISH[cms]))
    assert status == 202, answer
    events = endpoint.queued()
    assert [e["url"] for e in events] == answer["urls"] and events
    for event in events:
        assert event["type"] == "upsert"
        parse_event(json.dumps(event), Site.parse(BASE, sections=None), Horizon.at(datetime.now(UTC)))  # the ingest's


EXPECTED_URLS: dict[str, list[str]] = {
    "contentful": [f"{BASE}/blog/webhooks-in", f"{BASE}/de/blog/webhooks-rein"],
    "sanity": [f"{BASE}/news/launch-notes"],
    "storyblok": [f"{BASE}/pricing"],
    "ghost": [f"{BASE}/blog/ghost-published"],
    "strapi": [f"{BASE}/news/strapi-goes-live"],
    "generic": [f"{BASE}/blog/from-any-cms"],
}


@pytest.mark.parametrize("cms", CMSES)
def test_the_mapping_places_each_sample_at_its_url(endpoint: Endpoint, cms: str) -> None:
    status, answer = endpoint.post(Sample.load(PUBLISH[cms]))
    assert status == 202
    assert answer["urls"] == EXPECTED_URLS[cms]


@pytest.mark.parametrize("cms", CMSES)
def test_a_wrong_secret_is_refused_and_nothing_is_queued(endpoint: Endpoint, cms: str) -> None:
    sample = Sample.load(PUBLISH[cms])
    status, answer = endpoint.post(sample, headers=sample.signed("not-the-secret-" + "y" * 49))
    assert status == 403, answer
    assert endpoint.queued() == []


@pytest.mark.parametrize("cms", CMSES)
def test_a_tampered_body_is_refused(endpoint: Endpoint, cms: str) -> None:
    sample = Sample.load(PUBLISH[cms])
    headers = sample.signed(SECRETS[cms])
    tampered = sample.body.replace(b'"2026-11-20', b'"2026-11-19', 1)
    if cms == "storyblok":
        tampered = sample.body.replace(b'"pricing"', b'"pricing-v2"')
    assert tampered != sample.body
    status, answer = endpoint.post(sample, headers=headers, body=tampered)
    if cms == "strapi":  # a shared token signs nothing: Strapi's scheme cannot see a changed body
        assert status == 202
        endpoint.queued()
        return
    assert status == 403, answer
    assert endpoint.queued() == []


@pytest.mark.parametrize("cms", TIMESTAMPED)
def test_a_replay_outside_the_window_is_refused(endpoint: Endpoint, cms: str) -> None:
    sample = Sample.load(PUBLISH[cms])
    ten_minutes_ago = int(time.time() * 1000) - 600_000
    status, answer = endpoint.post(sample, headers=sample.signed(SECRETS[cms], at_ms=ten_minutes_ago))
    assert status == 403, answer
    assert "a replay" in answer["error"]
    assert endpoint.queued() == []


@pytest.mark.parametrize("cms", CMSES)
def test_a_replay_inside_the_window_queues_identical_events(endpoint: Endpoint, cms: str) -> None:
    """Storyblok and Strapi sign no time: any replay gets through, and like a CMS's own redelivery it gives
    the same events, which the ingest treats as duplicates (equal rank); Storyblok's payload has no time of its
    own either, so its events carry the arrival and a replay is taken as a republish (Storyblok itself does not
    redeliver)."""
    sample = Sample.load(PUBLISH[cms])
    headers = sample.signed(SECRETS[cms])
    first = endpoint.post(sample, headers=headers)
    once = endpoint.queued()
    time.sleep(0.002)  # a later arrival: the events must still not depend on when they came
    second = endpoint.post(sample, headers=headers)
    again = endpoint.queued()
    assert first[0] == second[0] == 202
    if cms == "storyblok":  # no time in the payload: occurred_at and lastmod are the arrival, the rest is identical
        once = [{k: v for k, v in e.items() if k not in ("occurred_at", "lastmod")} for e in once]
        again = [{k: v for k, v in e.items() if k not in ("occurred_at", "lastmod")} for e in again]
    assert once == again and once


@pytest.mark.parametrize("cms", CMSES)
def test_a_missing_signature_header_is_401(endpoint: Endpoint, cms: str) -> None:
    sample = Sample.load(PUBLISH[cms])
    status, answer = endpoint.post(sample, headers=dict(sample.headers))
    assert status == 401, answer
    assert endpoint.queued() == []


UNMAPPED: dict[str, dict[str, Any]] = {
    "contentful": {"sys__contentType__sys__id": "recipe"},
    "sanity": {"_type": "recipe"},
    "storyblok": {"full_slug": None},
    "ghost": {"post__current__slug": None},
    "strapi": {"model": "recipe"},
    "generic": {"type": "recipe"},
}


@pytest.mark.parametrize("cms", CMSES)
def test_an_unmapped_payload_is_400_with_its_reason(endpoint: Endpoint, cms: str) -> None:
    sample = _resigned(Sample.load(PUBLISH[cms]), **UNMAPPED[cms])
    status, answer = endpoint.post(sample)
    assert status == 400, answer
    assert "recipe" in answer["error"] or "slug (en-US): missing" in answer["error"]
    assert endpoint.queued() == []


# --- deletes, drafts, locales --------------------------------------------------------------------------------

DELETES = [("sanity", "delete"), ("ghost", "unpublish"), ("ghost", "delete"), ("strapi", "unpublish")]
DELETES += [("strapi", "delete"), ("generic", "delete"), ("generic", "unpublish")]


@pytest.mark.parametrize(("cms", "name"), DELETES)
def test_unpublish_and_delete_become_delete_events(endpoint: Endpoint, cms: str, name: str) -> None:
    status, answer = endpoint.post(Sample.load(SAMPLES / cms / f"{name}.json"))
    assert status == 202, answer
    assert [e["type"] for e in endpoint.queued()] == ["delete"]


@pytest.mark.parametrize(
    ("cms", "name"),
    [("contentful", "unpublish"), ("contentful", "delete"), ("storyblok", "unpublish"), ("storyblok", "delete")],
)
def test_a_delete_without_a_slug_deletes_the_urls_the_document_was_published_at(
    endpoint: Endpoint, cms: str, name: str
) -> None:
    """Contentful's DeletedEntry and Storyblok's unpublished and deleted carry no slug: the URLs are the ones
    remembered."""
    unpublish = Sample.load(SAMPLES / cms / f"{name}.json")
    status, answer = endpoint.post(unpublish)
    assert status == 200  # never published through this endpoint: nothing to remove, nothing guessed, a 2xx
    assert "no URL is remembered" in answer["ignored"]
    assert endpoint.queued() == []
    assert endpoint.post(Sample.load(PUBLISH[cms]))[0] == 202
    endpoint.queued()
    status, answer = endpoint.post(unpublish)
    assert status == 202, answer
    events = endpoint.queued()
    assert [(e["type"], e["url"]) for e in events] == [("delete", url) for url in EXPECTED_URLS[cms]]
    if cms == "contentful":  # ordered after the publish (revision 4) by the DeletedEntry's revision
        assert {e["version"] for e in events} == {5}


def test_a_renamed_slug_deletes_the_old_url(endpoint: Endpoint) -> None:
    first = Sample.load(PUBLISH["generic"])
    assert endpoint.post(first)[0] == 202
    renamed = _resigned(first, fields__slug="renamed", revision=4)
    assert endpoint.post(renamed)[0] == 202
    events = endpoint.queued()[1:]
    assert [(e["type"], e["url"], e["version"]) for e in events] == [
        ("upsert", f"{BASE}/blog/renamed", 4),
        ("delete", f"{BASE}/blog/from-any-cms", 4),
    ]


def test_a_storyblok_story_moved_to_another_folder_leaves_its_old_url(endpoint: Endpoint) -> None:
    assert endpoint.post(Sample.load(PUBLISH["storyblok"]))[0] == 202
    assert endpoint.post(Sample.load(SAMPLES / "storyblok" / "moved.json"))[0] == 202
    moved = endpoint.queued()[1:]
    assert [(e["type"], e["url"]) for e in moved] == [
        ("upsert", f"{BASE}/plans/pricing"),
        ("delete", f"{BASE}/pricing"),
    ]
    assert moved[1]["occurred_at"] == moved[0]["occurred_at"]  # Storyblok sends no time: the arrival orders both


def test_a_late_older_webhook_does_not_overwrite_the_remembered_urls(endpoint: Endpoint) -> None:
    first = Sample.load(PUBLISH["generic"])
    endpoint.post(_resigned(first, fields__slug="newer", revision=9))
    endpoint.post(first)  # revision 3, arriving late: its events are stale for the ingest, its URLs not kept
    assert endpoint.documents.recall("generic", "wp-1042") == [f"{BASE}/blog/newer"]


IGNORED = [("contentful", "save-draft"), ("sanity", "draft"), ("storyblok", "asset"), ("strapi", "draft")]


@pytest.mark.parametrize("file", sorted(SAMPLES.glob("*/*.json")), ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_every_sample_after_its_cms_publish_is_answered_as_its_name_says(endpoint: Endpoint, file: Path) -> None:
    """Each sample in events/webhooks/ (new ones included): a draft or an asset is ignored, a publish or a move
    queues upserts (a move also deletes the old URL), an unpublish, archive or delete queues deletes of the URLs the
    publish made (Ghost's delete sample is of another page)."""
    cms = file.parent.name
    assert endpoint.post(Sample.load(PUBLISH[cms]))[0] == 202
    endpoint.queued()
    status, answer = endpoint.post(Sample.load(file))
    events = endpoint.queued()
    if (cms, file.stem) in IGNORED:
        assert (status, events) == (200, []) and answer["ignored"]
        return
    assert status == 202, answer
    assert [e["url"] for e in events] == answer["urls"]
    if file.stem == "publish":
        assert {e["type"] for e in events} == {"upsert"}
    elif file.stem == "moved":
        assert [e["type"] for e in events] == ["upsert", "delete"]
    else:
        assert {e["type"] for e in events} == {"delete"}
        if file != SAMPLES / "ghost" / "delete.json":
            assert sorted(answer["urls"]) == sorted(EXPECTED_URLS[cms])


@pytest.mark.parametrize(("cms", "name"), IGNORED)
def test_drafts_and_assets_are_acknowledged_and_ignored(endpoint: Endpoint, cms: str, name: str) -> None:
    status, answer = endpoint.post(Sample.load(SAMPLES / cms / f"{name}.json"))
    assert status == 200 and answer["ignored"]
    assert endpoint.queued() == []


def test_contentful_locales_become_hreflang_alternates(endpoint: Endpoint) -> None:
    endpoint.post(Sample.load(PUBLISH["contentful"]))
    events = endpoint.queued()
    expected = [
        {"hreflang": "en", "href": f"{BASE}/blog/webhooks-in"},
        {"hreflang": "de", "href": f"{BASE}/de/blog/webhooks-rein"},
    ]
    assert [e["alternates"] for e in events] == [expected, expected]
    assert {e["version"] for e in events} == {4}  # sys.revision: ordering survives out-of-order delivery
    assert {e["lastmod"] for e in events} == {"2026-11-20T09:15:00.000Z"}


# --- the HTTP contract -----------------------------------------------------------------------------------------


def test_a_body_above_the_limit_is_413(endpoint: Endpoint) -> None:
    sample = Sample.load(PUBLISH["generic"])
    big = replace(sample, body=b'{"pad":"' + b"x" * WEBHOOK_MAX_BODY_BYTES + b'"}')
    status, _ = endpoint.post(big)
    assert status == 413
    assert endpoint.queued() == []


def test_malformed_json_is_400(endpoint: Endpoint) -> None:
    sample = replace(Sample.load(PUBLISH["generic"]), body=b'{"action": "publish",')
    status, answer = endpoint.post(sample)
    assert status == 400 and "not valid JSON" in answer["error"]


def test_a_payload_of_an_unexpected_shape_is_400_not_retried_forever(endpoint: Endpoint) -> None:
    sample = _resigned(Sample.load(PUBLISH["ghost"]), post__current=["not", "an", "object"])
    status, answer = endpoint.post(sample)
    assert status == 400 and "must be objects" in answer["error"]
    sample = _resigned(Sample.load(PUBLISH["generic"]), fields__slug={"nested": True})
    status, answer = endpoint.post(sample)
    assert status == 400 and "slug" in answer["error"]


def test_an_unknown_path_is_404_and_a_get_is_405(endpoint: Endpoint) -> None:
    sample = Sample.load(PUBLISH["generic"])
    assert send(endpoint.url, "/wordpress", sample.signed(SECRETS["generic"]), sample.body)[0] == 404
    assert send(endpoint.url, "/generic", {}, b"", method="GET")[0] == 405


@contextlib.contextmanager
def handler_output() -> Iterator[io.StringIO]:
    """Everything the handler writes while inside, as Lambda records it: its logger's lines and its metrics."""
    out = io.StringIO()
    streams = [h for h in logging.getLogger(handler_logger.service).handlers if isinstance(h, logging.StreamHandler)]
    previous = [h.stream for h in streams]
    for stream_handler in streams:
        stream_handler.setStream(out)
    try:
        with contextlib.redirect_stdout(out):
            yield out
    finally:
        for stream_handler, stream in zip(streams, previous, strict=True):
            stream_handler.setStream(stream)


@pytest.mark.parametrize(("case", "status"), [("accepted", 202), ("unmapped", 400), ("unsigned", 401), ("forged", 403)])
def test_a_request_body_is_never_logged(endpoint: Endpoint, case: str, status: int) -> None:
    """A draft's text in a body (accepted or refused) must not reach the logs: only the body's size and digest."""
    marker = f"DRAFT-TEXT-{uuid.uuid4().hex}"
    sample = _resigned(Sample.load(PUBLISH["generic"]), fields__draft_notes=f"confidential: {marker}")
    if case == "unmapped":
        sample = _resigned(sample, type="recipe")
    headers = {
        "accepted": None,
        "unmapped": None,
        "unsigned": dict(sample.headers),
        "forged": sample.signed("not-the-secret-" + "y" * 49),
    }[case]
    with handler_output() as out:
        assert endpoint.post(sample, headers=headers)[0] == status
    logged = out.getvalue()
    assert marker.encode() in sample.body
    message = "webhook accepted" if status == 202 else "webhook refused"
    assert f'"message":"{message}"' in logged
    assert f'"bytes":{len(sample.body)}' in logged  # the body is identified by its size (and digest) instead
    assert marker not in logged


def test_a_failed_send_is_5xx_so_the_cms_retries(endpoint: Endpoint) -> None:
    endpoint.sqs.delete_queue(QueueUrl=endpoint.queue_url)
    status, answer = endpoint.post(Sample.load(PUBLISH["ghost"]))
    assert status == 503 and "retry" in answer["error"]


def test_a_rotated_secret_is_used_without_a_redeploy(endpoint: Endpoint) -> None:
    sample = Sample.load(PUBLISH["sanity"])
    assert endpoint.post(sample)[0] == 202
    rotated = {**SECRETS, "sanity": ["sanity-new-secret-" + "z" * 46]}
    endpoint.secrets_client.put_secret_value(SecretId=endpoint.secret_id, SecretString=json.dumps(rotated))
    status, _ = endpoint.post(sample, headers=sample.signed(rotated["sanity"][0]))
    assert status == 202  # a mismatch reads the secret again before refusing
    assert endpoint.post(sample)[0] == 403  # and the old secret no longer works


def test_a_local_run_turns_sample_webhooks_into_sitemap_changes(local_run: LocalRunFactory) -> None:
    """What ``sitemap-updater local`` does with webhook files: signed, over HTTP, under the function's policy."""
    run = local_run()
    files = [PUBLISH["ghost"], PUBLISH["contentful"], SAMPLES / "sanity" / "draft.json"]
    answers = deliver(run, files)
    assert [a["status"] for a in answers] == [202, 202, 200]
    wave = run.send_wave([])
    assert sorted(wave.changed_urls) == sorted([*EXPECTED_URLS["ghost"], *EXPECTED_URLS["contentful"]])
    assert [d for p in run.stack.policies.values() for d in p.denied] == []
    text = b"".join(gzip.decompress(data) for name, data in run.published().items() if name.endswith(".gz"))
    assert b"https://images.example-cdn.com/ghost-published.jpg" in text
    assert b'hreflang="de" href="https://www.example.com/de/blog/webhooks-rein"' in text
