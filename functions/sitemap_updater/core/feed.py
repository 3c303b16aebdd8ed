"""The recent-changes feed: an Atom 1.0 document (RFC 4287) of the pages added or updated last, newest first.

Google recommends a sitemap plus a feed of recent changes: crawlers poll the small feed often and the sitemaps
less. The feed is kept from the notifier's change records (no table read): a page added or updated goes to the
top with its lastmod (or the moment it was published, without one), a page removed from the section that listed
it leaves, and the newest ``limit`` stay. Its state (``FeedState``) is kept beside it as JSON, never read back
out of the rendered feed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

from sitemap_updater.core.entry import w3c_micros
from sitemap_updater.core.formats import FEED, check
from sitemap_updater.core.text import escape_text

FEED_NAME = "sitemap-changes.atom"  # beside the sitemaps: CloudFront serves sitemap* from the bucket
FEED_STATE = "_state/feed.json"
ATOM_NS = "http://www.w3.org/2005/Atom"


class FeedChange(NamedTuple):
    """One change a section rebuild published: the URL, ``added``/``updated``/``removed``, the section that
    published it, and its lastmod (microseconds; the publish moment when the page gives none)."""

    url: str
    change: str
    section: str
    updated_us: int


class FeedEntry(NamedTuple):
    url: str
    updated_us: int
    section: str


@dataclass(slots=True)
class FeedState:
    """The feed's entries and a number every write takes (its compare-and-swap version, kept as ``seq`` beside
    the format's own version, ``v``)."""

    entries: list[FeedEntry] = field(default_factory=list)
    version: int = 0

    def to_json(self) -> bytes:
        return json.dumps({"v": FEED, "seq": self.version, "entries": [list(e) for e in self.entries]}).encode()

    @classmethod
    def from_json(cls, data: bytes | None) -> FeedState:
        """The state as kept (none yet: empty); UnknownFormat for one of another format version."""
        if not data:
            return cls()
        raw = json.loads(data)
        check(raw.get("v"), FEED, f"the feed's state ({FEED_STATE})")
        return cls([FeedEntry(str(u), int(t), str(s)) for u, t, s in raw["entries"]], int(raw["seq"]))


def apply(state: FeedState, changes: list[FeedChange], limit: int, gone: set[str] | None = None) -> FeedState:
    """The state after ``changes`` (in the order they were published), keeping the newest ``limit`` entries
    ordered by (lastmod, URL), newest first, so the same entries always render the same bytes. ``gone``: the
    changed pages that are deleted now (read after the changes were published); without it a page leaves when
    the section that listed it reports it removed (not when the section it moved away from does)."""
    by_url = {e.url: e for e in state.entries}
    for change in changes:
        if change.change == "removed":
            listed = by_url.get(change.url)
            if listed is not None and listed.section == change.section:  # not a page that moved on meanwhile
                del by_url[change.url]
        else:
            by_url[change.url] = FeedEntry(change.url, change.updated_us, change.section)
    for url in gone or ():
        by_url.pop(url, None)  # deleted, whichever section said so and in whatever order the records came
    newest = sorted(by_url.values(), key=lambda e: (-e.updated_us, e.url))[:limit]
    return FeedState(newest, state.version + 1)


def render_atom(base_url: str, state: FeedState) -> bytes:
    """The Atom document: the site as author, each page an entry whose id, title and link are its URL."""
    host = base_url.split("://", 1)[1]
    self_url = f"{base_url}/{FEED_NAME}"
    updated = max((e.updated_us for e in state.entries), default=0)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f'<feed xmlns="{ATOM_NS}">\n',
        f"<id>{escape_text(self_url)}</id>\n",
        f"<title>Recent changes on {escape_text(host)}</title>\n",
        f"<updated>{w3c_micros(updated)}</updated>\n",
        f'<link rel="self" href="{escape_text(self_url)}"/>\n',
        f'<link rel="alternate" href="{escape_text(base_url)}/"/>\n',
        f"<author><name>{escape_text(host)}</name></author>\n",
    ]
    for entry in state.entries:
        url = escape_text(entry.url)
        parts.append(
            f'<entry><id>{url}</id><title>{url}</title><link href="{url}"/>'
            f"<updated>{w3c_micros(entry.updated_us)}</updated></entry>\n"
        )
    parts.append("</feed>\n")
    return "".join(parts).encode()
