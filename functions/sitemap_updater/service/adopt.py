"""Adopt a site's existing sitemaps (an index, XML or text sitemaps; gzip or not) as upsert events, losslessly.

Files are read as streams (``adopt_stream``): gunzipped with a cap on the bytes they give (the protocol's
52,428,800 per file, and a total), within a time per file and for the whole adoption, parsed with lxml's pull
parser without entities, DTDs or network, and each ``<url>`` is released once it is converted. Over HTTP(S),
redirects are followed only on the hosts adoption may read (the site's, and the host of the location given).
Indexes are followed three deep at most, 50,000 sitemaps each, 100,000 files in all, each file once (its URL
canonicalised). Every field the event contract knows is kept (images with captions and titles, videos, news,
hreflang alternates); a field the contract rejects is dropped with a warning and its page kept. An event's
``occurred_at`` is the page's lastmod, or :data:`UNKNOWN_TIME` (the Unix epoch) when it has none or one in the
future: adopting an unchanged sitemap again gives the same events, and a real event for the page outranks it. A
page without a lastmod gets ``"lastmod": null``, so none is shown (none is made up). Whatever could not be read
is reported in ``problems`` with its URL, counted per kind with the first few of each (``adopt_findings``).
"""

from __future__ import annotations

import codecs
import http.client
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lxml import etree

from sitemap_updater.core.entry import moment_micros
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.event_rules import Horizon
from sitemap_updater.core.events import PageEvent, parse_event
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.render import NEWS_WINDOW_US
from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt_fields import Dropped, check_root, drop_fields, page_event, syntax_error
from sitemap_updater.service.adopt_findings import Findings, Warnings, kind_of
from sitemap_updater.service.adopt_limits import (
    FILE_SECONDS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_SECONDS,
    MAX_SITEMAPS_PER_INDEX,
    MAX_TOTAL_BYTES,
    SOCKET_SECONDS,
)
from sitemap_updater.service.adopt_stream import (
    GZIP_MAGIC,
    FileError,
    Stop,
    Timing,
    capped,
    file_chunks,
    file_key,
    gunzip,
    host_of,
    http_chunks,
    is_url,
    peek_bytes,
    peek_head,
)

UNKNOWN_TIME = "1970-01-01T00:00:00Z"
_MAX_LINE = 65_536  # characters in a line of a text sitemap (a URL has at most 2,047)
_FIXES = 8  # rounds of dropping rejected fields before a page is given up
_SNIFF = 64  # bytes of UTF-16 looked at for the first character
_UTF16 = {b"\xff\xfe": "utf-16", b"\xfe\xff": "utf-16", b"<\x00": "utf-16-le", b"\x00<": "utf-16-be"}


@dataclass(slots=True)
class _Index:
    """The sitemaps one index lists: the first ``MAX_SITEMAPS_PER_INDEX``, and how many more there were."""

    children: list[str] = field(default_factory=list)
    more: int = 0


@dataclass(slots=True)
class Adoption:
    """One adoption: ``events(location)`` yields upsert events as JSON; counts and reports fill as it reads.

    ``problems``: files or pages that were skipped, each naming its URL (the command exits non-zero), as lines:
    the first few of each kind, then how many more (``problem_count`` counts them all). ``notes``: things
    reported that lost nothing (a sitemap listed twice). ``warning_lines``: dropped fields, counted per file and
    field. Limits: ``max_depth`` indexes below one another, ``max_files`` files, ``max_seconds`` for the whole
    adoption, ``file_seconds`` for one file, ``timeout`` for one network operation.
    """

    site: Site
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES
    progress: Callable[[Adoption], None] | None = None
    timeout: float = SOCKET_SECONDS
    max_depth: int = MAX_DEPTH
    max_files: int = MAX_FILES
    max_seconds: float = MAX_SECONDS
    file_seconds: float = FILE_SECONDS
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    files: int = field(default=0, init=False)
    pages: int = field(default=0, init=False)
    bytes_read: int = field(default=0, init=False)
    _problems: Findings = field(default_factory=Findings, init=False, repr=False)
    _notes: Findings = field(default_factory=Findings, init=False, repr=False)
    _warnings: Warnings = field(default_factory=Warnings, init=False, repr=False)
    _hosts: set[str] = field(default_factory=set, init=False, repr=False)
    _seen: set[bytes] = field(default_factory=set, init=False, repr=False)
    _timing: Timing = field(default_factory=lambda: Timing(0.0, 0.0, 0.0, 0.0), init=False, repr=False)

    def events(self, location: str) -> Iterator[str]:
        """Every page of the sitemap, index or text sitemap at ``location`` (a path or an http(s) URL)."""
        self._hosts = {host_of(self.site.base_url)}
        if is_url(location):
            self._hosts.add(host_of(location))
        start = time.monotonic()
        self._timing = Timing(start + self.max_seconds, self.max_seconds, self.file_seconds, self.timeout)
        location = location if is_url(location) else str(Path(location).resolve())
        self._seen = {file_key(location, self.site.session_params)}
        levels: list[tuple[str, int, Iterator[str]]] = []  # an index, the depth of its sitemaps, those left
        try:
            yield from self._file(location, "", 0, levels)
            while levels:
                parent, depth, children = levels[-1]
                child = next(children, None)
                if child is None:
                    levels.pop()
                    continue
                target = self._child(parent, child)
                if target is None:
                    continue
                key = file_key(target, self.site.session_params)
                if key in self._seen:
                    self._notes.add("again", f"{child} (listed in {parent}): already read; not read again")
                    continue
                if self.files >= self.max_files:
                    raise Stop(
                        f"adoption stopped: {self.max_files:,} files read, the most an adoption reads; {child} "
                        f"(listed in {parent}) and the sitemaps after it not read"
                    )
                self._seen.add(key)
                yield from self._file(target, parent, depth, levels)
        except Stop as exc:
            self._problems.add("stop", str(exc))
        if self.progress is not None:
            self.progress(self)

    @property
    def problems(self) -> list[str]:
        return self._problems.lines

    @property
    def problem_count(self) -> int:
        return self._problems.count

    @property
    def notes(self) -> list[str]:
        return self._notes.lines

    @property
    def warning_lines(self) -> list[str]:
        """One line per file and dropped field: how many pages, and the first page with its reason."""
        return self._warnings.lines

    # --- one file ------------------------------------------------------------------------------------
    def _file(self, where: str, parent: str, depth: int, levels: list[tuple[str, int, Iterator[str]]]) -> Iterator[str]:
        """Read one file; an index's sitemaps are followed while the index is at most ``max_depth`` deep."""
        index = _Index()
        yield from self._read(where, parent, index)
        named = f"{where} (listed in {parent})" if parent else where
        if index.more:
            self._problem(
                named,
                f"lists {MAX_SITEMAPS_PER_INDEX + index.more:,} sitemaps, more than the protocol's "
                f"{MAX_SITEMAPS_PER_INDEX:,} an index may list: the {index.more:,} after the first "
                f"{MAX_SITEMAPS_PER_INDEX:,} not read",
            )
        if index.children and depth >= self.max_depth:
            self._problem(
                named,
                f"an index below {depth} other indexes: the {len(index.children):,} sitemap(s) it lists not read "
                f"(adoption follows indexes {self.max_depth} deep at most; the protocol has no index of indexes)",
            )
        elif index.children:
            levels.append((where, depth + 1, iter(index.children)))

    def _read(self, where: str, parent: str, index: _Index) -> Iterator[str]:
        named = f"{where} (listed in {parent})" if parent else where
        before = self.pages
        try:
            self._timing.check()
            raw = http_chunks(where, self._hosts, self._timing) if is_url(where) else self._local(where)
            chunks = self._decoded(raw)
            first, chunks = peek_bytes(chunks, 4)
            self.files += 1
            if first.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
                raise FileError("encoded in UTF-32 (its byte order mark says so): a sitemap must be UTF-8; not read")
            encoding = _UTF16.get(first[:2], "utf-8-sig")
            if encoding == "utf-8-sig":
                head, chunks = peek_head(chunks, b"\xef\xbb\xbf \t\r\n")
            else:
                self._notes.add("utf-16", f"{named}: encoded in UTF-16, not the UTF-8 the protocol requires; read "
                                "as UTF-16")  # fmt: skip
                first, chunks = peek_bytes(chunks, _SNIFF)
                text = codecs.decode(first[:_SNIFF], encoding, "replace").lstrip("\ufeff \t\r\n")
                head = text[:1].encode() or (b" " if len(first) >= _SNIFF else b"")  # white space so far: text
            if not head:
                raise FileError("empty")
            if head.startswith(b"<"):
                yield from self._xml(named, chunks, index)
            else:
                yield from self._text(named, chunks, encoding)
        except FileError as exc:
            read = self.pages - before
            after = f"; the {read:,} page(s) before that were adopted" if read else ""
            self._problem(named, f"{exc}{after}")
        except (OSError, http.client.HTTPException) as exc:
            self._problem(named, f"cannot be read ({type(exc).__name__}: {exc})")
        if self.progress is not None:
            self.progress(self)

    def _local(self, where: str) -> Iterator[bytes]:
        if not Path(where).is_file():
            raise FileError("no such file")
        return file_chunks(where)

    def _decoded(self, raw: Iterator[bytes]) -> Iterator[bytes]:
        """The file's bytes, gunzipped (twice at most: a gzip file sent with Content-Encoding gzip), capped."""
        chunks = capped(raw, self.max_file_bytes, "read")
        for _ in range(2):
            magic, chunks = peek_bytes(chunks, 2)
            if magic[:2] != GZIP_MAGIC:
                break
            chunks = capped(gunzip(chunks), self.max_file_bytes, "uncompressed")
        for chunk in capped(chunks, self.max_file_bytes, "uncompressed"):
            self.bytes_read += len(chunk)
            if self.bytes_read > self.max_total_bytes:
                limit = self.max_total_bytes
                raise Stop(f"adoption stopped: more than {limit:,} bytes read in all, its limit (--max-total-bytes)")
            self._timing.check()
            yield chunk

    def _problem(self, named: str, reason: str) -> None:
        self._problems.add(f"file: {kind_of(reason)}", f"{named}: {reason}")

    # --- parsing -------------------------------------------------------------------------------------
    def _xml(self, where: str, chunks: Iterator[bytes], index: _Index) -> Iterator[str]:
        parser = etree.XMLPullParser(
            events=("end",),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        root: Any = None
        etree.clear_error_log()  # the log is the thread's: its first error is then this file's
        try:
            for chunk in chunks:
                parser.feed(chunk)
                for _, found in parser.read_events():
                    element: Any = found
                    if root is None:  # the first element to end: the root is known by then
                        root = element.getroottree().getroot()
                        check_root(root)
                    if element.getparent() is root:
                        body = self._element(where, element, index)
                        if body is not None:
                            yield body
                        element.clear()
                        while element.getprevious() is not None:
                            del root[0]
            parser.close()
        except etree.XMLSyntaxError as exc:
            raise FileError(f"not well-formed XML, or cut short ({syntax_error(exc)})") from None

    def _element(self, where: str, element: Any, index: _Index) -> str | None:
        tag = element.tag
        name = tag.rpartition("}")[2] if isinstance(tag, str) else ""
        if name == "sitemap":
            if len(index.children) >= MAX_SITEMAPS_PER_INDEX:
                index.more += 1
                return None
            loc = element.find("{*}loc")
            index.children.append((loc.text or "").strip() if loc is not None else "")
        elif name == "url":
            loc = element.find("{*}loc")
            if loc is None or not (loc.text or "").strip():
                self._problems.add(f"{where}\0no loc", f"{where}: page without a <loc> skipped")
                return None
            return self._page(where, *page_event(element, UNKNOWN_TIME))
        return None

    def _text(self, where: str, chunks: Iterator[bytes], encoding: str) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder(encoding)()
        pending = ""
        try:
            for chunk in chunks:
                lines = (pending + decoder.decode(chunk)).split("\n")
                pending = lines.pop()
                if len(pending) > _MAX_LINE:  # no URL is that long: this is no text sitemap
                    raise FileError(f"not a sitemap (a line of more than {_MAX_LINE:,} characters)")
                for line in lines:
                    yield from self._text_line(where, line)
            yield from self._text_line(where, pending + decoder.decode(b"", final=True))
        except UnicodeDecodeError:
            raise FileError(f"a text sitemap that is not {'UTF-8' if encoding == 'utf-8-sig' else 'UTF-16'}") from None

    def _text_line(self, where: str, line: str) -> Iterator[str]:
        url = line.strip().lstrip("\ufeff")
        if url:
            body = self._page(where, {"type": "upsert", "url": url, "occurred_at": UNKNOWN_TIME}, [])
            if body is not None:
                yield body

    def _page(self, where: str, event: dict[str, Any], dropped: Dropped) -> str | None:
        """The event as JSON once valid, after dropping each field the contract rejects (with a warning)."""
        url = str(event.get("url") or "(no loc)")
        for name, why in dropped:
            self._warnings.add(where, name, why, url)
        if _later_than(event["occurred_at"], self.now):  # a future lastmod must not make real changes stale
            self._warnings.add(where, "lastmod", "in the future: kept, but it does not order the page's changes", url)
            event["occurred_at"] = UNKNOWN_TIME
        for _ in range(_FIXES):
            try:
                parsed = parse_event(event, self.site, Horizon.at(self.now))
            except EventRejected as exc:
                fields = [p.field for p in exc.problems]
                if not drop_fields(event, fields, UNKNOWN_TIME):
                    self._problems.add(f"{where}\0page: {kind_of(str(exc))}", f"{where}: page {url} skipped: {exc}")
                    return None
                for problem in exc.problems:  # occurred_at is the lastmod: one warning for both
                    if problem.field != "occurred_at" or "lastmod" not in fields:
                        self._warnings.add(where, problem.field, f"{problem.reason}: dropped, the page kept", url)
                continue
            self.pages += 1
            if self.progress is not None and self.pages % 1000 == 0:
                self.progress(self)
            self._old_news(where, parsed.event, url)
            adopted = parsed.event.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
            if parsed.event.lastmod is None:
                adopted["lastmod"] = None  # the sitemap gave none (or one dropped): none is shown, none made up
            return json.dumps(adopted, ensure_ascii=False, separators=(",", ":"))
        self._problems.add(f"{where}\0fixes", f"{where}: page {url} skipped: too many invalid fields")
        return None

    def _old_news(self, where: str, event: PageEvent, url: str) -> None:
        """A warning for news the published file will not show: Google News lists an article for two days."""
        if event.news is not None and moment_micros(event.news.publication_date) < to_micros(self.now) - NEWS_WINDOW_US:
            shown = event.news.publication_date.isoformat()
            self._warnings.add(
                where,
                "news",
                f"published {shown!r}, more than two days before the adoption: kept with the page, but not shown "
                "(a news sitemap lists an article for two days after its publication)",
                url,
            )

    def _child(self, parent: str, child: str) -> str | None:
        """Where a sitemap an index lists is read from, or None (reported) when it may not be."""
        if not is_url(child):
            shown = child or "(empty loc)"
            self._problems.add("child: not a URL", f"{shown} (listed in {parent}): not an http(s) URL; not read")
            return None
        if host_of(child) not in self._hosts:
            self._problems.add(
                "child: host",
                f"{child} (listed in {parent}): on another host than the site's ({self.site.netloc}); not read",
            )
            return None
        if is_url(parent):
            return child.partition("#")[0]
        name = urlsplit(child).path.rsplit("/", 1)[-1]  # a copy on disk: the file of that name beside the index
        return str((Path(parent).parent / name).resolve())


def _later_than(text: str, now: datetime) -> bool:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return False  # validation will say what is wrong with it
    return moment.tzinfo is not None and moment > now
