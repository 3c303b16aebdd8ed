"""Page-state records: what the manifest table holds about the newest event of each URL, and what notifiers
last sent for it. Plain values, shared by the services, the DynamoDB adapter and the simulation's fakes."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # For recovery: how the entry changed, and the sections whose entries this state removes (``left_sections``:
    # the section the page left, and those an unfinished earlier move may still have written; empty: none).
    change: str
    moved_from: str
    # Whether the event named the section (else the Sections setting gave it, and a re-section may move it).
    section_named: bool = field(default=False, kw_only=True)


@dataclass(frozen=True, slots=True)
class PageRecord(PageFields):
    """The page-state item as read: what ingest needs to decide whether an event is stale, a no-op or a change."""

    outbox: str  # the ingest batch that recorded this change ("" for a rank alone or an import)
    # The rank the page's entry in ``section`` has once this state's writes are done: its own, or, for a newer
    # event that changed no entry (only the state was written), the rank of the entry it kept.
    entry_rank: str = ""


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


# Joins the sections a state removes the page from in ``moved_from``: no section name holds it (XML text forbids it).
_SECTIONS_SEP = "\x00"


def left_sections(fields: PageFields) -> list[str]:
    """The sections whose entries of this page the state replaces by a removal marker (its ``moved_from``)."""
    return fields.moved_from.split(_SECTIONS_SEP) if fields.moved_from else []


def join_sections(sections: set[str]) -> str:
    """The ``moved_from`` naming ``sections`` (sorted, so equal sets give equal items)."""
    return _SECTIONS_SEP.join(sorted(sections))
