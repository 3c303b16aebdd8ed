"""The page events of one simulated sequence: upserts and deletes over a few URLs in three sections, with section
moves, deletes naming a section, upserts without ``lastmod``, news that ages out during the sequence, images,
videos and alternates, rank ties, duplicated and delayed deliveries, malformed events, and sometimes an event
that fails on every receive (a persistent fault)."""

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
# Its manifest sort key (16 hex digits, '#', the URL) is over DynamoDB's 1,024 bytes: refused on every receive.
TOO_LONG_URL = f"{BASE}/blog/{'a-very-long-slug-' * 64}"
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
    if rng.random() < 0.15:  # no lastmod: the page keeps its lastmod if nothing else changed
        body["occurred_at"] = _moment(_AS_OF - timedelta(seconds=rng.randint(3600, 86_400)))
    else:
        body["lastmod"] = f"2026-11-{rng.randint(1, 20):02d}"
    if rng.random() < 0.2:  # moves the page to a section other than its path's (or names its own); at a moment
        # of its own, because two events with the same order and content tie whatever their sections
        body["section"] = rng.choice(SECTIONS)
        body["occurred_at"] = _moment(_AS_OF - timedelta(seconds=rng.randint(3600, 86_400)))
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
    bodies: list[dict[str, Any]] = []
    for _ in range(count):
        url, version = rng.choice(pages), rng.randint(0, 6)
        if rng.random() < 0.25:
            body = event(url, type="delete", version=version, occurred_at="2026-11-18T00:00:00Z")
            if rng.random() < 0.3:  # names the section it is deleted from; at a moment of its own, because two
                # deletes with the same order tie on everything but the section (see docs/reliability.md)
                body["section"] = rng.choice(SECTIONS)
                body["occurred_at"] = _moment(_AS_OF - timedelta(days=3, seconds=rng.randint(0, 86_400)))
            bodies.append(body)
            continue
        body = _upsert(rng, url, version, url.rsplit("/", 1)[1])
        bodies.append(body)
        if "lastmod" in body and rng.random() < 0.1:  # a rank tie: same version and moment, other content
            bodies.append({**body, "priority": round(rng.uniform(0.1, 0.9), 1)})
    failing: list[dict[str, Any]] = []
    if rng.random() < failing_rate:
        failing.append(event(TOO_LONG_URL, version=1, lastmod="2026-11-10"))
    valid = bodies + failing
    raw = [json.dumps(b) for b in valid + rng.sample(valid, len(valid) // 5)]  # duplicated deliveries
    malformed = rng.sample(MALFORMED, 2)
    sends = []
    for body_text in raw + malformed:  # sent at random times, some delayed by up to SQS's 15 minutes
        delay = rng.uniform(0, 900) if rng.random() < 0.1 else 0.0
        sends.append((rng.uniform(0, span_s), body_text, delay))
    sends.sort(key=lambda s: s[0])
    return Events(sends, bodies, set(malformed), {json.dumps(b) for b in failing})
