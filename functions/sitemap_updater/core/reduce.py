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
    # Whether the event named the section (its ``section`` field): a page whose section the Sections setting
    # gave is moved by a re-section when the setting changes; one its event named stays.
    named: bool = False
    # A re-section's move: the rank of the stored state this one places in another section ("" for an event's
    # state). Its rank extends that one (``moved_rank``), so it is newer than it and than nothing else.
    replaces: str = ""

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
        if self.replaces:
            return moved_rank(self.replaces, self.section)
        version, occurred = self.order
        kind = 1 if self.entry is None else 0
        return f"{version + 1:020d}:{occurred:020d}:{kind}:{self.digest}:{self.section}"


# A moved state's rank: the event's own rank, then ``>``, the move's number (6 digits) and the section. An event's
# rank never holds ``>`` after its section when a re-section may move it: its section is a first path segment
# of a canonical URL (where ``>`` is escaped) or ``root``.
_MOVE = ">"


def moved_rank(stored: str, section: str) -> str:
    """The rank of ``stored``'s page moved to ``section`` by a re-section: the event's rank extended, so it is
    greater than ``stored`` (and every earlier move of the page) and compares with any other event's rank as the
    event's own does (a newer event still wins, an older one is still stale)."""
    if is_moved(stored):
        head, _sep, tail = stored.rpartition(_MOVE)
        return f"{head}{_MOVE}{int(tail[:6]) + 1:06d}:{section}"
    return f"{stored}{_MOVE}{1:06d}:{section}"


def is_moved(rank: str) -> bool:
    """Whether ``rank`` is a re-section's move (``moved_rank``) rather than an event's own."""
    _head, sep, tail = rank.rpartition(_MOVE)
    return bool(sep) and tail[:6].isdigit() and tail[6:7] == ":"


def rank_order(rank: str) -> tuple[int, int]:
    """The event order (version, occurred_at in µs) a rank begins with."""
    return int(rank[:20]) - 1, int(rank[21:41])


def state_from_event(event: PageEvent) -> PageState:
    """The page state an accepted event asks for."""
    named = event.section is not None
    if event.type == "upsert":
        return PageState(event.url, event.order, entry_from_event(event), None, named)
    tomb = Tombstone(event.url, page_key(event.url), event.page_section, moment_micros(event.occurred_at))
    return PageState(event.url, event.order, None, tomb, named)


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
