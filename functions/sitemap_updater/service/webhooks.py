"""Receive one CMS webhook: check its size and signature, map it to page events, put them on the ingest queue.

The answer is 2xx only once every event is on the queue, so a CMS retries whatever did not get there. A
redelivery is harmless by construction: an event is a pure function of the signed payload (its ``occurred_at``
and ``version`` are the CMS's own updated-at and revision), so the same webhook gives the same events, which the
ingest recognises by their equal rank as duplicates: one SQS message and one read each, nothing written, no
rebuild, no notification (docs/architecture.md, "Ingest"). The queue is a standard one and does not deduplicate;
nor does this function: the ingest already does, at the cost above. The exception is a payload with no time of
its own (Storyblok's): its events carry the arrival, so a resend (Storyblok does not retry) moves the lastmod, and a
captured publish replayed after an unpublish puts the page back (README, "Storyblok signs no time").

Nothing to change is a 200 with the reason, never an error the CMS would count as a failed delivery: a delete of a
document with no URL left (Contentful deletes only an unpublished entry) and a move of one not published.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.event_rules import FUTURE_SKEW_SECONDS, Horizon
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.urls import Site
from sitemap_updater.core.webhooks_mapping import Unmapped, WebhookMapping, document_order, map_document, withdrawn
from sitemap_updater.core.webhooks_payloads import Document, Ignored, PayloadError, read_document
from sitemap_updater.core.webhooks_signatures import CMSES, Cms, SignatureRejected, WebhookRequest, verify
from sitemap_updater.ports import DocumentStore, EventQueue, SecretStore, SecretsUnavailable
from sitemap_updater.settings import WEBHOOK_MAX_BODY_BYTES


@dataclass(frozen=True)
class Reply:
    """The HTTP answer, and what to log about it (never the body)."""

    status: int
    body: dict[str, Any]
    log: dict[str, Any] = field(default_factory=dict)


@dataclass
class WebhookReceiver:
    """The endpoint's use case, one instance per process."""

    site: Site
    mapping: WebhookMapping
    secrets: SecretStore
    queue: EventQueue
    max_body_bytes: int = WEBHOOK_MAX_BODY_BYTES
    window_s: int = 300
    clock_skew_s: int = FUTURE_SKEW_SECONDS  # how far past the arrival a payload's updated-at may be
    documents: DocumentStore | None = None  # the URLs each document had: deletes without a slug, renamed slugs

    def receive(self, request: WebhookRequest) -> Reply:
        name = request.path.split("?")[0].strip("/").lower()
        size = len(request.body)
        log: dict[str, Any] = {"cms": name[:40], "bytes": size}
        if name not in CMSES:
            return Reply(404, {"error": f"no webhook at this path; use one of /{', /'.join(CMSES)}"}, log)
        if request.method.upper() != "POST":
            return Reply(405, {"error": "webhooks are POST requests"}, log)
        cms: Cms = name
        if size > self.max_body_bytes:
            return Reply(413, {"error": f"{size:,} bytes; at most {self.max_body_bytes:,}"}, log)
        try:
            self._check_signature(cms, request)
        except SecretsUnavailable as exc:
            return Reply(503, {"error": "the webhook secret cannot be read now; retry"}, {**log, "reason": str(exc)})
        except SignatureRejected as exc:
            return Reply(exc.status, {"error": exc.reason}, {**log, "reason": exc.reason})
        return self._accept(cms, request, log)

    def _check_signature(self, cms: Cms, request: WebhookRequest) -> None:
        try:
            verify(cms, request, self.secrets.secrets(cms), self.window_s)
        except SignatureRejected as exc:
            # A mismatch may be a rotation the cache has not seen yet: read the secret again (rate-limited).
            if exc.status != 403 or "does not match" not in exc.reason or not self.secrets.refresh():
                raise
            verify(cms, request, self.secrets.secrets(cms), self.window_s)

    def _accept(self, cms: Cms, request: WebhookRequest, log: dict[str, Any]) -> Reply:
        try:
            data = json.loads(request.body)
            document = read_document(cms, request.headers, data)
            if isinstance(document, Ignored):
                return Reply(200, {"ignored": document.reason}, {**log, "ignored": document.reason})
            received_at = datetime.fromtimestamp(request.received_ms / 1000, UTC).isoformat().replace("+00:00", "Z")
            found = self._events(cms, document, received_at)
            if isinstance(found, Ignored):  # nothing published to change: a 2xx, or the CMS counts a failure
                return Reply(200, {"ignored": found.reason}, {**log, "id": document.id, "ignored": found.reason})
            events, warnings = found
            horizon = Horizon(request.received_ms * 1000, self.clock_skew_s)
            for event in events:  # the ingest's own validation, so that the CMS hears of a bad event
                parse_event(json.dumps(event), self._site_of(str(event["url"])), horizon)
        except (ValueError, RecursionError) as exc:  # JSON, PayloadError, Unmapped, EventRejected
            reason = _reason(exc)
            return Reply(400, {"error": reason}, {**log, "reason": reason})
        except (TypeError, AttributeError, KeyError, IndexError) as exc:  # a shape no reader expected: no retry helps
            reason = f"the payload has an unexpected shape ({type(exc).__name__}: {exc})"
            return Reply(400, {"error": reason}, {**log, "reason": reason})
        except Exception as exc:  # the document store could not be read: the CMS must retry
            return Reply(503, {"error": "the webhook could not be processed now; retry"}, {**log, "reason": repr(exc)})
        urls = [str(e["url"]) for e in events]
        log = {**log, "id": document.id, "action": document.action, "urls": urls, "warnings": list(warnings)}
        try:
            self._send(events)
            if self.documents is not None:
                live = [u for e, u in zip(events, urls, strict=True) if e["type"] == "upsert"]
                self.documents.remember(cms, self._doc_id(document), live, document_order(document, received_at))
        except Exception as exc:  # any failure to enqueue: the CMS must retry
            return Reply(503, {"error": "the events could not be queued; retry"}, {**log, "reason": repr(exc)})
        return Reply(202, {"accepted": len(urls), "urls": urls, "warnings": list(warnings)}, log)

    def _events(
        self, cms: Cms, document: Document, received_at: str
    ) -> tuple[list[dict[str, Any]], list[str]] | Ignored:
        """The document's events, plus deletes for the URLs it had and no longer has (remembered ones); Ignored
        when there is nothing published to change: a delete of a document with no URL left (Contentful deletes
        only what was unpublished first, Storyblok deletes drafts too), or a move of one never published."""
        doc_id = self._doc_id(document)
        if document.needs_published and (self.documents is None or not self.documents.recall(cms, doc_id)):
            return Ignored(f"{cms} document {document.id} is not published (no URL is remembered): a draft's move")
        try:
            mapped = map_document(document, self.mapping, self.site.base_url, received_at)
        except Unmapped as exc:
            if self.documents is None or document.action != "delete":
                raise
            known = self.documents.recall(cms, doc_id)
            if not known:
                return Ignored(
                    f"nothing to remove: no URL is remembered for {cms} document {document.id} (withdrawn already, "
                    f"or never published through this endpoint; {exc})"
                )
            return list(withdrawn(document, known, self.mapping, received_at)), []
        events = list(mapped.events)
        if self.documents is not None:
            now = {str(e["url"]) for e in events}
            gone = [u for u in self.documents.recall(cms, doc_id) if u not in now]
            events += withdrawn(document, gone, self.mapping, received_at)
        return events, list(mapped.warnings)

    def _doc_id(self, document: Document) -> str:
        """The id the document's URLs are remembered by: with sites chosen by a value of the body (a space, a
        dataset), that value and the id, as two spaces may hold documents of the same id (a copied dataset)."""
        sites = self.mapping.sites
        scope = sites.value(None, {}, document.payload) if sites is not None and sites.scopes_documents else None
        return document.id if scope is None else f"{scope}/{document.id}"

    def _site_of(self, url: str) -> Site:
        """The site an event's URL is checked against: the stack's own, or the origin the mapping chose."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin == self.site.base_url or self.mapping.sites is None:
            return self.site
        return Site.parse(origin, self.site.session_params)

    def _send(self, events: Sequence[dict[str, Any]]) -> None:
        for event in events:
            self.queue.send(event)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg.removesuffix(' at')} at character {exc.pos}"
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    if isinstance(exc, RecursionError):
        return "JSON is nested too deeply"
    if isinstance(exc, EventRejected):
        return f"the mapped event is not valid: {exc}"
    if isinstance(exc, PayloadError | Unmapped):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
