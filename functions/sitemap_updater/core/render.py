"""Byte-stable rendering of sitemap files and the index, with deterministic gzip."""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sitemap_updater.core.entry import (
    FLAG_IMAGE,
    FLAG_NEWS,
    FLAG_VIDEO,
    FLAG_XHTML,
    URL_CLOSE,
    Entry,
    w3c_micros,
)
from sitemap_updater.core.errors import LimitExceeded
from sitemap_updater.core.sharding import INDEX_NAME, MAX_BYTES_PER_FILE, MAX_FILES_PER_INDEX, MAX_INDEX_FILES

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
EXTENSION_NS = (
    (FLAG_IMAGE, "image", "http://www.google.com/schemas/sitemap-image/1.1"),
    (FLAG_VIDEO, "video", "http://www.google.com/schemas/sitemap-video/1.1"),
    (FLAG_NEWS, "news", "http://www.google.com/schemas/sitemap-news/0.9"),
    (FLAG_XHTML, "xhtml", "http://www.w3.org/1999/xhtml"),
)
XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_CLOSE = b"</urlset>\n"
NEWS_WINDOW_US = 2 * 86_400 * 1_000_000
MAX_NEWS_PER_FILE = 1000
GZIP_LEVEL = 6
# Fixed gzip header: no mtime, no file name, OS "unknown", so the bytes are the same on every machine.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_PARTS_PER_WRITE = 4096


def urlset_open(flags: int) -> bytes:
    """XML declaration and ``<urlset>`` declaring only the namespaces the file uses."""
    declarations = [f'xmlns="{SITEMAP_NS}"']
    declarations += [f'xmlns:{prefix}="{uri}"' for flag, prefix, uri in EXTENSION_NS if flags & flag]
    return XML_DECLARATION + f"<urlset {' '.join(declarations)}>\n".encode()


FILE_OVERHEAD = len(urlset_open(FLAG_IMAGE | FLAG_VIDEO | FLAG_NEWS | FLAG_XHTML)) + len(URLSET_CLOSE)


@dataclass(frozen=True, slots=True)
class RenderedFile:
    """A rendered file: its gzip bytes, the sha256 of the uncompressed XML, and counts."""

    data: bytes
    sha256: str
    url_count: int
    xml_bytes: int
    news_until_us: int = 0  # when the oldest news entry it shows turns two days old (0: none shown)


class DeterministicGzip:
    """Streams XML into gzip bytes that depend only on the input (mtime 0, no name, fixed OS byte)."""

    def __init__(self, level: int = GZIP_LEVEL) -> None:
        self._deflate = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 9)
        self._parts = [_GZIP_HEADER]
        self._crc = 0
        self._size = 0
        self._digest = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        self._digest.update(data)
        self._parts.append(self._deflate.compress(data))

    def finish(self) -> tuple[bytes, str, int]:
        """Return (gzip bytes, sha256 hex of the uncompressed input, uncompressed size)."""
        self._parts.append(self._deflate.flush())
        self._parts.append(struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))
        return b"".join(self._parts), self._digest.hexdigest(), self._size


def news_included(entries: Sequence[Entry], as_of_us: int) -> set[int]:
    """Indexes of entries whose news part is rendered: published in the last two days (relative to
    ``as_of_us``), the newest 1,000 at most."""
    return _fresh([(i, e.news, e.news_us, e.url) for i, e in enumerate(entries) if e.news], as_of_us)


def _fresh(news: list[tuple[int, bytes, int, str]], as_of_us: int) -> set[int]:
    fresh = [item for item in news if item[2] >= as_of_us - NEWS_WINDOW_US]
    if len(fresh) > MAX_NEWS_PER_FILE:
        fresh.sort(key=lambda item: (-item[2], item[3]))
        fresh = fresh[:MAX_NEWS_PER_FILE]
    return {item[0] for item in fresh}


def render_urlset(entries: Sequence[Entry], as_of_us: int, level: int = GZIP_LEVEL) -> RenderedFile:
    """Render one sitemap file from entries sorted by ``sort_key``; ``as_of_us`` decides which news is fresh."""
    flags = 0
    for entry in entries:
        flags |= entry.flags
    news = [(i, e.news, e.news_us, e.url) for i, e in enumerate(entries) if e.news]
    return render_parts([e.body for e in entries], news, flags, as_of_us, level)


def render_parts(
    bodies: list[bytes], news: list[tuple[int, bytes, int, str]], flags: int, as_of_us: int, level: int = GZIP_LEVEL
) -> RenderedFile:
    """``render_urlset`` of entries given as their parts: each one's ``body`` (in order), the news parts (index,
    part, ``news_us``, URL) of those that have one, and their flags ORed."""
    with_news = _fresh(news, as_of_us)
    if not with_news:
        runs = [URL_CLOSE.join(bodies), URL_CLOSE] if bodies else []
        return render_elements(runs, len(bodies), flags, level)
    parts: list[bytes] = []
    by_index = {index: part for index, part, _, _ in news if index in with_news}
    for index, body in enumerate(bodies):
        parts.append(body)
        if index in by_index:
            parts.append(by_index[index])
        parts.append(URL_CLOSE)
    news_until = min(news_us for index, _, news_us, _ in news if index in with_news) + NEWS_WINDOW_US
    return _gzip_urlset(flags | FLAG_NEWS, parts, len(bodies), level, news_until)


def render_elements(runs: list[bytes], count: int, flags: int, level: int = GZIP_LEVEL) -> RenderedFile:
    """Render a file that shows no news from runs of complete ``<url>`` elements holding ``count`` entries."""
    return _gzip_urlset(flags, runs, count, level, 0)


def _gzip_urlset(flags: int, parts: list[bytes], count: int, level: int, news_until: int) -> RenderedFile:
    gz = DeterministicGzip(level)
    gz.write(urlset_open(flags))
    for start in range(0, len(parts), _PARTS_PER_WRITE):
        gz.write(b"".join(parts[start : start + _PARTS_PER_WRITE]))
    gz.write(URLSET_CLOSE)
    data, digest, size = gz.finish()
    return RenderedFile(data, digest, count, size, news_until)


def render_text(urls: Iterable[str]) -> bytes:
    """A text sitemap: the URLs one a line, UTF-8, in the order of the sitemap file it stands beside."""
    return "".join(f"{url}\n" for url in urls).encode()


@dataclass(frozen=True, slots=True, order=True)
class IndexItem:
    """One file named by the index, with the lastmod its data gives it (0: none of its pages has one)."""

    name: str
    lastmod_us: int


def render_index(base_url: str, items: Iterable[IndexItem]) -> bytes:
    """One sitemap index file (plain XML), files sorted by name; at most 50,000 of them."""
    ordered = sorted(items)
    if len(ordered) > MAX_FILES_PER_INDEX:
        raise LimitExceeded(f"{len(ordered):,} sitemap files exceed one index's limit of {MAX_FILES_PER_INDEX:,}")
    parts = [XML_DECLARATION, f'<sitemapindex xmlns="{SITEMAP_NS}">\n'.encode()]
    parts += [
        f"<sitemap><loc>{base_url}/{item.name}</loc>{_index_lastmod(item.lastmod_us)}</sitemap>\n".encode()
        for item in ordered
    ]
    parts.append(b"</sitemapindex>\n")
    data = b"".join(parts)
    if len(data) > MAX_BYTES_PER_FILE:
        raise LimitExceeded(
            f"an index of {len(ordered):,} files takes {len(data):,} bytes, over {MAX_BYTES_PER_FILE:,}"
        )
    return data


INDEX_FILE_PREFIX = "sitemap-index-"
_FURTHER_INDEX = re.compile(r"sitemap-index-[1-9][0-9]*\.xml")  # no section file looks so: theirs end .xml.gz


def is_further_index(name: str) -> bool:
    """Whether ``name`` is an index file past ``sitemap.xml`` (``sitemap-index-<n>.xml``)."""
    return _FURTHER_INDEX.fullmatch(name) is not None


def index_name(bucket: int) -> str:
    """The name of index file ``bucket``: ``sitemap.xml`` (always there) for 0, ``sitemap-index-<n>.xml`` else."""
    return INDEX_NAME if bucket == 0 else f"{INDEX_FILE_PREFIX}{bucket}.xml"


def _bucket(name: str, buckets: int) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % buckets


def split_index(items: Iterable[IndexItem], max_entries: int = MAX_FILES_PER_INDEX) -> dict[str, list[IndexItem]]:
    """The index files a site needs, each with the files it names: one ``sitemap.xml`` while the site has at most
    ``max_entries`` files; beyond, the files are spread by a hash of their names over the fewest power-of-two
    index files that each stay within the limit. A pure function of the set of files, and a file added or
    removed changes one index file only (unless the count of index files doubles or halves, or ``sitemap.xml``'s
    own share is empty: it then names the file of the first name)."""
    ordered = sorted(items)
    buckets = 1
    while True:
        split: list[list[IndexItem]] = [[] for _ in range(buckets)]
        for item in ordered:
            split[_bucket(item.name, buckets) if buckets > 1 else 0].append(item)
        if max(len(part) for part in split) <= max_entries:
            if not split[0] and ordered:
                # An index names at least one sitemap (the schema's minOccurs), and sitemap.xml is always there:
                # its hash bucket empty (only where an index may name few files), it names the first file.
                split[_bucket(ordered[0].name, buckets)].remove(ordered[0])
                split[0].append(ordered[0])
            return {index_name(n): part for n, part in enumerate(split) if part or n == 0}
        buckets *= 2
        if buckets > MAX_INDEX_FILES:
            raise LimitExceeded(
                f"{len(ordered):,} sitemap files need more than {MAX_INDEX_FILES} index files of "
                f"{max_entries:,}; name fewer sections (the Sections setting, --sections, or fewer distinct "
                "section fields in the events) or raise the URLs per file (MaxUrlsPerFile, --max-urls-per-file)"
            )


def render_indexes(
    base_url: str, items: Iterable[IndexItem], max_entries: int = MAX_FILES_PER_INDEX
) -> dict[str, bytes]:
    """Every index file of a site by name (``split_index``), rendered."""
    return {name: render_index(base_url, part) for name, part in split_index(items, max_entries).items()}


def _index_lastmod(lastmod_us: int) -> str:
    """A file's ``<lastmod>`` in the index; none for a file none of whose pages has one (0)."""
    return f"<lastmod>{w3c_micros(lastmod_us)}</lastmod>" if lastmod_us else ""
