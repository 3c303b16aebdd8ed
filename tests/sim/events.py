"""The page events of one simulated sequence: upserts and deletes over a few URLs in three sections (some URLs
of the longest length the contract allows, sharing a long prefix), with section moves, deletes naming a section,
upserts without ``lastmod``, news that ages out during the sequence, images, videos and alternates, rank ties
(between contents and between sections), duplicated and delayed deliveries, malformed events, and sometimes an
event that fails on every receive (a persistent fault)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import AS_OF_US, BASE, event

SECTIONS = ("blog", "docs", "shop")
MALFORMED = [
    '{"type": "upsert", "occurred_at": "2026-11-20T10:00:00Z"}',
    json.dumps(event("https://evil.example.net/blog/x")),
    json.dumps(event(f"{BASE}/blog/p1", priority=2)),
    "not json at all",
]
# The fake DynamoDB refuses every write of this page (tests/sim/dynamo.py): a fault that persists.
REFUSED_URL = f"{BASE}/blog/refused-by-dynamodb"
# URLs of 2,047 characters, the longest the contract allows, that differ only at their end: their keys in
# DynamoDB are bounded and still one per URL.
LONG_URLS = tuple(f"{BASE}/docs/{'long-' * 420}"[:2046] + tail for tail in "ab")
_AS_OF = datetime.fromtimestamp(AS_OF_US / 1_000_000, UTC)


@dataclass
class Events:
    sends: list[tuple[float, str, float]]  # (when, body, DelaySeconds)
    accepted: list[dict[str, Any]]  # every valid event that must be published: the reference model's input
    malformed: set[str] = field(default_factory=set)
    failing: set[str] = field(default_factory=set)  # bodies that fail on every receive


def _moment(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _upsert(rng: random.Random, url: str, version: int, slug: str) -> dict[str, Any]:
    body = event(url, version=version)
    if rng.random() < 0.15:  # no lastmod: the page shows its occurred_at (one of a few, so that some tie)
        body["occurred_at"] = _moment(_AS_OF - timedelta(hours=rng.randint(1, 3)))
    else:  # the 20th: null, a page with no lastmod at all (as adopted from a sitemap without one)
        day = rng.randint(1, 20)
        body["lastmod"] = None if day == 20 else f"2026-11-{day:02d}"
    if rng.random() < 0.2:  # moves the page to a section other than its path's (or names its own)
        body["section"] = rng.choice(SECTIONS)
    if rng.random() < 0.15:
        body["images"] = [{"loc": f"https://cdn.example.com/img/{slug}-{i}.jpg"} for i in range(rng.randint(1, 3))]
    if rng.random() < 0.08:
        cdn = "https://cdn.example.com"
        body["videos"] = [{"thumbnail_loc": f"{cdn}/thumbs/{slug}.jpg", "title": f"Video {slug}",
                           "description": "A short film.", "content_loc": f"{cdn}/v/{slug}.mp4"}]  # fmt: skip
    if rng.random() < 0.08:
        body["alternates"] = [{"hreflang": "de", "href": f"{BASE}/de/{slug}"}, {"hreflang": "x-default", "href": url}]
    if rng.random() < 0.12:  # published about two days before the start: ages out during the sequence, or before
        published = _AS_OF - timedelta(days=2) + timedelta(seconds=rng.uniform(-1800, 1500))
        body["news"] = {"publication_name": "Example Times", "publication_language": "en",
                        "publication_date": _moment(published), "title": f"News {slug}"}  # fmt: skip
    return body


def generate(rng: random.Random, urls: int, count: int, span_s: float, failing_rate: float = 0.3) -> Events:
    """``count`` events over ``urls`` URLs, sent at random times within ``span_s`` seconds; with probability
    ``failing_rate`` one more that fails on every receive."""
    pages = [f"{BASE}/{rng.choice(SECTIONS)}/p{i}" for i in range(urls)]
    if rng.random() < 0.3:
        pages[: len(LONG_URLS)] = LONG_URLS
    bodies: list[dict[str, Any]] = []
    for _ in range(count):
        url, version = rng.choice(pages), rng.randint(0, 6)
        if rng.random() < 0.25:
            body = event(url, type="delete", version=version, occurred_at="2026-11-18T00:00:00Z")
            if rng.random() < 0.3:  # names the section it is deleted from: deletes of one order tie but for it
                body["section"] = rng.choice(SECTIONS)
            bodies.append(body)
            continue
        body = _upsert(rng, url, version, url.rsplit("/", 1)[1][-12:])
        bodies.append(body)
        if rng.random() < 0.1:  # a rank tie: same version and moment, other content
            bodies.append({**body, "priority": round(rng.uniform(0.1, 0.9), 1)})
        if rng.random() < 0.05:  # a rank tie: same version, moment and content, another section
            bodies.append({**body, "section": rng.choice(SECTIONS)})
    failing: list[dict[str, Any]] = []
    if rng.random() < failing_rate:
        failing.append(event(REFUSED_URL, version=1, lastmod="2026-11-10"))
    valid = bodies + failing
    raw = [json.dumps(b) for b in valid + rng.sample(valid, len(valid) // 5)]  # duplicated deliveries
    malformed = rng.sample(MALFORMED, 2)
    sends = []
    for body_text in raw + malformed:  # sent at random times, some delayed by up to SQS's 15 minutes
        delay = rng.uniform(0, 900) if rng.random() < 0.1 else 0.0
        sends.append((rng.uniform(0, span_s), body_text, delay))
    sends.sort(key=lambda s: s[0])
    return Events(sends, bodies, set(malformed), {json.dumps(b) for b in failing})
