"""Which of two events for one URL wins: the newest by (version, occurred_at), ties broken by content and section,
so the winner never depends on the order events arrive in."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from sitemap_updater.core.entry import Entry, entry_from_event, moment_micros
from sitemap_updater.core.sharding import page_key

if TYPE_CHECKING:
    from sitemap_updater.core.events import PageEvent


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A deleted page: remembered so a late, older upsert cannot revive it, and so its file's lastmod moves."""

    url: str
    key: int
    section: str
    deleted_us: int


class PageState(NamedTuple):
    """The newest known state of one URL: a live entry or a tombstone, with the order of its event."""

    url: str
    order: tuple[int, int]
    entry: Entry | None
    tombstone: Tombstone | None

    @property
    def key(self) -> int:
        """The page's 64-bit key."""
        if self.entry is not None:
            return self.entry.key
        assert self.tombstone is not None
        return self.tombstone.key

    @property
    def digest(self) -> str:
        """SHA-256 of the rendered entry (empty for a tombstone)."""
        if self.entry is None:
            return ""
        return hashlib.sha256(self.entry.body + self.entry.news).hexdigest()

    @property
    def section(self) -> str:
        """The section the state puts the page in (or, for a tombstone, deletes it from)."""
        if self.entry is not None:
            return self.entry.section
        assert self.tombstone is not None
        return self.tombstone.section

    @property
    def rank(self) -> str:
        """Total order used to pick a winner, independent of arrival order, as text that sorts the same way
        in Python and in DynamoDB conditions (UTF-8 byte order is code point order): (version, occurred_at),
        then a delete beats an upsert with the same order, then the larger digest of the rendered entry, then
        the larger section name. Two states of equal rank are equal, so a tie cannot depend on arrival order."""
        version, occurred = self.order
        kind = 1 if self.entry is None else 0
        return f"{version + 1:020d}:{occurred:020d}:{kind}:{self.digest}:{self.section}"


def state_from_event(event: PageEvent) -> PageState:
    """The page state an accepted event asks for."""
    if event.type == "upsert":
        return PageState(event.url, event.order, entry_from_event(event), None)
    tomb = Tombstone(event.url, page_key(event.url), event.page_section, moment_micros(event.occurred_at))
    return PageState(event.url, event.order, None, tomb)


def newer(current: PageState | None, candidate: PageState) -> bool:
    """True when ``candidate`` should replace ``current`` (an equal state is not newer)."""
    return current is None or candidate.rank > current.rank


def reduce_states(states: Iterable[PageState]) -> dict[str, PageState]:
    """The newest state per URL, whatever the order the states come in."""
    best: dict[str, PageState] = {}
    for state in states:
        if newer(best.get(state.url), state):
            best[state.url] = state
    return best


def split_states(states: Iterable[PageState]) -> tuple[list[Entry], list[Tombstone]]:
    """Live entries and tombstones of a set of page states."""
    entries = [s.entry for s in states if s.entry is not None]
    tombstones = [s.tombstone for s in states if s.tombstone is not None]
    return entries, tombstones
