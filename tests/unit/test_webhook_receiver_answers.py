"""What the webhook receiver answers (service/webhooks.py), without HTTP or AWS: 202 with the queued events, 503
when the documents' store cannot be read (the CMS retries), a refused signature with its reason in the answer and
the log, and 404 for a path that names no CMS. The queue, secrets and document store are in-memory stand-ins."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sitemap_updater.core.urls import Site
from sitemap_updater.core.webhooks_signatures import WebhookRequest
from sitemap_updater.local.webhooks import Sample
from sitemap_updater.service.webhooks import WebhookReceiver
from sitemap_updater.wiring.webhooks import load_mapping
from tests.conftest import BASE

SAMPLE = Path(__file__).resolve().parents[2] / "events" / "webhooks" / "generic" / "publish.json"


class Queue:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        self.sent.append(body)


class Secrets:
    def secrets(self, cms: str) -> tuple[str, ...]:
        return ("the-secret",)

    def refresh(self) -> bool:
        return False


class BrokenDocuments:
    def recall(self, cms: str, doc_id: str) -> list[str]:
        raise ConnectionError("table unreachable")

    def remember(self, cms: str, doc_id: str, urls: list[str], order: str) -> bool:
        raise ConnectionError("table unreachable")


def _receiver(queue: Queue, documents: Any = None) -> WebhookReceiver:
    return WebhookReceiver(
        Site.parse(BASE, sections=None), load_mapping("webhook-mapping.json"), Secrets(), queue, documents=documents
    )


def _request(path: str = "/generic", secret: str = "the-secret") -> WebhookRequest:
    sample = Sample.load(SAMPLE)  # the CMS's own headers and body, as the integration tests send it
    now_ms = int(time.time() * 1000)
    return WebhookRequest("POST", path, sample.signed(secret, now_ms), sample.body, now_ms)


def test_a_signed_publish_is_queued_and_answered_202() -> None:
    queue = Queue()
    reply = _receiver(queue).receive(_request())
    assert reply.status == 202 and reply.body["accepted"] == len(queue.sent) >= 1


def test_a_document_store_that_cannot_be_read_is_a_503_and_nothing_is_queued() -> None:
    queue = Queue()
    reply = _receiver(queue, BrokenDocuments()).receive(_request())
    assert (reply.status, reply.body) == (503, {"error": "the webhook could not be processed now; retry"})
    assert "table unreachable" in reply.log["reason"] and queue.sent == []


def test_a_refused_signature_gives_its_reason_to_the_cms_and_the_log() -> None:
    reply = _receiver(Queue()).receive(_request(secret="another"))
    assert reply.status == 403
    assert reply.body == {"error": "x-sitemap-signature does not match"} == {"error": reply.log["reason"]}


def test_a_path_that_names_no_cms_is_404() -> None:
    assert _receiver(Queue()).receive(_request(path="/Xgeneric")).status == 404
    assert _receiver(Queue()).receive(_request(path="/Generic/")).status == 202
