"""Compact binary form of a page state, for spilling a large build to disk and back."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from sitemap_updater.core.entry import Entry
from sitemap_updater.core.layout import Tombstone
from sitemap_updater.core.reduce import PageState

# kind, version, occurred_us, key, lastmod_us, news_us, flags, len(url), len(section), len(body), len(news)
_HEAD = struct.Struct("<BqqQqqBIHII")
HEAD_SIZE = _HEAD.size


def encode_state(state: PageState) -> bytes:
    """Serialise a page state (live entry or tombstone) with its event order."""
    version, occurred = state.order
    url = state.url.encode()
    if state.entry is not None:
        e = state.entry
        section = e.section.encode("utf-8", "surrogatepass")
        head = _HEAD.pack(
            0, version, occurred, e.key, e.lastmod_us, e.news_us, e.flags,
            len(url), len(section), len(e.body), len(e.news),
        )  # fmt: skip
        return b"".join((head, url, section, e.body, e.news))
    assert state.tombstone is not None
    t = state.tombstone
    section = t.section.encode("utf-8", "surrogatepass")
    head = _HEAD.pack(1, version, occurred, t.key, t.deleted_us, 0, 0, len(url), len(section), 0, 0)
    return b"".join((head, url, section))


def decode_states(data: bytes) -> Iterator[PageState]:
    """Read back every state in a buffer written by ``encode_state``."""
    view = memoryview(data)
    pos, end = 0, len(data)
    unpack = _HEAD.unpack_from
    while pos < end:
        kind, version, occurred, key, lastmod, news_us, flags, n_url, n_sec, n_body, n_news = unpack(view, pos)
        pos += HEAD_SIZE
        url = bytes(view[pos : pos + n_url]).decode()
        pos += n_url
        section = bytes(view[pos : pos + n_sec]).decode("utf-8", "surrogatepass")
        pos += n_sec
        if kind == 0:
            body = bytes(view[pos : pos + n_body])
            pos += n_body
            news = bytes(view[pos : pos + n_news])
            pos += n_news
            entry = Entry(url, key, section, lastmod, body, news, news_us, flags)
            yield PageState(url, (version, occurred), entry, None)
        else:
            yield PageState(url, (version, occurred), None, Tombstone(url, key, section, lastmod))
