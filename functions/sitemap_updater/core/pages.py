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
    # For recovery: how the entry changed, and the sections whose entries of the page this state replaces by a
    # removal marker (the section the page left, and those an unfinished earlier move may still have written;
    # sorted, so equal sets give equal items; empty: none).
    change: str
    moved_from: tuple[str, ...]
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
    the page state it showed ("" for a send of no page state: Search Console's of the index)."""

    quiet_until_s: int
    digest: str
    rank: str = ""


@dataclass(frozen=True, slots=True)
class EntryItem:
    """A page's item in one section, as read or as a conditional write found it: its rank, its encoded state
    (``b""`` for a removal marker), whether it is *current* (a live entry whose rank is the page's newest and whose
    section is the page's: an update in that section may replace it by itself, without the page state) and the
    ingest batch whose outbox names its change ("" for none)."""

    rank: str
    record: bytes
    current: bool = False
    outbox: str = ""


@dataclass(frozen=True, slots=True)
class PageWrite(PageFields):
    """A change to record: the new page state and its manifest entry (an encoded PageState)."""

    record: bytes
    # A deletion that moved the page out of a section where it was live: that section's rebuild announces the
    # removal when its file drops the page, so the deletion's own section does not (its rebuild may run first,
    # and the page may come back to the section it left before that section's file ever dropped it).
    left_live: bool = field(default=False, kw_only=True)
