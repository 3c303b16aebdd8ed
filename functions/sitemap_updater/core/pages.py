"""Page-state records: what the manifest table holds about the newest event of each URL, and what notifiers
last sent for it. Plain values, shared by the services, the DynamoDB adapter and the simulation's fakes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PageFields:
    """What the page-state item holds about the newest event of a URL."""

    url: str
    rank: str
    kind: str
    section: str
    key: int
    digest: str
    lastmod: str
    # For recovery, while the outbox of the change is open: how the entry changed, and the section the page left
    # (empty: none).
    change: str
    moved_from: str


@dataclass(frozen=True, slots=True)
class PageRecord(PageFields):
    """The page-state item as read: what ingest needs to decide whether an event is stale, a no-op or a change."""

    outbox: str  # the ingest batch that recorded this change ("" for a rank alone or an import)


@dataclass(frozen=True, slots=True)
class SentRecord:
    """What a search engine last accepted for a URL: until when to stay quiet, the entry's digest, and the rank of
    the page state it showed ("" when not known: recorded by an older version)."""

    quiet_until_s: int
    digest: str
    rank: str = ""


@dataclass(frozen=True, slots=True)
class PageWrite(PageFields):
    """A change to record: the new page state and its manifest entry (an encoded PageState)."""

    record: bytes
