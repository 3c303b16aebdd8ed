"""Compact binary form of a page state, for spilling a large build to disk and back."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from typing import Final

from sitemap_updater.core.entry import Entry
from sitemap_updater.core.reduce import PageState, Tombstone

# kind, version, occurred_us, key, lastmod_us, news_us, flags, len(url), len(section), len(body), len(news)
_HEAD = struct.Struct("<BqqQqqBIHII")
HEAD = _HEAD
HEAD_SIZE = _HEAD.size
# In the flags of a page state's record (``encode_state``), beside the entry's own (``entry.FLAG_*``, the low
# bits): the event named the section. A build's records never have it (nothing there is ever moved).
FLAG_NAMED = 0x80


def encode_record(
    kind: int,
    order: tuple[int, int],
    key: int,
    moment_us: int,
    url: bytes,
    section: bytes,
    body: bytes = b"",
    news: bytes = b"",
    news_us: int = 0,
    flags: int = 0,
) -> bytes:
    """One record: ``kind`` 0 is a live entry (``moment_us`` its lastmod), 1 a tombstone (its deletion)."""
    version, occurred = order
    head = _HEAD.pack(
        kind, version, occurred, key, moment_us, news_us, flags, len(url), len(section), len(body), len(news)
    )
    return b"".join((head, url, section, body, news))


def encode_state(state: PageState) -> bytes:
    """Serialise a page state (live entry or tombstone) with its event order and whether its event named its
    section (a re-section's move is not kept: its rank is the page state's, not the record's)."""
    url = state.url.encode()
    named = FLAG_NAMED if state.named else 0
    if state.entry is not None:
        e = state.entry
        section = e.section.encode("utf-8", "surrogatepass")
        return encode_record(
            0, state.order, e.key, e.lastmod_us, url, section, e.body, e.news, e.news_us, e.flags | named
        )
    assert state.tombstone is not None
    t = state.tombstone
    section = t.section.encode("utf-8", "surrogatepass")
    return encode_record(1, state.order, t.key, t.deleted_us, url, section, flags=named)


# A record read in place by ``scan_records``: a plain tuple (cheap to make, sorts by key then URL) of
RecordView = tuple[int, bytes, bytes, int, int, int, int, int, int, int, int, int]
# ... these fields: key, url, section, kind, version, occurred_us, moment_us (lastmod or deletion), flags,
# and the offsets in the buffer of the record's start, its body, its news part and its end.
KEY: Final = 0
URL: Final = 1
SECTION: Final = 2
KIND: Final = 3
VERSION: Final = 4
OCCURRED: Final = 5
MOMENT: Final = 6
FLAGS: Final = 7
START: Final = 8
BODY: Final = 9
NEWS: Final = 10
END: Final = 11


def scan_records(data: bytes) -> Iterator[RecordView]:
    """Every record of a buffer, without building entries: for reducing large builds."""
    pos, end = 0, len(data)
    unpack = _HEAD.unpack_from
    while pos < end:
        kind, version, occurred, key, moment, _news_us, flags, n_url, n_sec, n_body, n_news = unpack(data, pos)
        url_start = pos + HEAD_SIZE
        section_start = url_start + n_url
        body_start = section_start + n_sec
        news_start = body_start + n_body
        stop = news_start + n_news
        yield (
            key, data[url_start:section_start], data[section_start:body_start], kind, version, occurred, moment,
            flags, pos, body_start, news_start, stop,
        )  # fmt: skip
        pos = stop


def outranks(record: RecordView, current: RecordView, data: bytes) -> bool:
    """``PageState.rank`` compared on two records read in place from ``data``: True when ``record`` wins."""
    mine = (record[VERSION], record[OCCURRED], record[KIND])
    theirs = (current[VERSION], current[OCCURRED], current[KIND])
    if mine != theirs:
        return mine > theirs
    if not record[KIND]:  # the rendered entry (body and news) is contiguous from BODY to END
        digest = hashlib.sha256(data[record[BODY] : record[END]]).digest()
        other = hashlib.sha256(data[current[BODY] : current[END]]).digest()
        if digest != other:
            return digest > other
    return record[SECTION] > current[SECTION]  # UTF-8 bytes sort as the section names' code points


def decode_states(data: bytes) -> Iterator[PageState]:
    """Read back every state in a buffer written by ``encode_state``."""
    return iter(decode_block(data)[0])


def decode_block(data: bytes) -> tuple[list[PageState], list[int]]:
    """Every state in a buffer written by ``encode_state``, and where each record starts (one offset more: the
    buffer's end)."""
    pos, end = 0, len(data)
    unpack = _HEAD.unpack_from
    new = tuple.__new__  # what a named tuple's own constructor calls, without its frame: twice a state
    sections: dict[bytes, str] = {}
    states: list[PageState] = []
    starts: list[int] = []
    while pos < end:
        starts.append(pos)
        kind, version, occurred, key, moment, news_us, flags, n_url, n_sec, n_body, n_news = unpack(data, pos)
        url_start = pos + HEAD_SIZE
        section_start = url_start + n_url
        body_start = section_start + n_sec
        url = data[url_start:section_start].decode()
        raw_section = data[section_start:body_start]
        section = sections.get(raw_section)
        if section is None:
            section = sections[raw_section] = raw_section.decode("utf-8", "surrogatepass")
        named = bool(flags & FLAG_NAMED)
        if kind == 0:
            news_start = body_start + n_body
            pos = news_start + n_news
            body, news = data[body_start:news_start], data[news_start:pos]
            entry = new(Entry, (url, key, section, moment, body, news, news_us, flags & ~FLAG_NAMED))
            states.append(new(PageState, (url, (version, occurred), entry, None, named, "")))
        else:
            pos = body_start
            gone = Tombstone(url, key, section, moment)
            states.append(new(PageState, (url, (version, occurred), None, gone, named, "")))
    starts.append(pos)
    return states, starts
