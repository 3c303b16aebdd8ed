"""Which of two events for one URL wins: the newest by (version, occurred_at), ties broken by content."""

from __future__ import annotations

from dataclasses import dataclass

from sitemap_updater.core.entry import Entry, default_section, entry_from_event, moment_micros
from sitemap_updater.core.events import PageEvent
from sitemap_updater.core.layout import Tombstone
from sitemap_updater.core.sharding import page_key


@dataclass(frozen=True, slots=True)
class PageState:
    """The newest known state of one URL: a live entry or a tombstone, with the order of its event."""

    url: str
    order: tuple[int, int]
    entry: Entry | None
    tombstone: Tombstone | None

    @property
    def rank(self) -> tuple[tuple[int, int], int, bytes]:
        """Total order used to pick a winner, independent of arrival order: a delete beats an upsert with
        the same (version, occurred_at); two such upserts are ordered by their rendered bytes."""
        if self.entry is None:
            return (self.order, 1, b"")
        return (self.order, 0, self.entry.body + self.entry.news)


def state_from_event(event: PageEvent) -> PageState:
    """The page state an accepted event asks for."""
    if event.type == "upsert":
        return PageState(event.url, event.order, entry_from_event(event), None)
    section = event.section if event.section is not None else default_section(event.url)
    tomb = Tombstone(event.url, page_key(event.url), section, moment_micros(event.occurred_at))
    return PageState(event.url, event.order, None, tomb)


def newer(current: PageState | None, candidate: PageState) -> bool:
    """True when ``candidate`` should replace ``current`` (an equal state is not newer)."""
    return current is None or candidate.rank > current.rank
