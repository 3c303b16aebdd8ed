"""Verify a published site as a crawler reads it: robots.txt, then the index files, then every sitemap they name.

Each file is checked for what a crawler would trip on: its HTTP status, ``Content-Type``, ``Content-Encoding``
and ``Cache-Control``; well-formed XML (or a text sitemap) in the sitemap namespace, valid against the official
schemas when a folder of them is given; the limits (50,000 entries and 52,428,800 bytes uncompressed); every URL
absolute, on the site's host and in the form the URL rules give it, listed once; no lastmod in the future; and
each index entry's lastmod no older than the newest lastmod of the file it names (what the index claims of a file
is what a crawler finds in it; later is right when a page of the file was deleted since). ``problems`` break a
rule; ``notes`` are worth knowing and break none.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lxml import etree

from sitemap_updater.core.event_rules import parse_w3c
from sitemap_updater.core.sharding import INDEX_NAME, MAX_BYTES_PER_FILE, MAX_FILES_PER_INDEX, MAX_URLS_PER_FILE
from sitemap_updater.core.urls import Site, UrlError, canonical_page_url
from sitemap_updater.ports import Fetch, Fetched

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CLOCK_SKEW_S = 300  # a lastmod this far ahead of now is still taken as the present (clocks differ)
_XML_TYPES = ("application/xml", "text/xml")
_GZIP_TYPES = ("application/gzip", "application/x-gzip")
_TEXT_TYPES = ("text/plain",)


@dataclass(slots=True)
class FileCheck:
    """One file as read: what it answered, what it holds, and what is wrong with it."""

    url: str
    kind: str  # robots.txt, index, sitemap (XML), text sitemap
    status: int | None = None
    content_type: str = ""
    content_encoding: str = ""
    cache_control: str = ""
    bytes: int = 0  # uncompressed
    entries: int = 0  # URLs of a sitemap, sitemaps of an index
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Verification:
    """Every file read, the pages found, and the problems (each naming its file)."""

    location: str
    files: list[FileCheck] = field(default_factory=list)
    pages: int = 0

    @property
    def problems(self) -> list[str]:
        return [f"{f.url}: {p}" for f in self.files for p in f.problems]

    @property
    def notes(self) -> list[str]:
        return [f"{f.url}: {n}" for f in self.files for n in f.notes]

    def as_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "pages": self.pages,
            "files": [f.as_dict() for f in self.files],
            "problems": self.problems,
            "notes": self.notes,
        }


@dataclass(frozen=True, slots=True)
class Schemas:
    """The official schemas (a folder holding ``all-urlset.xsd`` and ``siteindex.xsd``), when given."""

    urlset: etree.XMLSchema
    index: etree.XMLSchema

    @classmethod
    def load(cls, folder: Path) -> Schemas:
        return cls(_schema(folder / "all-urlset.xsd"), _schema(folder / "siteindex.xsd"))


def _schema(path: Path) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(path)))


def verify(
    location: str,
    site: Site,
    fetch: Fetch,
    now: datetime | None = None,
    schemas: Schemas | None = None,
    progress: Callable[[Verification], None] | None = None,
) -> Verification:
    """Read the site at ``location`` (its root: robots.txt first; or an index or sitemap URL) and check it. The
    pages and sitemaps must be on ``site``; when ``location`` is on another origin (a staging host, the bucket's
    own endpoint), the site's URLs are read from there."""
    parts = urlsplit(location)
    origin = f"{parts.scheme}://{parts.netloc}"
    run = _Run(site, fetch, now or datetime.now(UTC), schemas, Verification(location), origin)
    root = parts.path in ("", "/")
    starts = run.robots(f"{origin}/robots.txt") if root else [location]
    seen: set[str] = set()
    queue: list[tuple[str, int | None]] = [(url, None) for url in starts]
    while queue:
        url, claimed = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        queue += run.file(url, claimed)
        if progress is not None:
            progress(run.result)
    return run.result


@dataclass(slots=True)
class _Run:
    site: Site
    fetch: Fetch
    now: datetime
    schemas: Schemas | None
    result: Verification
    origin: str  # where the site's files are read from (its base URL, unless told otherwise)
    listed: dict[str, str] = field(default_factory=dict)  # page URL -> the file that lists it first

    def _read_from(self, url: str) -> str:
        """Where a URL of the site is read: on the origin given, when it is not the site's own."""
        base = self.site.base_url
        return self.origin + url[len(base) :] if url.startswith(base + "/") and self.origin != base else url

    def robots(self, url: str) -> list[str]:
        """The index files robots.txt names; sitemap.xml when it names none (reported)."""
        check = FileCheck(url, "robots.txt")
        self.result.files.append(check)
        index_url = f"{self.site.base_url}/{INDEX_NAME}"
        fallback = [self._read_from(index_url)]
        fetched = self._get(check)
        if fetched is None:
            check.notes.append(f"read {fallback[0]} instead")
            return fallback
        named = []
        for line in fetched.body.decode("utf-8", "replace").splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() == "sitemap" and value.strip():
                named.append(value.strip())
        if not named:
            check.problems.append(f"names no sitemap: add 'Sitemap: {index_url}'")
            return fallback
        on_site = [u for u in named if self._on_site(u)]
        for other in sorted(set(named) - set(on_site)):
            check.notes.append(f"names {other}, on another host than the site's: not read")
        return [self._read_from(u) for u in on_site]

    def _on_site(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == self.site.scheme and parts.netloc.lower() == self.site.netloc

    def _get(self, check: FileCheck) -> Fetched | None:
        try:
            fetched = self.fetch(check.url)
        except OSError as exc:
            check.problems.append(f"cannot be read: {type(exc).__name__}: {exc}")
            return None
        check.status = fetched.status
        check.content_type = fetched.headers.get("content-type", "")
        check.content_encoding = fetched.headers.get("content-encoding", "")
        check.cache_control = fetched.headers.get("cache-control", "")
        if fetched.status in (301, 302, 303, 307, 308):
            where = fetched.headers.get("location", "?")
            check.problems.append(f"HTTP {fetched.status}: redirects to {where}, off the site's host")
            return None
        if fetched.status != 200:
            check.problems.append(f"HTTP {fetched.status}: a crawler gets no file")
            return None
        if fetched.url != check.url:
            check.notes.append(f"redirected to {fetched.url}")
        if fetched.cut:
            check.problems.append(f"more than {MAX_BYTES_PER_FILE:,} bytes sent: over the limit, not read further")
            return None
        return fetched

    def file(self, url: str, claimed_us: int | None) -> list[tuple[str, int | None]]:
        """Check one index or sitemap; the sitemaps an index names, with the lastmod it claims for each."""
        check = FileCheck(url, "sitemap")
        self.result.files.append(check)
        fetched = self._get(check)
        if fetched is None:
            return []
        data = self._decoded(check, fetched)
        if data is None:
            return []
        check.bytes = len(data)
        if len(data) > MAX_BYTES_PER_FILE:
            check.problems.append(f"{len(data):,} bytes uncompressed: over the limit of {MAX_BYTES_PER_FILE:,}")
        if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
            check.kind = "text sitemap"
            self._headers(check, url, _TEXT_TYPES)
            self._text(check, data)
            return []
        try:
            doc = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False))
        except etree.XMLSyntaxError as exc:
            check.problems.append(f"not well-formed XML: {exc}")
            return []
        root = etree.QName(doc)
        if root.namespace != NS or root.localname not in ("urlset", "sitemapindex"):
            check.problems.append(f"root element {doc.tag}: not a sitemap (expected {{{NS}}}urlset or sitemapindex)")
            return []
        self._headers(check, url, _XML_TYPES)
        if self.schemas is not None:
            schema = self.schemas.urlset if root.localname == "urlset" else self.schemas.index
            if not schema.validate(doc):
                errors: list[Any] = list(schema.error_log)  # type: ignore[call-overload]
                check.problems += [f"line {e.line}: {e.message} (schema)" for e in errors[:20]]
        if root.localname == "sitemapindex":
            check.kind = "index"
            return self._index(check, doc)
        newest = self._urlset(check, doc)
        if claimed_us is not None and claimed_us < newest:  # later is fine: a page of it was deleted since
            check.problems.append(
                f"the index gives it lastmod {_text_of(claimed_us)}, older than its newest entry's {_text_of(newest)}"
            )
        return []

    def _headers(self, check: FileCheck, url: str, types: tuple[str, ...]) -> None:
        media = check.content_type.partition(";")[0].strip().lower()
        gzip_file = urlsplit(url).path.endswith(".gz")
        if (gzip_file and media in _GZIP_TYPES + types) or (not gzip_file and media in types):
            pass
        elif media in ("", "application/octet-stream", "binary/octet-stream"):
            check.notes.append(f"Content-Type {media or '(none)'}: crawlers sniff the file, a specific type is safer")
        else:
            check.problems.append(f"Content-Type {check.content_type}: not a sitemap's")
        if check.content_encoding.lower() == "gzip" and gzip_file:
            check.notes.append("a .gz file sent with Content-Encoding gzip: some clients unpack it once only")
        if not check.cache_control:
            check.notes.append("no Cache-Control: CDNs and crawlers may keep it as long as they like")

    def _decoded(self, check: FileCheck, fetched: Fetched) -> bytes | None:
        data = fetched.body
        for _ in range(2):  # Content-Encoding gzip, then a .gz file
            if data[:2] != b"\x1f\x8b":
                break
            inflate = zlib.decompressobj(wbits=31)
            try:
                out = inflate.decompress(data, MAX_BYTES_PER_FILE + 1)
            except zlib.error as exc:
                check.problems.append(f"not valid gzip: {exc}")
                return None
            if len(out) > MAX_BYTES_PER_FILE or inflate.unconsumed_tail:
                check.problems.append(f"more than {MAX_BYTES_PER_FILE:,} bytes uncompressed: over the limit")
                return None
            data = out
        return data

    def _index(self, check: FileCheck, doc: Any) -> list[tuple[str, int | None]]:
        children: list[tuple[str, int | None]] = []
        for entry in doc.iterfind(f"{{{NS}}}sitemap"):
            loc = (entry.findtext(f"{{{NS}}}loc") or "").strip()
            lastmod = self._lastmod(check, entry.findtext(f"{{{NS}}}lastmod"), loc)
            if not self._on_site(loc):
                check.problems.append(f"names {loc or '(empty loc)'}, not on the site ({self.site.base_url})")
                continue
            children.append((self._read_from(loc), lastmod))
        check.entries = len(children)
        if check.entries > MAX_FILES_PER_INDEX:
            check.problems.append(f"names {check.entries:,} sitemaps: over the limit of {MAX_FILES_PER_INDEX:,}")
        if not children:
            check.problems.append("names no sitemap")
        return children

    def _urlset(self, check: FileCheck, doc: Any) -> int:
        """Check each entry; the newest lastmod of the file in microseconds (0: none has one)."""
        newest = 0
        for entry in doc.iterfind(f"{{{NS}}}url"):
            loc = (entry.findtext(f"{{{NS}}}loc") or "").strip()
            self._page(check, loc)
            newest = max(newest, self._lastmod(check, entry.findtext(f"{{{NS}}}lastmod"), loc) or 0)
        return newest

    def _text(self, check: FileCheck, data: bytes) -> None:
        for line in data.decode("utf-8", "replace").lstrip("\ufeff").splitlines():
            if line.strip():
                self._page(check, line.strip())

    def _page(self, check: FileCheck, loc: str) -> None:
        check.entries += 1
        self.result.pages += 1
        if check.entries == MAX_URLS_PER_FILE + 1:
            check.problems.append(f"more than {MAX_URLS_PER_FILE:,} URLs: over the limit")
        try:
            canonical = canonical_page_url(loc, self.site)
        except UrlError as exc:
            check.problems.append(f"{loc or '(empty loc)'}: {exc}")
            return
        if canonical != loc:
            check.problems.append(f"{loc}: not in its canonical form {canonical}")
        first = self.listed.setdefault(canonical, check.url)
        if first != check.url:
            check.problems.append(f"{loc}: listed again (first in {first})")

    def _lastmod(self, check: FileCheck, text: str | None, loc: str) -> int | None:
        """A lastmod in microseconds (None: none given, or not a W3C date, which is reported)."""
        if text is None:
            return None
        try:
            moment = parse_w3c(text.strip())
        except ValueError:
            check.problems.append(f"{loc}: lastmod {text!r} is not a W3C date or date-time")
            return None
        if not isinstance(moment, datetime):
            moment = datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
        if moment.tzinfo is None:
            check.problems.append(f"{loc}: lastmod {text!r} has a time but no time zone")
            return None
        if (moment - self.now).total_seconds() > CLOCK_SKEW_S:
            check.problems.append(f"{loc}: lastmod {text.strip()} is in the future")
        return round(moment.timestamp() * 1_000_000)


def _text_of(micros: int) -> str:
    if not micros:
        return "none"
    return datetime.fromtimestamp(micros / 1_000_000, UTC).isoformat().replace("+00:00", "Z")
