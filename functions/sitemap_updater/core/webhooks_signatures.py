"""Webhook signatures, each CMS's scheme as its documentation defines it. Pure: no I/O, the time is passed in.

| scheme | header | signed bytes | MAC | window |
|---|---|---|---|---|
| contentful | ``x-contentful-signature`` (+ signed-headers, timestamp) | ``M\\npath\\nk:v;..\\nbody`` | HS256 | yes |
| sanity | ``sanity-webhook-signature: t=<ms>,v1=<base64url>`` | ``<t>.<body>`` | HS256 | yes |
| ghost | ``x-ghost-signature: sha256=<hex>, t=<ms>`` | ``<body><t>`` | HS256 | yes |
| storyblok | ``webhook-signature: <hex>`` | ``<body>`` | HMAC-SHA1 | none |
| strapi | ``authorization: Bearer <token>`` (a header configured in Strapi) | nothing: a shared token | - | none |
| generic | ``x-sitemap-signature: t=<unix s>,v1=<hex>`` | ``<t>.<body>`` | HS256 | yes |

HS256 is HMAC-SHA256. Contentful's signed headers must include ``x-contentful-topic``, which decides publish or delete.

Every comparison is constant-time (``hmac.compare_digest``); several secrets may be valid at once (a rotation).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

Cms = Literal["contentful", "sanity", "storyblok", "ghost", "strapi", "generic"]
CMSES: tuple[Cms, ...] = ("contentful", "sanity", "storyblok", "ghost", "strapi", "generic")
DEFAULT_WINDOW_SECONDS = 300

CONTENTFUL_SIGNATURE = "x-contentful-signature"
CONTENTFUL_SIGNED_HEADERS = "x-contentful-signed-headers"
CONTENTFUL_TIMESTAMP = "x-contentful-timestamp"
CONTENTFUL_TOPIC = "x-contentful-topic"
SANITY_SIGNATURE = "sanity-webhook-signature"
GHOST_SIGNATURE = "x-ghost-signature"
STORYBLOK_SIGNATURE = "webhook-signature"
STRAPI_AUTHORIZATION = "authorization"
GENERIC_SIGNATURE = "x-sitemap-signature"
SIGNATURE_HEADERS: dict[Cms, str] = {
    "contentful": CONTENTFUL_SIGNATURE,
    "sanity": SANITY_SIGNATURE,
    "storyblok": STORYBLOK_SIGNATURE,
    "ghost": GHOST_SIGNATURE,
    "strapi": STRAPI_AUTHORIZATION,
    "generic": GENERIC_SIGNATURE,
}

_T_V1 = re.compile(r"^t=(\d{1,16})[, ]+v1=([A-Za-z0-9+/=_-]+)$")
_GHOST = re.compile(r"^sha256=([0-9a-fA-F]{64}),\s*t=(\d{1,16})$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")


@dataclass(frozen=True)
class WebhookRequest:
    """An HTTP request as received: header names lower-cased, the body as its exact bytes."""

    method: str
    path: str  # with ``?query`` when there is one
    headers: Mapping[str, str]
    body: bytes
    received_ms: int = 0  # when it arrived, milliseconds since 1970


class SignatureRejected(Exception):
    """401: the signature is missing or unreadable; 403: it does not match, or its timestamp is outside the
    window (a replay)."""

    def __init__(self, status: Literal[401, 403], reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def verify(cms: Cms, request: WebhookRequest, secrets: Sequence[str], window_s: int = DEFAULT_WINDOW_SECONDS) -> None:
    """Raise SignatureRejected unless ``request`` carries a valid signature under one of ``secrets``."""
    secrets = [s for s in secrets if s]
    if not secrets:
        raise SignatureRejected(403, f"no secret is configured for {cms} webhooks")
    header = SIGNATURE_HEADERS[cms]
    value = request.headers.get(header, "").strip()
    if not value:
        raise SignatureRejected(401, f"missing {header} header")
    _VERIFIERS[cms](request, value, secrets, window_s)


def _mac(secret: str, message: bytes, algorithm: Callable[[], object] = hashlib.sha256) -> bytes:
    return hmac.new(secret.encode("utf-8"), message, algorithm).digest()  # type: ignore[arg-type]


def _any_match(expected: Callable[[str], bytes], received: bytes, secrets: Sequence[str]) -> bool:
    found = False
    for secret in secrets:  # every secret is tried, so the time does not tell which one matched
        found |= hmac.compare_digest(expected(secret), received)
    return found


def _hex(text: str, header: str) -> bytes:
    if not _HEX.match(text) or len(text) % 2:
        raise SignatureRejected(401, f"{header}: not a hexadecimal signature")
    return bytes.fromhex(text)


def _fresh(timestamp_ms: int, request: WebhookRequest, window_s: int, header: str) -> None:
    skew = abs(request.received_ms - timestamp_ms)
    if skew > window_s * 1000:
        raise SignatureRejected(
            403, f"{header}: signed {skew // 1000:,} s away from now; at most {window_s:,} s (a replay?)"
        )


def _contentful(request: WebhookRequest, signature: str, secrets: Sequence[str], window_s: int) -> None:
    """Contentful's request verification, as its node-apps-toolkit's ``verifyRequest`` computes it: the headers the
    sender lists, plus the timestamp and the list itself (signed whether listed or not), sorted by name, with trimmed
    values. The list must name ``x-contentful-topic``: the topic decides publish or delete, and a signature that
    leaves it out lets anyone holding one signed request turn a publish into a delete (or back)."""
    received = _hex(signature, CONTENTFUL_SIGNATURE)
    listed = request.headers.get(CONTENTFUL_SIGNED_HEADERS, "")
    signed = {h.strip().lower() for h in listed.split(",") if h.strip()}
    timestamp = request.headers.get(CONTENTFUL_TIMESTAMP, "").strip()
    if not signed:
        raise SignatureRejected(401, f"missing {CONTENTFUL_SIGNED_HEADERS} header")
    if not timestamp.isdigit():
        raise SignatureRejected(401, f"{CONTENTFUL_TIMESTAMP} is missing or not a number of milliseconds")
    if CONTENTFUL_TOPIC not in signed:
        raise SignatureRejected(
            401, f"{CONTENTFUL_TOPIC} is not among the signed headers ({CONTENTFUL_SIGNED_HEADERS}: {listed.strip()})"
        )
    missing = sorted(h for h in signed if h not in request.headers)
    if missing:
        raise SignatureRejected(401, f"signed header {missing[0]} is missing")
    values = {h: request.headers[h] for h in signed if h not in (CONTENTFUL_SIGNED_HEADERS, CONTENTFUL_TIMESTAMP)}
    try:
        canonical = _contentful_canonical(request.method, request.path, values, int(timestamp))
    except UnicodeEncodeError:  # a lone surrogate: nothing a sender can have signed (Node's encodeURI throws)
        raise SignatureRejected(401, "the path or a signed header is not valid text") from None
    if not _any_match(lambda s: _mac(s, canonical + request.body), received, secrets):
        raise SignatureRejected(403, f"{CONTENTFUL_SIGNATURE} does not match")
    _fresh(int(timestamp), request, window_s, CONTENTFUL_TIMESTAMP)


_CONTENTFUL_OWN = (CONTENTFUL_SIGNATURE, CONTENTFUL_SIGNED_HEADERS, CONTENTFUL_TIMESTAMP)
# Node's encodeURI and querystring.escape: the characters each leaves as they are (letters and digits aside).
_ENCODE_URI_SAFE = ";,/?:@&=+$-_.!~*'()#"
_QUERY_ESCAPE_SAFE = "-_.!~*'()"


def _contentful_canonical(method: str, path: str, headers: Mapping[str, str], timestamp_ms: int) -> bytes:
    """The signed text but for the body: method, path (as the toolkit's getNormalizedEncodedURI encodes it), then
    ``name:value`` of each signed header, sorted by name and joined with ``;``, each part on its own line."""
    values = {name.strip().lower(): value.strip() for name, value in headers.items()}
    values[CONTENTFUL_TIMESTAMP] = str(timestamp_ms)
    names = sorted({*values, CONTENTFUL_SIGNED_HEADERS})
    values[CONTENTFUL_SIGNED_HEADERS] = ",".join(names)
    parts = path.split("?")
    pathname, search = parts[0], parts[1] if len(parts) > 1 else ""
    if search:
        pathname = f"{pathname}?{quote(search, safe=_QUERY_ESCAPE_SAFE)}"
    encoded = quote(pathname, safe=_ENCODE_URI_SAFE)
    lines = [method.upper(), encoded, ";".join(f"{name}:{values[name]}" for name in names), ""]
    return "\n".join(lines).encode("utf-8")


def _sanity(request: WebhookRequest, value: str, secrets: Sequence[str], window_s: int) -> None:
    match = _T_V1.match(value)
    if match is None:
        raise SignatureRejected(401, f"{SANITY_SIGNATURE}: expected t=<milliseconds>,v1=<signature>")
    timestamp, encoded = match.groups()
    try:
        received = base64.urlsafe_b64decode(encoded.replace("+", "-").replace("/", "_") + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        raise SignatureRejected(401, f"{SANITY_SIGNATURE}: v1 is not base64") from None
    message = timestamp.encode() + b"." + request.body
    if not _any_match(lambda s: _mac(s, message), received, secrets):
        raise SignatureRejected(403, f"{SANITY_SIGNATURE} does not match")
    _fresh(int(timestamp), request, window_s, SANITY_SIGNATURE)


def _ghost(request: WebhookRequest, value: str, secrets: Sequence[str], window_s: int) -> None:
    match = _GHOST.match(value)
    if match is None:
        raise SignatureRejected(401, f"{GHOST_SIGNATURE}: expected sha256=<hex>, t=<milliseconds>")
    received, timestamp = bytes.fromhex(match.group(1)), match.group(2)
    message = request.body + timestamp.encode()
    if not _any_match(lambda s: _mac(s, message), received, secrets):
        raise SignatureRejected(403, f"{GHOST_SIGNATURE} does not match")
    _fresh(int(timestamp), request, window_s, GHOST_SIGNATURE)


def _storyblok(request: WebhookRequest, value: str, secrets: Sequence[str], window_s: int) -> None:
    received = _hex(value, STORYBLOK_SIGNATURE)
    if not _any_match(lambda s: _mac(s, request.body, hashlib.sha1), received, secrets):
        raise SignatureRejected(403, f"{STORYBLOK_SIGNATURE} does not match")


def _strapi(request: WebhookRequest, value: str, secrets: Sequence[str], window_s: int) -> None:
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise SignatureRejected(401, f"{STRAPI_AUTHORIZATION}: expected Bearer <token>")
    received = hashlib.sha256(token.strip().encode()).digest()  # equal lengths for compare_digest
    if not _any_match(lambda s: hashlib.sha256(s.encode()).digest(), received, secrets):
        raise SignatureRejected(403, f"{STRAPI_AUTHORIZATION}: the token does not match")


def _generic(request: WebhookRequest, value: str, secrets: Sequence[str], window_s: int) -> None:
    match = _T_V1.match(value)
    if match is None:
        raise SignatureRejected(401, f"{GENERIC_SIGNATURE}: expected t=<unix seconds>,v1=<hex>")
    timestamp, signature = match.groups()
    received = _hex(signature, GENERIC_SIGNATURE)
    message = timestamp.encode() + b"." + request.body
    if not _any_match(lambda s: _mac(s, message), received, secrets):
        raise SignatureRejected(403, f"{GENERIC_SIGNATURE} does not match")
    _fresh(int(timestamp) * 1000, request, window_s, GENERIC_SIGNATURE)


_VERIFIERS: dict[Cms, Callable[[WebhookRequest, str, Sequence[str], int], None]] = {
    "contentful": _contentful,
    "sanity": _sanity,
    "storyblok": _storyblok,
    "ghost": _ghost,
    "strapi": _strapi,
    "generic": _generic,
}


def sign(cms: Cms, request: WebhookRequest, secret: str, at_ms: int) -> dict[str, str]:
    """The headers a CMS would add to ``request`` at ``at_ms`` (local runs, tests and the benchmark)."""
    body = request.body
    if cms == "contentful":  # as the toolkit's signRequest: every header given, the timestamp and the list
        given = {k.lower(): v for k, v in request.headers.items() if k.lower() not in _CONTENTFUL_OWN}
        canonical = _contentful_canonical(request.method, request.path, given, at_ms)
        return {
            CONTENTFUL_TIMESTAMP: str(at_ms),
            CONTENTFUL_SIGNED_HEADERS: ",".join(sorted({*given, CONTENTFUL_SIGNED_HEADERS, CONTENTFUL_TIMESTAMP})),
            CONTENTFUL_SIGNATURE: _mac(secret, canonical + body).hex(),
        }
    if cms == "sanity":
        mac = base64.urlsafe_b64encode(_mac(secret, f"{at_ms}.".encode() + body)).decode().rstrip("=")
        return {SANITY_SIGNATURE: f"t={at_ms},v1={mac}"}
    if cms == "ghost":
        return {GHOST_SIGNATURE: f"sha256={_mac(secret, body + str(at_ms).encode()).hex()}, t={at_ms}"}
    if cms == "storyblok":
        return {STORYBLOK_SIGNATURE: _mac(secret, body, hashlib.sha1).hex()}
    if cms == "strapi":
        return {STRAPI_AUTHORIZATION: f"Bearer {secret}"}
    seconds = at_ms // 1000
    return {GENERIC_SIGNATURE: f"t={seconds},v1={_mac(secret, f'{seconds}.'.encode() + body).hex()}"}
