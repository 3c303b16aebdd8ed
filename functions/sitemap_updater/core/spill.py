"""The full build's spill: page states grouped by section and key bucket, and their reduce to the newest per URL.

Each state is a fixed-size head (``HEAD``) and its bytes (URL, rendered body, news part); heads and bytes are
kept apart so a reduce unpacks every head of a group in one ``struct.iter_unpack`` call. A bucket whose keys
are all distinct (no URL twice, the common case of an export) is reduced with C-level operations on columns;
any other bucket, or one whose records must be kept (news, text sitemaps), goes through ``records``'s in-place
reduce, which ranks rival states as ``PageState.rank`` does.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, islice, repeat
from operator import add, itemgetter, lt
from typing import Any, NamedTuple

from sitemap_updater.core.entry import URL_CLOSE
from sitemap_updater.core.records import (
    BODY,
    END,
    FLAGS,
    KEY,
    KIND,
    MOMENT,
    NEWS,
    SECTION,
    START,
    URL,
    RecordView,
    encode_record,
    outranks,
    scan_records,
)
from sitemap_updater.core.reduce import PageState

BUCKET_BITS = 6
BUCKETS = 1 << BUCKET_BITS
SHIFT = 64 - BUCKET_BITS  # a key's bucket is its top BUCKET_BITS bits
# key, kind (0 live, 1 tombstone), version, occurred_us, moment_us (lastmod or deletion), news_us, flags,
# len(url), len(body), len(news)
HEAD = struct.Struct(">QBqqqqBIII")  # big-endian: the key as the 8 bytes of its hash
_CLOSE = len(URL_CLOSE)

# One state as spilled: its section, key, head and bytes (URL, body, news part).
Spilled = tuple[str, int, bytes, bytes]


def spill_state(state: PageState) -> Spilled:
    """The spilled form of a page state (what the model path makes of an event)."""
    url = state.url.encode()
    version, occurred = state.order
    if state.entry is not None:
        e = state.entry
        head = HEAD.pack(
            e.key, 0, version, occurred, e.lastmod_us, e.news_us, e.flags, len(url), len(e.body), len(e.news)
        )
        return e.section, e.key, head, b"".join((url, e.body, e.news))
    assert state.tombstone is not None
    t = state.tombstone
    return t.section, t.key, HEAD.pack(t.key, 1, version, occurred, t.deleted_us, 0, 0, len(url), 0, 0), url


@dataclass(slots=True)
class SpillGroups:
    """The states of one chunk of lines, by section and bucket, in the order they were added.

    Each group's heads and data grow in a buffer of their own: a chunk keeps no object per state alive, so the
    memory a line takes is reused by the next instead of growing the heap (and faulting in new pages)."""

    groups: dict[str, tuple[list[bytearray], list[bytearray]]] = field(default_factory=dict)

    def group(self, section: str) -> tuple[list[bytearray], list[bytearray]]:
        """The heads and the data of a section's states, each as one buffer per bucket."""
        found = self.groups.get(section)
        if found is None:
            found = self.groups[section] = (
                [bytearray() for _ in range(BUCKETS)],
                [bytearray() for _ in range(BUCKETS)],
            )
        return found

    def add(self, section: str, key: int, head: bytes, data: bytes) -> None:
        heads, blobs = self.group(section)
        heads[key >> SHIFT] += head
        blobs[key >> SHIFT] += data

    def runs(self) -> Iterator[tuple[int, str, int, bytearray, bytearray]]:
        """``(bucket, section, count, heads, data)`` of every non-empty group, by bucket then section."""
        ordered = sorted(self.groups.items())
        for bucket in range(BUCKETS):
            for section, (heads, data) in ordered:
                if heads[bucket]:
                    yield bucket, section, len(heads[bucket]) // HEAD.size, heads[bucket], data[bucket]


class SectionRun(NamedTuple):
    """The live entries of one section in one bucket after the reduce, sorted by key (then URL)."""

    keys: array[int]
    sizes: array[int]  # XML bytes of each entry's <url> element, closed, with its news part
    lastmods: array[int]
    flags: array[int]
    elements: bytes  # every entry's closed <url> element (with its news part), in order
    records: bytes  # the entries as ``records`` records, when kept (news may show, or text sitemaps); else b""
    has_news: bool


Reduced = tuple[dict[str, SectionRun], dict[str, list[tuple[int, int]]]]


def reduce_bucket(groups: dict[str, tuple[bytes, bytes]], keep: set[str], keep_all: bool) -> Reduced:
    """Keep the newest state per URL of one bucket (``groups``: section -> heads and data). Returns each section's
    live run and its tombstones as sorted ``(key, deleted_us)``. Records are kept for sections in ``keep``, or
    every section with ``keep_all``.

    The winner per URL is the greatest ``(version, occurred_at, kind)``, a delete beating an upsert of the same
    order, then the greater SHA-256 of the rendered entry, then the greater section: ``PageState.rank``'s order.
    """
    columns = {section: _Columns.of(heads) for section, (heads, _) in groups.items() if heads}
    plain = not keep_all and keep.isdisjoint(groups) and not any(any(c.news_lengths) for c in columns.values())
    if not plain:
        return _reduce_records(groups, keep, keep_all)
    orders = {section: _key_order(cols.keys) for section, cols in columns.items()}
    if not _distinct([ordered for _order, ordered in orders.values()]):
        return _reduce_records(groups, keep, keep_all)
    runs: dict[str, SectionRun] = {}
    deleted: dict[str, list[tuple[int, int]]] = {}
    for section, cols in columns.items():
        run, tombstones = _reduce_distinct(cols, groups[section][1], *orders[section])
        if run is not None:
            runs[section] = run
        if tombstones:
            deleted[section] = tombstones
    return runs, deleted


def _field_offsets() -> list[int]:
    codes = HEAD.format[1:]
    return [struct.calcsize(f">{codes[:i]}") for i in range(len(codes))]


_OFFSETS = _field_offsets()


def _column(heads: bytes, field: int, code: str) -> array[int]:
    """One field of every head, gathered by strided slices (no tuple per head): ``HEAD``'s ``field``-th."""
    offset, size = _OFFSETS[field], HEAD.size
    width = array(code).itemsize
    gathered = bytearray(len(heads) // size * width)
    for byte in range(width):
        gathered[byte::width] = heads[offset + byte :: size]
    column = array(code, gathered)
    if sys.byteorder == "little":
        column.byteswap()  # HEAD is big-endian
    return column


class _Columns(NamedTuple):
    """What the reduce of distinct keys reads of a group's heads."""

    keys: array[int]
    kinds: bytes
    moments: array[int]
    flags: bytes
    url_lengths: array[int]
    body_lengths: array[int]
    news_lengths: array[int]

    @classmethod
    def of(cls, heads: bytes) -> _Columns:
        size = HEAD.size
        return cls(
            _column(heads, 0, "Q"),
            heads[_OFFSETS[1] :: size],
            _column(heads, 4, "q"),
            heads[_OFFSETS[6] :: size],
            _column(heads, 7, "I"),
            _column(heads, 8, "I"),
            _column(heads, 9, "I"),
        )


def _take(values: Sequence[Any], order: list[int]) -> tuple[Any, ...]:
    return itemgetter(*order)(values) if len(order) > 1 else (values[order[0]],)


def _key_order(keys: array[int]) -> tuple[list[int], tuple[int, ...]]:
    """The places of ``keys`` in ascending order, and the keys in that order.

    Sorted by the keys as floats, which Python compares faster than 64-bit integers: a float keeps the order of the
    integers it rounds (so only keys that round to the same float, about one pair in 10**7 buckets of this size,
    can come out of order), and the keys so ordered are checked to ascend; where they do not (keys that close, or
    a key twice), they are sorted as integers."""
    floats = list(map(float, keys))
    order = sorted(range(len(keys)), key=floats.__getitem__)
    ordered = _take(keys, order)
    if not all(map(lt, ordered, islice(ordered, 1, None))):
        order = sorted(range(len(keys)), key=keys.__getitem__)
        ordered = _take(keys, order)
    return order, ordered


def _distinct(ordered: list[tuple[int, ...]]) -> bool:
    """Whether no key is in two of the runs, or twice in one: each run of keys ascending but where one is twice."""
    keys = ordered[0] if len(ordered) == 1 else sorted(chain.from_iterable(ordered))  # sorted runs: merged
    return all(map(lt, keys, islice(keys, 1, None)))


def _reduce_distinct(
    cols: _Columns, data: bytes, order: list[int], ordered: tuple[int, ...]
) -> tuple[SectionRun | None, list[tuple[int, int]]]:
    """One section of a bucket where every key (so every URL) is distinct and no state has a news part: ``order``
    gives the places of its states by key, ``ordered`` their keys."""
    keys, moments = cols.keys, cols.moments
    ends = list(accumulate(map(add, cols.url_lengths, cols.body_lengths)))
    body_starts = list(map(add, [0, *ends[:-1]], cols.url_lengths))
    tombstones: list[tuple[int, int]] = []
    if 1 in cols.kinds:
        kinds = cols.kinds
        tombstones = [(keys[i], moments[i]) for i in order if kinds[i]]
        order = [i for i in order if not kinds[i]]
        if not order:
            return None, tombstones
        ordered = _take(keys, order)
    bodies = map(data.__getitem__, map(slice, _take(body_starts, order), _take(ends, order)))
    run = SectionRun(
        array("Q", ordered),
        array("L", map(add, _take(cols.body_lengths, order), repeat(_CLOSE))),
        array("q", _take(moments, order)),
        array("B", _take(cols.flags, order)),
        URL_CLOSE.join(chain(bodies, [b""])),  # each closed: a last, empty part (not a copy plus URL_CLOSE)
        b"",
        False,
    )
    return run, tombstones


def _reduce_records(groups: dict[str, tuple[bytes, bytes]], keep: set[str], keep_all: bool) -> Reduced:
    """The general reduce: the bucket's states as ``records`` records, ranked in place."""
    data = b"".join(_as_records(section, heads, blob) for section, (heads, blob) in groups.items())
    best: dict[bytes, RecordView] = {}
    for record in scan_records(data):
        current = best.get(record[URL])
        if current is None or outranks(record, current, data):
            best[record[URL]] = record
    live: dict[bytes, list[RecordView]] = defaultdict(list)
    deleted: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for record in best.values():
        if record[KIND] == 0:
            live[record[SECTION]].append(record)
        else:
            deleted[record[SECTION].decode("utf-8", "surrogatepass")].append((record[KEY], record[MOMENT]))
    runs: dict[str, SectionRun] = {}
    for raw_section in sorted(live):
        records = sorted(live[raw_section])  # by key, then URL
        section = raw_section.decode("utf-8", "surrogatepass")
        # Records are kept only where news may show (or text sitemaps are written from them): other files are
        # made of the <url> elements alone.
        kept = keep_all or section in keep
        runs[section] = SectionRun(
            array("Q", map(itemgetter(KEY), records)),
            array("L", [r[END] - r[BODY] + _CLOSE for r in records]),
            array("q", map(itemgetter(MOMENT), records)),
            array("B", map(itemgetter(FLAGS), records)),
            URL_CLOSE.join([*(data[r[BODY] : r[END]] for r in records), b""]),
            b"".join([data[r[START] : r[END]] for r in records]) if kept else b"",
            any(r[NEWS] != r[END] for r in records),
        )
    return runs, {section: sorted(pairs) for section, pairs in deleted.items()}


def _as_records(section: str, heads: bytes, blob: bytes) -> bytes:
    """A group's spilled states as ``records`` records."""
    name = section.encode("utf-8", "surrogatepass")
    out = []
    pos = 0
    for key, kind, version, occurred, moment, news_us, flags, n_url, n_body, n_news in HEAD.iter_unpack(heads):
        body = pos + n_url
        news = body + n_body
        end = news + n_news
        url = blob[pos:body]
        if kind:
            out.append(encode_record(1, (version, occurred), key, moment, url, name))
        else:
            out.append(
                encode_record(
                    0, (version, occurred), key, moment, url, name, blob[body:news], blob[news:end], news_us, flags
                )
            )
        pos = end
    return b"".join(out)
