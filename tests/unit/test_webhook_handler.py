"""What the webhook handler reads from a Function URL event: the exact body bytes, whichever way Lambda
encodes them, lower-cased header names, and the path with its query (Contentful signs both)."""

from __future__ import annotations

import base64

from aws_lambda_powertools.utilities.data_classes import LambdaFunctionUrlEvent

from sitemap_updater.handlers.webhook import request_from_event

BODY = '{"title":"Grüße"}'


def url_event(body: str, encoded: bool, query: str = "") -> LambdaFunctionUrlEvent:
    return LambdaFunctionUrlEvent(
        {
            "version": "2.0",
            "rawPath": "/contentful",
            "rawQueryString": query,
            "headers": {"X-Contentful-Topic": "ContentManagement.Entry.publish"},
            "requestContext": {"http": {"method": "POST", "path": "/contentful"}, "timeEpoch": 1_700_000_000_123},
            "body": body,
            "isBase64Encoded": encoded,
        }
    )


def test_text_and_base64_bodies_give_the_same_bytes() -> None:
    plain = request_from_event(url_event(BODY, encoded=False))
    encoded = request_from_event(url_event(base64.b64encode(BODY.encode()).decode(), encoded=True))
    assert plain.body == encoded.body == BODY.encode("utf-8")


def test_headers_are_lower_cased_and_the_query_is_part_of_the_path() -> None:
    request = request_from_event(url_event(BODY, encoded=False, query="space=a"))
    assert request.headers == {"x-contentful-topic": "ContentManagement.Entry.publish"}
    assert request.path == "/contentful?space=a"
    assert (request.method, request.received_ms) == ("POST", 1_700_000_000_123)
