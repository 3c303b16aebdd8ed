"""Adopt a site's existing sitemaps (an index, XML or text sitemaps; gzip or not) as upsert events, losslessly.

Files are read as streams: gunzipped with a cap on the bytes they give (the protocol's 52,428,800 per file,
and a total), parsed with lxml's pull parser without entities, DTDs or network, and each ``<url>`` is
released once it is converted. Over HTTP(S), redirects are followed only on the hosts adoption may read (the
site's, and the host of the location given). Every field the event contract knows is kept (images with
captions and titles, videos, news, hreflang alternates); a field the contract rejects is dropped with a
warning and its page kept. An event's ``occurred_at`` is the page's lastmod, or :data:`UNKNOWN_TIME` (the
Unix epoch) when it has none or one in the future: adopting an unchanged sitemap again gives the same events,
and a real event for the page outranks it. A page without a lastmod gets ``"lastmod": null``, so none is shown
(none is made up). Whatever could not be read is reported in
``problems`` with its URL.
"""

from __future__ import annotations

import codecs
import http.client
import json
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.event_rules import Horizon
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.urls import Site, UrlError, normalise_host
from sitemap_updater.service.adopt_fields import Dropped, drop_fields, page_event
from sitemap_updater.service.adopt_limits import MAX_FILE_BYTES, MAX_TOTAL_BYTES

_GZIP_MAGIC = b"\x1f\x8b"
UNKNOWN_TIME = "1970-01-01T00:00:00Z"
MAX_REDIRECTS = 5
_CHUNK = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_LINE = 65_536  # characters in a line of a text sitemap (a URL has at most 2,047)
_FIXES = 8  # rounds of dropping rejected fields before a page is given up


class _FileError(Exception):
    """One file cannot be read (fully): the rest of the adoption goes on."""


class _Stop(Exception):
    """The adoption cannot go on (the total cap)."""


@dataclass(slots=True)
class _Warning:
    text: str
    first_page: str
    count: int = 0


@dataclass(slots=True)
class Adoption:
    """One adoption: ``events(location)`` yields upsert events as JSON; counts and reports fill as it reads.

    ``problems``: files or pages that were skipped, each naming its URL (the command exits non-zero).
    ``notes``: things reported that lost nothing (a sitemap listed twice). ``warnings``: dropped fields,
    counted per file and field.
    """

    site: Site
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES
    progress: Callable[[Adoption], None] | None = None
    timeout: float = 60.0
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    files: int = field(default=0, init=False)
    pages: int = field(default=0, init=False)
    bytes_read: int = field(default=0, init=False)
    problems: list[str] = field(default_factory=list, init=False)
    notes: list[str] = field(default_factory=list, init=False)
    warnings: dict[tuple[str, str], _Warning] = field(default_factory=dict, init=False)
    _hosts: set[str] = field(default_factory=set, init=False)

    def events(self, location: str) -> Iterator[str]:
        """Every page of the sitemap, index or text sitemap at ``location`` (a path or an http(s) URL)."""
        self._hosts = {_host(self.site.base_url)}
        if _is_url(location):
            self._hosts.add(_host(location))
        location = location if _is_url(location) else str(Path(location).resolve())
        seen = {location}
        stack = [(location, "")]
        try:
            while stack:
                where, parent = stack.pop()
                children: list[str] = []
                yield from self._read(where, parent, children)
                for child in reversed(children):
                    target = self._child(where, child)
                    if target is None:
                        continue
                    if target in seen:
                        self.notes.append(f"{child} (listed in {where}): already read; not read again")
                        continue
                    seen.add(target)
                    stack.append((target, where))
        except _Stop as exc:
            self.problems.append(str(exc))
        if self.progress is not None:
            self.progress(self)

    @property
    def warning_lines(self) -> list[str]:
        """One line per file and dropped field: how many pages, and the first page with its reason."""
        return [
            f"{where}: warning: {w.count:,} page(s): {w.text} (first: {w.first_page})"
            for (where, _), w in sorted(self.warnings.items())
        ]

    # --- one file ------------------------------------------------------------------------------------
    def _read(self, where: str, parent: str, children: list[str]) -> Iterator[str]:
        named = f"{where} (listed in {parent})" if parent else where
        before = self.pages
        try:
            head, chunks = _peek(self._decoded(self._raw(where)))
            self.files += 1
            if not head:
                raise _FileError("empty")
            if head.startswith(b"<"):
                yield from self._xml(named, chunks, children)
            else:
                yield from self._text(named, chunks)
        except _FileError as exc:
            read = self.pages - before
            after = f"; the {read:,} page(s) before that were adopted" if read else ""
            self.problems.append(f"{named}: {exc}{after}")
        except (OSError, http.client.HTTPException) as exc:
            self.problems.append(f"{named}: cannot be read ({type(exc).__name__}: {exc})")
        if self.progress is not None:
            self.progress(self)

    def _raw(self, where: str) -> Iterator[bytes]:
        if _is_url(where):
            yield from self._http(where)
            return
        path = Path(where)
        if not path.is_file():
            raise _FileError(f"no such file {path}")
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                yield chunk

    def _http(self, url: str) -> Iterator[bytes]:
        for _ in range(MAX_REDIRECTS + 1):
            parts = urlsplit(url)
            kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            connection = kind(parts.hostname or "", parts.port, timeout=self.timeout)
            try:
                target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                headers = {"User-Agent": "sitemap-updater adopt", "Accept-Encoding": "gzip"}
                connection.request("GET", target, headers=headers)
                response = connection.getresponse()
                if response.status in _REDIRECTS:
                    location = urljoin(url, response.getheader("Location") or "")
                    if not _is_url(location) or _host(location) not in self._hosts:
                        raise _FileError(f"redirects to {location}, off the site's host: not followed")
                    url = location
                    continue
                if response.status != 200:
                    raise _FileError(f"HTTP {response.status} {response.reason}")
                while chunk := response.read(_CHUNK):
                    yield chunk
                if response.length:  # http.client ends early, without an error, when the connection closes
                    raise _FileError(f"download cut short: {response.length:,} of the bytes announced never came")
                return
            finally:
                connection.close()
        raise _FileError(f"more than {MAX_REDIRECTS} redirects")

    def _decoded(self, raw: Iterator[bytes]) -> Iterator[bytes]:
        """The file's bytes, gunzipped (twice at most: a gzip file sent with Content-Encoding gzip), capped."""
        chunks = _capped(raw, self.max_file_bytes, "read")
        for _ in range(2):
            magic, chunks = _peek_raw(chunks)
            if magic != b"\x1f\x8b":
                break
            chunks = _capped(_gunzip(chunks), self.max_file_bytes, "uncompressed")
        for chunk in _capped(chunks, self.max_file_bytes, "uncompressed"):
            self.bytes_read += len(chunk)
            if self.bytes_read > self.max_total_bytes:
                raise _Stop(f"adoption stopped: more than {self.max_total_bytes:,} bytes read in all")
            yield chunk

    # --- parsing -------------------------------------------------------------------------------------
    def _xml(self, where: str, chunks: Iterator[bytes], children: list[str]) -> Iterator[str]:
        parser = etree.XMLPullParser(
            events=("start", "end"),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        root: Any = None
        try:
            for chunk in chunks:
                parser.feed(chunk)
                for action, found in parser.read_events():
                    element: Any = found
                    if root is None:
                        root = element
                        _check_root(element)
                    elif action == "end" and element.getparent() is root:
                        yield from self._element(where, element, children)
                        element.clear()
                        while element.getprevious() is not None:
                            del root[0]
            parser.close()
        except etree.XMLSyntaxError as exc:
            raise _FileError(f"not well-formed XML, or cut short ({exc.msg})") from None

    def _element(self, where: str, element: Any, children: list[str]) -> Iterator[str]:
        name = etree.QName(element).localname
        if name == "sitemap":
            loc = element.find("{*}loc")
            children.append((loc.text or "").strip() if loc is not None else "")
        elif name == "url":
            body = self._page(where, *page_event(element, UNKNOWN_TIME))
            if body is not None:
                yield body

    def _text(self, where: str, chunks: Iterator[bytes]) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        pending = ""
        try:
            for chunk in chunks:
                lines = (pending + decoder.decode(chunk)).split("\n")
                pending = lines.pop()
                if len(pending) > _MAX_LINE:  # no URL is that long: this is no text sitemap
                    raise _FileError(f"not a sitemap (a line of more than {_MAX_LINE:,} characters)")
                for line in lines:
                    yield from self._text_line(where, line)
            yield from self._text_line(where, pending + decoder.decode(b"", final=True))
        except UnicodeDecodeError:
            raise _FileError("a text sitemap that is not UTF-8") from None

    def _text_line(self, where: str, line: str) -> Iterator[str]:
        url = line.strip()
        if url:
            body = self._page(where, {"type": "upsert", "url": url, "occurred_at": UNKNOWN_TIME}, [])
            if body is not None:
                yield body

    def _page(self, where: str, event: dict[str, Any], dropped: Dropped) -> str | None:
        """The event as JSON once valid, after dropping each field the contract rejects (with a warning)."""
        url = str(event.get("url") or "(no loc)")
        for name, why in dropped:
            self._warn(where, name, why, url)
        if _later_than(event["occurred_at"], self.now):  # a future lastmod must not make real changes stale
            self._warn(where, "lastmod", "in the future: kept, but it does not order the page's changes", url)
            event["occurred_at"] = UNKNOWN_TIME
        for _ in range(_FIXES):
            try:
                parsed = parse_event(event, self.site, Horizon.at(self.now))
            except EventRejected as exc:
                fields = [p.field for p in exc.problems]
                if not drop_fields(event, fields, UNKNOWN_TIME):
                    self.problems.append(f"{where}: page {url} skipped: {exc}")
                    return None
                for problem in exc.problems:  # occurred_at is the lastmod: one warning for both
                    if problem.field != "occurred_at" or "lastmod" not in fields:
                        self._warn(where, problem.field, f"{problem.reason}: dropped, the page kept", url)
                continue
            self.pages += 1
            if self.progress is not None and self.pages % 1000 == 0:
                self.progress(self)
            adopted = parsed.event.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
            if parsed.event.lastmod is None:
                adopted["lastmod"] = None  # the sitemap gave none (or one dropped): none is shown, none made up
            return json.dumps(adopted, ensure_ascii=False, separators=(",", ":"))
        self.problems.append(f"{where}: page {url} skipped: too many invalid fields")
        return None

    def _warn(self, where: str, name: str, why: str, url: str) -> None:
        """Count a dropped field per file, field and kind of reason (the values in it aside)."""
        key = (where, f"{name.translate(_NO_DIGITS)}: {_QUOTED.sub('', why)}")
        found = self.warnings.setdefault(key, _Warning(f"{name}: {why}", url))
        found.count += 1

    def _child(self, parent: str, child: str) -> str | None:
        """Where a sitemap an index lists is read from, or None (reported) when it may not be."""
        if not _is_url(child):
            self.problems.append(f"{child or '(empty loc)'} (listed in {parent}): not an http(s) URL; not read")
            return None
        if _host(child) not in self._hosts:
            self.problems.append(
                f"{child} (listed in {parent}): on another host than the site's ({self.site.netloc}); not read"
            )
            return None
        if _is_url(parent):
            return child.partition("#")[0]
        name = urlsplit(child).path.rsplit("/", 1)[-1]  # a copy on disk: the file of that name beside the index
        return str((Path(parent).parent / name).resolve())


_NO_DIGITS = str.maketrans("", "", "0123456789")
_QUOTED = re.compile(r"'[^']*'")


def _later_than(text: str, now: datetime) -> bool:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return False  # validation will say what is wrong with it
    return moment.tzinfo is not None and moment > now


def _check_root(element: Any) -> None:
    name = etree.QName(element).localname
    if name not in ("urlset", "sitemapindex"):
        raise _FileError(f"not a sitemap (root element <{name}>)")


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def _host(url: str) -> str:
    """Host and port (when not the default), compared to decide whether a URL may be read."""
    parts = urlsplit(url)
    try:
        host, port = normalise_host(parts.hostname or ""), parts.port
    except (UrlError, ValueError):
        return ""
    return host if port in (None, 80, 443) else f"{host}:{port}"


def _peek_raw(chunks: Iterator[bytes]) -> tuple[bytes, Iterator[bytes]]:
    """The stream's first two bytes, and the whole stream again."""
    read: list[bytes] = []
    for chunk in chunks:
        read.append(chunk)
        if sum(map(len, read)) >= 2:
            break
    first = b"".join(read)
    return first[:2], _chain(first, chunks)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _capped(chunks: Iterator[bytes], limit: int, kind: str) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise _FileError(f"more than {limit:,} bytes {kind}, the limit per file; read stopped there")
        yield chunk


def _peek(chunks: Iterator[bytes]) -> tuple[bytes, Iterator[bytes]]:
    """The stream's first bytes past a byte order mark and white space (b"" when there are none), and the
    whole stream again."""
    read: list[bytes] = []
    for chunk in chunks:
        read.append(chunk)
        head = chunk.lstrip(b"\xef\xbb\xbf \t\r\n")
        if head:
            return head[:2], _chain(b"".join(read), chunks)
    return b"", iter(read)


def _gunzip(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Gunzip a stream of one or more gzip members, never more than a chunk at a time; zero bytes or bytes
    that start no member after the last one (padding) are ignored, as gzip does. A later member that starts as
    one (gzip's magic number) but is damaged is an error, as gzip reports it."""
    inflate, finished, fed, produced, padding = zlib.decompressobj(wbits=31), 0, False, False, True
    head = b""  # the first bytes given to the member being read
    for data in chunks:
        while data or fed:
            if finished and not produced:
                padding = padding and not data.strip(b"\0")
            if len(head) < len(_GZIP_MAGIC):
                head += data[: len(_GZIP_MAGIC) - len(head)]
            try:
                piece = inflate.decompress(data, _CHUNK)
            except zlib.error as exc:
                if finished and not produced and not head.startswith(_GZIP_MAGIC):
                    return
                raise _FileError(f"not valid gzip ({exc})") from None
            fed, produced = fed or bool(data), produced or bool(piece)
            if piece:
                yield piece
            if inflate.eof:
                data, finished = inflate.unused_data, finished + 1
                inflate, fed, produced, padding, head = zlib.decompressobj(wbits=31), False, False, True, b""
                continue
            data = inflate.unconsumed_tail
            if not data and len(piece) < _CHUNK:
                break
    if fed and not (finished and not produced and padding):
        raise _FileError("gzip data cut short")
