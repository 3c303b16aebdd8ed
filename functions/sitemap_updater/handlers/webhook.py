"""Lambda (Function URL): signed CMS webhooks in, page events onto the ingest queue. ``POST /<cms>``."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import LambdaFunctionUrlEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.core.webhooks_signatures import WebhookRequest
from sitemap_updater.wiring.webhooks import current_receiver

logger = Logger()
metrics = Metrics()


def request_from_event(event: LambdaFunctionUrlEvent) -> WebhookRequest:
    """The request as received: exact body bytes, lower-cased header names, the path with its query."""
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8")
    query = event.raw_query_string
    context = event.request_context
    received_ms = int(context.get("timeEpoch") or time.time() * 1000)
    return WebhookRequest(
        method=context.http.method,
        path=event.raw_path + (f"?{query}" if query else ""),
        headers={k.lower(): v for k, v in (event.headers or {}).items()},
        body=body,
        received_ms=received_ms,
    )


LOGGED_TEXT_CHARS = 300  # a logged reason or id: a refusal may quote a header, and the sender chooses its length


@logger.inject_lambda_context
@event_source(data_class=LambdaFunctionUrlEvent)
def handler(event: LambdaFunctionUrlEvent, context: LambdaContext) -> dict[str, Any]:
    request = request_from_event(event)
    reply = current_receiver().receive(request)
    outcome = "Accepted" if reply.status < 300 else "Failed" if reply.status >= 500 else "Refused"
    metrics.add_metric(name=f"Webhooks{outcome}", unit=MetricUnit.Count, value=1)
    if reply.status == 202:
        metrics.add_metric(name="WebhookEventsQueued", unit=MetricUnit.Count, value=int(reply.body["accepted"]))
    # One line a request, of bounded size: the line saying what happened also carries the request's metrics
    # (CloudWatch reads the embedded metric format's "_aws" block in any JSON log line), where log_metrics would
    # print them on a second line; so a flood of refused requests writes one line each. The body is never logged
    # (it may hold drafts): its size and digest identify it.
    try:
        emf = metrics.serialize_metric_set()
    finally:
        metrics.clear_metrics()
    details = {k: _bounded(v) for k, v in {"reason": reply.body.get("error"), **reply.log}.items() if v is not None}
    details |= {"status": reply.status, "sha256": hashlib.sha256(request.body).hexdigest()[:16], **emf}
    if reply.status >= 500:
        logger.error("webhook not queued", extra=details)
    elif reply.status >= 400:
        logger.warning("webhook refused", extra=details)
    else:
        logger.info("webhook accepted", extra=details)
    return {
        "statusCode": reply.status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(reply.body),
    }


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LOGGED_TEXT_CHARS:
        return f"{value[:LOGGED_TEXT_CHARS]}... ({len(value):,} characters)"
    return value
