"""Webhooks in the sequences the vendors really send (service/webhooks.py): Contentful deletes only an entry that
was unpublished first, Storyblok sends ``deleted`` after ``unpublished`` and ``moved`` for drafts too, Ghost sends a
post's html and plaintext twice. The queue, secrets and document store are in-memory stand-ins (the store keeps the
newest order, as the DynamoDB one does); the bodies and headers are the samples of events/webhooks/."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sitemap_updater.core.urls import Site
from sitemap_updater.core.webhooks_signatures import WebhookRequest
from sitemap_updater.local.webhooks import Sample
from sitemap_updater.service.webhooks import Reply, WebhookReceiver
from sitemap_updater.settings import WEBHOOK_MAX_BODY_BYTES, Settings
from sitemap_updater.wiring.webhooks import load_mapping
from tests.conftest import BASE

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "events" / "webhooks"
SECRET = "the-secret"


class Queue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        self.sent.append(body)

    def take(self) -> list[tuple[str, str]]:
        taken, self.sent = [(str(e["type"]), str(e["url"])) for e in self.sent], []
        return taken


class Secrets:
    def secrets(self, cms: str) -> tuple[str, ...]:
        return (SECRET,)

    def refresh(self) -> bool:
        return False


class Documents:
    """The URLs each document was published at, kept by the newest order (adapters/webhook_documents.py)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], tuple[list[str], str]] = {}

    def recall(self, cms: str, doc_id: str) -> list[str]:
        return list(self.items.get((cms, doc_id), ([], ""))[0])

    def remember(self, cms: str, doc_id: str, urls: list[str], order: str) -> bool:
        if (cms, doc_id) in self.items and self.items[cms, doc_id][1] > order:
            return False
        self.items[cms, doc_id] = (urls, order)
        return True


class Endpoint:
    def __init__(self, max_body_bytes: int | None = None) -> None:
        self.queue = Queue()
        self.documents = Documents()
        extra = {} if max_body_bytes is None else {"max_body_bytes": max_body_bytes}
        site = Site.parse(BASE, sections=None)
        mapping = load_mapping("webhook-mapping.json")
        self.receiver = WebhookReceiver(site, mapping, Secrets(), self.queue, documents=self.documents, **extra)

    def post(self, name: str, body: bytes | None = None, **headers: str) -> Reply:
        sample = Sample.load(SAMPLES / f"{name}.json")
        if body is not None:
            sample = Sample(sample.cms, sample.method, sample.path, sample.headers, body)
        now_ms = int(time.time() * 1000)
        signed = sample.signed(SECRET, now_ms) | headers
        return self.receiver.receive(WebhookRequest("POST", sample.path, signed, sample.body, now_ms))


CONTENTFUL_URLS = [f"{BASE}/blog/webhooks-in", f"{BASE}/de/blog/webhooks-rein"]


@pytest.mark.parametrize("before", [["unpublish"], ["unpublish", "archive"]], ids=["unpublished", "and archived"])
def test_contentfuls_delete_after_an_unpublish_is_a_2xx_no_op(before: list[str]) -> None:
    # Given an entry published, then unpublished (Contentful deletes or archives only an unpublished entry)
    endpoint = Endpoint()
    assert endpoint.post("contentful/publish").status == 202
    for name in before:
        assert endpoint.post(f"contentful/{name}").status == 202
    assert endpoint.queue.take()[2:4] == [("delete", url) for url in CONTENTFUL_URLS]
    # When Contentful sends the Entry.delete that follows
    reply = endpoint.post("contentful/delete")
    # Then it is answered 2xx (no failed delivery) with why nothing was done, and nothing is queued
    assert reply.status == 200, reply.body
    assert reply.body["ignored"].startswith("nothing to remove: no URL is remembered for contentful document")
    assert endpoint.queue.take() == []
    assert (reply.log["id"], reply.log["ignored"]) == ("3xAmpleEntry0001", reply.body["ignored"])  # logged


@pytest.mark.parametrize("name", ["contentful/delete", "contentful/unpublish", "storyblok/delete"])
def test_a_delete_of_a_document_never_published_here_is_a_2xx_no_op(name: str) -> None:
    # Storyblok deletes drafts too, and e-mails the space owner on any answer but a 2xx
    endpoint = Endpoint()
    reply = endpoint.post(name)
    assert (reply.status, endpoint.queue.take()) == (200, [])
    assert "no URL is remembered" in reply.body["ignored"]


def test_storyblok_unpublish_then_delete_withdraws_once_and_answers_both_2xx() -> None:
    endpoint = Endpoint()
    endpoint.post("storyblok/publish")
    endpoint.queue.take()
    assert endpoint.post("storyblok/unpublish").status == 202
    assert endpoint.queue.take() == [("delete", f"{BASE}/pricing")]
    reply = endpoint.post("storyblok/delete")
    assert (reply.status, endpoint.queue.take()) == (200, [])


def test_storyblok_moving_a_story_never_published_publishes_nothing() -> None:
    # Given a story that was never published (Storyblok sends moved for drafts too)
    endpoint = Endpoint()
    # When it is moved
    reply = endpoint.post("storyblok/moved")
    # Then its draft URL is not published, and Storyblok hears a 2xx
    assert (reply.status, endpoint.queue.take()) == (200, [])
    assert "not published" in reply.body["ignored"]
    assert endpoint.documents.recall("storyblok", "2000001") == []
    # And a story withdrawn before its move stays withdrawn
    endpoint.post("storyblok/publish")
    endpoint.post("storyblok/unpublish")
    endpoint.queue.take()
    assert (endpoint.post("storyblok/moved").status, endpoint.queue.take()) == (200, [])


def test_storyblok_moving_a_published_story_publishes_its_new_url_and_withdraws_the_old() -> None:
    endpoint = Endpoint()
    endpoint.post("storyblok/publish")
    endpoint.queue.take()
    assert endpoint.post("storyblok/moved").status == 202
    assert endpoint.queue.take() == [("upsert", f"{BASE}/plans/pricing"), ("delete", f"{BASE}/pricing")]


def test_a_contentful_publish_whose_topic_is_swapped_for_a_delete_is_refused() -> None:
    # Given a signed publish, replayed within the window with the topic of a delete
    endpoint = Endpoint()
    sample = Sample.load(SAMPLES / "contentful" / "publish.json")
    now_ms = int(time.time() * 1000)
    signed = sample.signed(SECRET, now_ms) | {"x-contentful-topic": "ContentManagement.Entry.delete"}
    reply = endpoint.receiver.receive(WebhookRequest("POST", "/contentful", signed, sample.body, now_ms))
    # Then the signature, which covers the topic, does not match: nothing is queued
    assert reply.status == 403 and endpoint.queue.sent == []


def _ghost_edit(size: int) -> bytes:
    """A Ghost post.published.edited body of ``size`` bytes: the post's html and plaintext in current and again in
    previous, as Ghost sends them (padded with spaces to the exact size)."""
    sample = json.loads(Sample.load(SAMPLES / "ghost" / "publish.json").body)
    paragraph = '<p>A long <a href="https://www.example.com/blog/x">post</a> with "quotes" &amp; more.</p>\n'
    count = size // (4 * len(paragraph))
    while True:
        html = paragraph * count
        post = sample["post"]["current"] | {"html": html, "plaintext": html.replace("<p>", "").replace("</p>", "")}
        sample["post"] = {"current": post, "previous": post | {"updated_at": "2026-11-20T09:00:00.000Z"}}
        body = json.dumps(sample).encode()
        if len(body) <= size:
            break
        count = count * 99 // 100
    assert len(body) > 0.95 * size  # the post itself, not padding
    return body[:-1] + b" " * (size - len(body)) + b"}"


def test_a_long_ghost_posts_edit_fits_the_default_limit() -> None:
    # Given an edit of a long Ghost post: 2 MB with its html and plaintext sent twice
    body = _ghost_edit(2_000_000)
    # When it arrives at an endpoint with the default limit (the stack's default, the settings' and the receiver's)
    reply = Endpoint().post("ghost/publish", body=body)
    # Then it is accepted, and the limit is the same everywhere
    assert reply.status == 202, reply.body
    template = yaml.load((ROOT / "template.yaml").read_text(encoding="utf-8"), Loader=_Loader)
    default = template["Parameters"]["WebhookMaxBodyBytes"]["Default"]
    settings = Settings(site_url=BASE, manifest_table="t", bucket_name="b", rebuild_queue_url="r",
                        index_queue_url="i", notify_queue_url="n", ingest_dlq_url="d")  # fmt: skip
    assert default == settings.webhook_max_body_bytes == WEBHOOK_MAX_BODY_BYTES == 4_194_304


@pytest.mark.parametrize(("size", "status"), [(WEBHOOK_MAX_BODY_BYTES, 202), (WEBHOOK_MAX_BODY_BYTES + 1, 413)])
def test_the_limit_is_inclusive(size: int, status: int) -> None:
    body = _ghost_edit(size)
    assert len(body) == size
    assert Endpoint().post("ghost/publish", body=body).status == status


class _Loader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !GetAtt, ...) read as plain values."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
