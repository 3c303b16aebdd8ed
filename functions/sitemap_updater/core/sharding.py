"""Sharding: a stable 64-bit key per page; each file owns a contiguous key range of its section.

A range is one file when its entries fit the limits, otherwise it is split at its midpoint, recursively.
The layout is therefore a pure function of the set of entries: no history, no rebalancing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from sitemap_updater.core.errors import LimitExceeded

KEY_SPACE = 1 << 64
MAX_URLS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 52_428_800
DEFAULT_URLS_PER_FILE = 10_000
MAX_FILES_PER_INDEX = 50_000
MAX_INDEX_FILES = 256  # the largest power of two within the 500 index files Search Console takes for a site
INDEX_NAME = "sitemap.xml"


_KEY_HASH = hashlib.blake2b(digest_size=8)


def page_key(url: str) -> int:
    """Stable 64-bit key of a canonical URL (BLAKE2b, big-endian)."""
    return url_bytes_key(url.encode())


def url_bytes_key(url: bytes) -> int:
    """``page_key`` of a URL already encoded as UTF-8."""
    digest = _KEY_HASH.copy()  # copying a keyed-up hash is cheaper than constructing one
    digest.update(url)
    return int.from_bytes(digest.digest(), "big")


_SLUG_JUNK = re.compile(r"[^a-z0-9]+")
_PLAIN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*", re.ASCII)
SLUG_LENGTH = 40


def section_slug(section: str) -> str:
    """The file-name part of a section, one per section: a plain name (``a-z0-9`` words joined by single hyphens,
    at most 40 characters) as it is; any other as its ASCII slug, ``--`` (which no plain name holds) and 16 hex
    digits of its SHA-256. So ``Blog`` and ``blog--…`` never meet, and two other names share a slug only if 64
    bits of SHA-256 collide (odds below 1e-10 for the 50,000 files an index may name)."""
    if len(section) <= SLUG_LENGTH and _PLAIN.fullmatch(section):
        return section
    folded = unicodedata.normalize("NFKD", section).encode("ascii", "ignore").decode().lower()
    slug = _SLUG_JUNK.sub("-", folded).strip("-")[:SLUG_LENGTH].strip("-") or "section"
    return f"{slug}--{hashlib.sha256(section.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-file limits: URLs (default 10,000 so each rebuild stays small; at most 50,000) and bytes; and the files
    one index may name (50,000; lower only to try several index files on a small site)."""

    max_urls: int = DEFAULT_URLS_PER_FILE
    max_bytes: int = MAX_BYTES_PER_FILE
    max_files_per_index: int = MAX_FILES_PER_INDEX

    def __post_init__(self) -> None:
        if not 1 <= self.max_urls <= MAX_URLS_PER_FILE:
            raise ValueError(f"max URLs per file must be from 1 to {MAX_URLS_PER_FILE:,}")
        if not 1024 <= self.max_bytes <= MAX_BYTES_PER_FILE:
            raise ValueError(f"max bytes per file must be from 1,024 to {MAX_BYTES_PER_FILE:,}")
        if not 1 <= self.max_files_per_index <= MAX_FILES_PER_INDEX:
            raise ValueError(f"max files per index must be from 1 to {MAX_FILES_PER_INDEX:,}")


def text_twin(name: str) -> str:
    """The text sitemap beside a sitemap file: ``sitemap-<section>-<start>.txt`` (the same URLs, one a line)."""
    return name.removesuffix(".xml.gz") + ".txt"


@dataclass(frozen=True, slots=True, order=True)
class KeyRange:
    """The half-open key range ``[start, end)`` owned by one sitemap file; ``depth`` splits from the top."""

    start: int
    end: int
    depth: int

    def file_name(self, section: str) -> str:
        """``sitemap-<section>-<start in hex>.xml.gz``; 8 hex digits suffice for the first 32 splits."""
        start = f"{self.start >> 32:08x}" if self.depth <= 32 else f"{self.start:016x}"
        return f"sitemap-{section_slug(section)}-{start}.xml.gz"

    def contains(self, key: int) -> bool:
        return self.start <= key < self.end


RangeStats = Callable[[int, int], tuple[int, int]]


def plan_ranges(keys: Sequence[int], sizes: Sequence[int], limits: Limits, overhead: int) -> list[KeyRange]:
    """Split the key space of one section until every range fits ``limits``.

    ``keys`` are the sorted keys of the section's entries and ``sizes`` their rendered bytes; ``overhead``
    is the most a file adds around its entries (XML declaration, root element). Empty ranges get no file.
    """
    prefix = [0, *accumulate(sizes)]

    def stats(start: int, end: int) -> tuple[int, int]:
        lo, hi = bisect_left(keys, start), bisect_left(keys, end)
        return hi - lo, prefix[hi] - prefix[lo]

    return plan_with(stats, limits, overhead)


def plan_with(stats: RangeStats, limits: Limits, overhead: int) -> list[KeyRange]:
    """The same plan from a function giving ``(entries, bytes)`` of any key range ``[start, end)``.

    Incremental rebuilds answer from recorded per-file counts and load entries only where a change is, so
    the plan is the one a full build would make without reading the whole section.
    """
    ranges: list[KeyRange] = []
    stack = [(0, KEY_SPACE, 0)]
    while stack:
        start, end, depth = stack.pop()
        count, size = stats(start, end)
        if count == 0:
            continue
        if count <= limits.max_urls and size + overhead <= limits.max_bytes:
            ranges.append(KeyRange(start, end, depth))
            continue
        if count == 1:
            raise LimitExceeded(f"one entry of {size:,} bytes exceeds the per-file limit")
        if end - start == 1:
            raise LimitExceeded(f"{count} entries share one key; they cannot be split to fit the limits")
        mid = (start + end) // 2
        stack.append((mid, end, depth + 1))
        stack.append((start, mid, depth + 1))
    return ranges


def range_lastmod(
    keys: Sequence[int], lastmods: Sequence[int], deleted: Sequence[tuple[int, int]], key_range: KeyRange
) -> int:
    """A file's lastmod from its data: the newest lastmod of its entries, or a later delete in its range."""
    lo, hi = bisect_left(keys, key_range.start), bisect_left(keys, key_range.end)
    newest = max(lastmods[lo:hi], default=0)
    d_lo = bisect_left(deleted, (key_range.start, -1))
    d_hi = bisect_left(deleted, (key_range.end, -1))
    return max([newest, *(deleted_us for _, deleted_us in deleted[d_lo:d_hi])])


def uncovered(key_range: KeyRange, others: list[KeyRange]) -> list[KeyRange]:
    """The parts of ``key_range`` that none of ``others`` (disjoint) covers."""
    parts, start = [], key_range.start
    for other in sorted(others, key=lambda r: r.start):
        if other.end <= start or other.start >= key_range.end:
            continue
        if other.start > start:
            parts.append(KeyRange(start, other.start, key_range.depth))
        start = max(start, other.end)
    if start < key_range.end:
        parts.append(KeyRange(start, key_range.end, key_range.depth))
    return parts
