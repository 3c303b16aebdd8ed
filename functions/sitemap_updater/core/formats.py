"""The version of every format this code stores or sends, and how a reader meets one it does not know.

Each item, object and message carries its format's version (``v``); a reader takes only the versions it knows
and fails with :class:`UnknownFormat` on any other, naming what it read and which versions it reads. Every
format is at version 1. From 1.0 on, a change to a format raises its version and ships with a reader for the
previous version and a migration of what is stored, tested (``docs/architecture.md``, "Stored formats").
"""

from __future__ import annotations

from typing import Final

# DynamoDB items of the manifest table: page states, manifest entries and removal markers, outboxes, the import
# hold, parked rebuild requests, what search engines accepted and what waits out a quiet window, the index item.
ITEMS: Final = 1
# Published-file records (``files`` partition): their attributes and the snapshot references they hold.
FILE_RECORDS: Final = 1
# Snapshot blocks (``_state/sitemap-<section>/*.states``): their head line and the encoded page states.
SNAPSHOTS: Final = 1
# Messages between functions: rebuild requests, change records, index requests (``core/messages.py``).
MESSAGES: Final = 1
# The bootstrap's Step Functions payloads and the files its steps leave for each other under ``_bootstrap/<run>/``.
BOOTSTRAP: Final = 1
# The recent-changes feed's state (``_state/feed.json``).
FEED: Final = 1


class UnknownFormat(ValueError):
    """Stored data or a message of a format version this code does not read (written by another version)."""


def check(found: object, known: int, what: str) -> None:
    """Raise :class:`UnknownFormat` unless ``found`` is version ``known`` of ``what``'s format."""
    if found != known:
        written = "carries no format version" if found is None else f"is of format version {found!r}"
        raise UnknownFormat(f"{what} {written}; this version of sitemap-updater reads version {known} only")
