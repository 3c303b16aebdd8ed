"""Each CMS's signature scheme against known answers computed independently (``openssl dgst -hmac``), so the
checks are held to the documented schemes rather than to our own signer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sitemap_updater.core.webhooks_signatures import Cms, SignatureRejected, WebhookRequest, sign, verify
from sitemap_updater.local.webhooks import Sample

SAMPLES = Path(__file__).resolve().parents[2] / "events" / "webhooks"
PUBLISH = SAMPLES / "contentful" / "publish.json"

BODY = b'{"a":1}'
SECRET = "s3cret"
T_MS = 1_700_000_000_000
TOPIC = "ContentManagement.Entry.publish"
# printf '%s' "<signed bytes>" | openssl dgst -sha256 -hmac s3cret   (sha1 for Storyblok; base64url for Sanity)
KNOWN: dict[Cms, dict[str, str]] = {
    # Contentful (its node-apps-toolkit's canonical request): the list always names itself and the timestamp
    "contentful": {
        "x-contentful-signature": "1c928e6d2dbdd02d14da10ca9def23c99c1e07be8adc288127887ddf9e244808",
        "x-contentful-signed-headers": "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic",
        "x-contentful-timestamp": str(T_MS),
        "x-contentful-topic": TOPIC,
    },
    "sanity": {"sanity-webhook-signature": f"t={T_MS},v1=im-ZI3jQ1HtvzfHMjXLka6XHibLJ06U4vjH-B9WYum0"},
    "ghost": {
        "x-ghost-signature": f"sha256=e53e455a57f7b3542c60e09ff417c33e3bb82b1d9938da981214d3ce9376c48a, t={T_MS}"
    },
    "storyblok": {"webhook-signature": "79999786a1bff10cd4d7dd0b0752574af76be0b5"},
    "strapi": {"authorization": "Bearer s3cret"},
    "generic": {
        "x-sitemap-signature": "t=1700000000,v1=1698a50bc74d1ff1db85c4e0a5297c2ad9fdba245d5737cdb789e4cc6e098940"
    },
}


def request(cms: Cms, headers: dict[str, str] | None = None, body: bytes = BODY, at_ms: int = T_MS) -> WebhookRequest:
    return WebhookRequest("POST", f"/{cms}", KNOWN[cms] if headers is None else headers, body, at_ms)


def rejected(cms: Cms, req: WebhookRequest, secrets: tuple[str, ...] = (SECRET,), window_s: int = 300) -> int:
    with pytest.raises(SignatureRejected) as caught:
        verify(cms, req, secrets, window_s)
    return caught.value.status


@pytest.mark.parametrize("cms", list(KNOWN))
def test_the_documented_signature_is_accepted(cms: Cms) -> None:
    verify(cms, request(cms), [SECRET])


@pytest.mark.parametrize("cms", [c for c in KNOWN if c != "strapi"])
def test_one_changed_body_byte_is_403(cms: Cms) -> None:
    assert rejected(cms, request(cms, body=b'{"a":2}')) == 403


@pytest.mark.parametrize("cms", list(KNOWN))
def test_another_secret_is_403_and_any_of_several_secrets_is_accepted(cms: Cms) -> None:
    assert rejected(cms, request(cms), ("other",)) == 403
    verify(cms, request(cms), ["old-secret", SECRET])  # both valid during a rotation


@pytest.mark.parametrize("cms", list(KNOWN))
def test_no_configured_secret_refuses_everything(cms: Cms) -> None:
    assert rejected(cms, request(cms), ("",)) == 403


@pytest.mark.parametrize("cms", ["contentful", "sanity", "ghost", "generic"])
def test_the_window_is_inclusive_and_applies_both_ways(cms: Cms) -> None:
    verify(cms, request(cms, at_ms=T_MS + 300_000), [SECRET], 300)
    verify(cms, request(cms, at_ms=T_MS - 300_000), [SECRET], 300)  # a sender's clock a little ahead
    assert rejected(cms, request(cms, at_ms=T_MS + 301_000)) == 403
    assert rejected(cms, request(cms, at_ms=T_MS - 301_000)) == 403


@pytest.mark.parametrize("cms", list(KNOWN))
def test_garbled_signature_headers_are_401(cms: Cms) -> None:
    headers = {k: "zz" + v for k, v in KNOWN[cms].items() if "signed-headers" not in k and "topic" not in k}
    if cms == "contentful":
        headers = {**KNOWN[cms], "x-contentful-signature": "not-hex"}
    if cms == "strapi":
        headers = {"authorization": "Basic czNjcmV0"}
    assert rejected(cms, request(cms, headers)) == 401


def test_contentful_needs_the_topic_among_the_signed_headers_and_a_timestamp() -> None:
    unsigned_topic = {**KNOWN["contentful"], "x-contentful-signed-headers": "x-contentful-timestamp"}
    assert rejected("contentful", request("contentful", unsigned_topic)) == 401
    missing = {k: v for k, v in KNOWN["contentful"].items() if k != "x-contentful-topic"}
    assert rejected("contentful", request("contentful", missing)) == 401
    no_time = {k: v for k, v in KNOWN["contentful"].items() if k != "x-contentful-timestamp"}
    assert rejected("contentful", request("contentful", no_time)) == 401


def test_contentful_signs_the_method_and_path() -> None:
    req = request("contentful")
    with pytest.raises(SignatureRejected):
        verify("contentful", WebhookRequest("POST", "/other", req.headers, req.body, req.received_ms), [SECRET])


# Contentful's own signer: @contentful/node-apps-toolkit 3.16.1 ``signRequest(SECRET_64, {method, path, headers, body},
# 1795262400000)`` over the sample events/webhooks/contentful/publish.json (its headers and compact body), run once
# with Node; ``verifyRequest`` of that toolkit also accepts what ``sign`` below makes of the same requests.
SECRET_64 = "sitemap-updater-contentful-test-secret-0123456789abcdefABCDEF_-+"
OWN_NAMES = ("x-contentful-signed-headers", "x-contentful-timestamp")
TOOLKIT_MS = 1_795_262_400_000
TOOLKIT = {  # what was given to signRequest as path and headers -> the headers it returned
    "every header": (
        "/contentful",
        None,  # the sample's own headers
        "b485dd9ad40e026dc3c25a7680a01082a9d18bbccd998c5ef2ce179f23aadc7b",
        "content-type,x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic,x-contentful-webhook-name",
    ),
    "a query, untrimmed values": (
        "/contentful?a=b c&d=1",
        {"x-contentful-topic": f" {TOPIC} ", "x-contentful-webhook-name": " My Hook "},
        "7cfe3a52233f36daed84ad0f626754d25438ebdb5e91e8171131b8f054a5c775",
        "x-contentful-signed-headers,x-contentful-timestamp,x-contentful-topic,x-contentful-webhook-name",
    ),
    "the topic left out": (
        "/contentful",
        {"content-type": "application/vnd.contentful.management.v1+json"},
        "adccd2bdaae8871583265b7c7a7c84cad4cfeda6a79bf67de6411f5eaf0d3e2d",
        "content-type,x-contentful-signed-headers,x-contentful-timestamp",
    ),
}


def _toolkit_request(name: str, topic: str | None = None) -> WebhookRequest:
    sample = Sample.load(PUBLISH)
    path, given, signature, listed = TOOLKIT[name]
    headers = dict(sample.headers if given is None else given)
    headers |= {"x-contentful-signature": signature, "x-contentful-signed-headers": listed}
    headers |= {"x-contentful-timestamp": str(TOOLKIT_MS), "x-contentful-topic": topic or headers["x-contentful-topic"]}
    return WebhookRequest("POST", path, headers, sample.body, TOOLKIT_MS)


@pytest.mark.parametrize("name", ["every header", "a query, untrimmed values"])
def test_a_request_signed_by_contentfuls_toolkit_is_accepted_and_signed_alike(name: str) -> None:
    request = _toolkit_request(name)
    verify("contentful", request, [SECRET_64])
    # read as the toolkit's verifyRequest reads them (both checked with it): the timestamp as a number, and a list
    # in any order that leaves out its own two names, which are signed all the same
    headers = dict(request.headers)
    verify("contentful", replace(request, headers=headers | {"x-contentful-timestamp": f"0{TOOLKIT_MS}"}), [SECRET_64])
    others = [h for h in headers["x-contentful-signed-headers"].split(",") if h not in OWN_NAMES]
    reordered = headers | {"x-contentful-signed-headers": ",".join(reversed(others))}
    verify("contentful", replace(request, headers=reordered), [SECRET_64])
    path, given, signature, listed = TOOLKIT[name]
    unsigned = {k: v for k, v in request.headers.items() if k in (given or Sample.load(PUBLISH).headers)}
    ours = sign("contentful", WebhookRequest("POST", path, unsigned, request.body), SECRET_64, TOOLKIT_MS)
    assert (ours["x-contentful-signature"], ours["x-contentful-signed-headers"]) == (signature, listed)


def test_a_contentful_signature_that_leaves_out_the_topic_is_refused_whatever_the_topic_says() -> None:
    # Given a request the toolkit signed without the topic (valid by the toolkit's own verifyRequest), carrying
    # a topic that turns the published entry into a delete
    request = _toolkit_request("the topic left out", topic="ContentManagement.Entry.delete")
    # Then it is refused before its topic is read, naming the header the signature must cover
    with pytest.raises(SignatureRejected) as caught:
        verify("contentful", request, [SECRET_64])
    assert caught.value.status == 401
    assert caught.value.reason.startswith("x-contentful-topic is not among the signed headers")


def test_a_signed_contentful_topic_changed_in_transit_is_403() -> None:
    assert (
        rejected("contentful", _toolkit_request("every header", topic="ContentManagement.Entry.delete"), (SECRET_64,))
        == 403
    )
