"""Sequences over several sites (issue 32): the stack's own site and sites added at run time, some added or removed
while events flow. Each site's events are the generator's (tests/sim/events.py) on its own host, so every site's
files are checked against the same reference models; and no file of one site may name a URL on another's host.

A site's host is as long as the stack's own (``https://www.example.com``), so the generator's longest URLs stay
within the contract's 2,047 characters on every host."""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from sitemap_updater.sites import SiteConfig
from tests.conftest import BASE
from tests.sim.events import Events, generate

ORIGINS = ("https://shop.example.de", "https://news.example.fr", "https://blog.example.it")
_URL_HOST = re.compile(rb"https?://([A-Za-z0-9.-]+)")


@dataclass
class SimSite:
    """One site added at run time: when it is added (0: before the first event) and removed (None: never)."""

    origin: str
    added_at: float
    removed_at: float | None
    events: Events
    added: bool = False
    removing: bool = False  # ``sites remove`` has marked it: its events are refused
    marked: SiteConfig | None = None  # its item as marked
    deleting: bool = False  # ``sites remove`` is deleting its files (after its wait)
    removed: bool = False  # ``sites remove`` has finished

    def marked_due(self, wait_s: float) -> float:
        """When the removal deletes its tree (once it has been marked)."""
        assert self.removed_at is not None
        return self.removed_at + wait_s

    @property
    def host(self) -> str:
        return self.origin.removeprefix("https://")

    @property
    def prefix(self) -> str:
        return f"sites/{self.host}/"

    @property
    def pk_prefix(self) -> str:
        return f"site#{self.host}#"


@dataclass
class Tree:
    """What a crawler of one site's tree has seen: the index files and every index put (names relative to the
    tree)."""

    prefix: str  # "" for the stack's own site
    base: str
    host: str
    index_files: dict[str, frozenset[str]] = field(default_factory=dict)
    indexes: list[tuple[float, frozenset[str]]] = field(default_factory=list)


def _on_host(text: str, origin: str) -> str:
    return text.replace(BASE, origin)


def plan(seed: int, count: int, urls: int, events: int, span_s: float) -> list[SimSite]:
    """``count`` sites for the sequence of ``seed`` (drawn apart from the sequence's own random numbers): each
    present from the start, added during the sequence or removed during it, with its own events."""
    rng = random.Random(seed * 15_485_863 + 11)
    sites = []
    for origin in ORIGINS[:count]:
        mode = rng.choice(("start", "start", "added", "removed"))
        added_at = rng.uniform(0, span_s / 2) if mode == "added" else 0.0
        removed_at = rng.uniform(span_s / 4, span_s) if mode == "removed" else None
        made = generate(random.Random(rng.getrandbits(64)), max(4, urls // 2), max(6, events // 2), span_s, 0.0)
        sends = []
        for at, body, delay in made.sends:
            if body in made.malformed:  # the stack's own sequence sends those
                continue
            sends.append((added_at + at * (span_s - added_at) / span_s, _on_host(body, origin), delay))
        accepted = [json.loads(_on_host(json.dumps(b), origin)) for b in made.accepted]
        sites.append(SimSite(origin, added_at, removed_at, Events(sends, accepted)))
    return sites


def foreign_hosts(name: str, data: bytes, own: str, hosts: set[str]) -> set[str]:
    """The hosts of ``hosts`` other than ``own`` that the object ``name`` names a URL on."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return set()
    found = {m.decode() for m in _URL_HOST.findall(data)}
    return (found & hosts) - {own}


def body_host(body: str) -> str | None:
    try:
        url: Any = json.loads(body).get("url")
    except (ValueError, AttributeError):
        return None
    return url.split("/")[2] if isinstance(url, str) and url.count("/") >= 2 else None
