"""Verify a published site as a crawler reads it: robots.txt, then the index files, then every sitemap they name.

Each file is checked for what a crawler would trip on: its HTTP status, ``Content-Type``, ``Content-Encoding``
and ``Cache-Control``; well-formed XML (or a text sitemap) in the sitemap namespace, valid against the official
schemas when a folder of them is given; the limits (50,000 entries and 52,428,800 bytes uncompressed); every URL
absolute, on the site's host and in the form the URL rules give it, listed once; no lastmod in the future; and
each index entry's lastmod no older than the newest lastmod of the file it names (what the index claims of a file
is what a crawler finds in it; later is right when a page of the file was deleted since); no index naming an
index (itself, one naming it back, any other: an index names sitemaps only). ``problems`` break a rule; ``notes``
are worth knowing and break none. A server's wrong answer (not HTTP as a client reads it, cut short, slower than
the time a file may take) is a problem of its file; the check stops early only when the whole check's time runs
out or no server answered at all (``Verification.unfinished``).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from lxml import etree

from sitemap_updater.core.event_rules import parse_w3c
from sitemap_updater.core.sharding import INDEX_NAME, MAX_BYTES_PER_FILE, MAX_FILES_PER_INDEX, MAX_URLS_PER_FILE
from sitemap_updater.core.urls import Site, canonical_page_url
from sitemap_updater.ports import Fetch, Fetched, Unreachable
from sitemap_updater.service.verify_files import FileCheck as FileCheck  # the report's files, for the CLI
from sitemap_updater.service.verify_files import check_headers
from sitemap_updater.service.verify_files import decoded as decoded_body
from sitemap_updater.service.verify_schemas import Schemas

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CLOCK_SKEW_S = 300  # a lastmod this far ahead of now is still taken as the present (clocks differ)
MAX_LISTED = 100  # problems with a file's entries listed one by one; past it, counted by kind (memory stays bounded)
_XML_TYPES = ("application/xml", "text/xml")
_TEXT_TYPES = ("text/plain",)
_URL, _SITEMAP, _LOC, _LASTMOD = (f"{{{NS}}}{name}" for name in ("url", "sitemap", "loc", "lastmod"))


@dataclass(frozen=True, slots=True)
class TimeLimits:
    """How long one file may take, from connecting to its last byte (its redirects included), and the whole check."""

    file_s: float = 60.0
    total_s: float = 900.0


@dataclass(slots=True)
class Verification:
    """Every file read, the pages found, and the problems (each naming its file)."""

    location: str
    files: list[FileCheck] = field(default_factory=list)
    pages: int = 0
    unfinished: str = ""  # why the check could not be completed: no connection at all, or the time limit ran out

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
            "unfinished": self.unfinished,
        }


def verify(
    location: str,
    site: Site,
    fetch: Fetch,
    now: datetime | None = None,
    schemas: Schemas | None = None,
    progress: Callable[[Verification], None] | None = None,
    limits: TimeLimits = TimeLimits(),
    clock: Callable[[], float] = time.monotonic,
) -> Verification:
    """Read the site at ``location`` (its root: robots.txt first; or an index or sitemap URL) and check it. The
    pages and sitemaps must be on ``site``; when ``location`` is on another origin (a staging host, the bucket's
    own endpoint), the site's URLs are read from there. Whatever a server answers is a finding; the check stops
    early (``unfinished`` says why) only when no connection could be made at all or ``limits.total_s`` ran out."""
    parts = urlsplit(location)
    origin = f"{parts.scheme}://{parts.netloc}"
    result = Verification(location)
    run = _Run(site, fetch, now or datetime.now(UTC), schemas, result, origin, limits, clock, clock() + limits.total_s)
    root = parts.path in ("", "/")
    starts = run.robots(f"{origin}/robots.txt") if root else [location]
    seen: set[str] = set()
    queue: deque[tuple[str, int | None, str | None]] = deque((url, None, None) for url in starts)
    while queue and not result.unfinished:
        url, claimed, parent = queue.popleft()
        if url in seen:
            continue
        if clock() >= run.end:
            queue.appendleft((url, claimed, parent))  # not read either
            run.out_of_time()
            break
        seen.add(url)
        queue += run.file(url, claimed, parent)
        if progress is not None:
            progress(result)
    if result.unfinished:
        unread = len({url for url, _, _ in queue} - seen)
        result.unfinished += f": {unread:,} more files named were not read" if unread else ""
    elif not run.answered:
        result.unfinished = f"no connection could be made to {origin}"
    run.index_loops()
    return result


@dataclass(slots=True)
class _Run:
    site: Site
    fetch: Fetch
    now: datetime
    schemas: Schemas | None
    result: Verification
    origin: str  # where the site's files are read from (its base URL, unless told otherwise)
    limits: TimeLimits
    clock: Callable[[], float]
    end: float  # when the whole check must stop, on ``clock``
    answered: bool = False  # whether any server answered at all (a connection was made)
    listed: dict[str, str] = field(default_factory=dict)  # page URL -> the file that lists it first
    checks: dict[str, FileCheck] = field(default_factory=dict)  # each file read, by the URL it was read from
    named: list[tuple[str, str, str]] = field(default_factory=list)  # (index, file it names, as written), read URLs
    entry_problems: int = 0  # of the file being read, listed one by one
    more: dict[str, int] = field(default_factory=dict)  # of the file being read, past MAX_LISTED: kind -> count

    def _entry(self, check: FileCheck, problem: str, kind: str) -> None:
        """A problem with one entry of the file being read (a file of 2,000,000 bad entries makes 100 lines)."""
        if self.entry_problems < MAX_LISTED:
            self.entry_problems += 1
            check.problems.append(problem)
        else:
            self.more[kind] = self.more.get(kind, 0) + 1

    def _counted(self, check: FileCheck) -> None:
        """The entries' problems past the first MAX_LISTED, one line a kind; the count starts again."""
        for kind, count in self.more.items():
            check.problems.append(f"{count:,} more {'entry' if count == 1 else 'entries'}: {kind} (not listed)")
        self.entry_problems, self.more = 0, {}

    def _read_from(self, url: str) -> str:
        """Where a URL of the site is read: on the origin given, when it is not the site's own."""
        base = self.site.base_url
        return self.origin + url[len(base) :] if url.startswith(base + "/") and self.origin != base else url

    def out_of_time(self) -> None:
        self.result.unfinished = f"the time limit of {self.limits.total_s:g} s for the whole check ran out"

    def robots(self, url: str) -> list[str]:
        """The index files robots.txt names on the site; sitemap.xml when it names none there (reported)."""
        check = FileCheck(url, "robots.txt")
        self.result.files.append(check)
        try:
            return self._robots(check)
        finally:
            self._counted(check)

    def _robots(self, check: FileCheck) -> list[str]:
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
        others = sorted(set(named) - set(on_site))
        for other in others[:MAX_LISTED]:
            check.notes.append(f"names {other}, on another host than the site's: not read")
        if len(others) > MAX_LISTED:
            check.notes.append(f"and {len(others) - MAX_LISTED:,} more on other hosts (not listed)")
        if not on_site:
            check.problems.append(
                f"names no sitemap on the site's host, so none could be checked: add 'Sitemap: {index_url}' "
                f"(read instead)"
            )
            return fallback
        return [target for u in on_site if (target := self._sitemap_url(check, u)) is not None] or fallback

    def _on_site(self, url: str) -> bool:
        try:
            parts = urlsplit(url)
        except ValueError:  # an IPv6 literal left open
            return False
        return parts.scheme == self.site.scheme and parts.netloc.lower() == self.site.netloc

    def _sitemap_url(self, check: FileCheck, loc: str) -> str | None:
        """Where the sitemap ``loc`` (as robots.txt or an index wrote it) is read from, in its canonical form;
        None when it is not one of the site's URLs (reported)."""
        if not self._on_site(loc):
            site = self.site.base_url
            self._entry(check, f"names {loc or '(empty loc)'}, not on the site ({site})", f"not on the site ({site})")
            return None
        try:
            canonical = canonical_page_url(loc, self.site)
        except ValueError as exc:  # UrlError, and urlsplit's own
            self._entry(check, f"{loc}: {exc}", "not a URL the URL rules accept")
            return None
        if canonical != loc:
            self._entry(check, f"{loc}: not in its canonical form {canonical} (read there)", "not in canonical form")
        return self._read_from(canonical)

    def _get(self, check: FileCheck) -> Fetched | None:
        try:
            fetched = self.fetch(check.url, max(0.0, min(self.limits.file_s, self.end - self.clock())))
        except Unreachable as exc:
            check.problems.append(f"cannot be read: no connection: {exc}")
            return None
        except TimeoutError:
            self.answered = True
            if self.clock() >= self.end:
                check.notes.append("not read to its end: the time limit for the whole check ran out")
                self.out_of_time()
            else:
                check.problems.append(
                    f"no whole answer within {self.limits.file_s:g} s: a crawler gives up on a server this slow"
                )
            return None
        except OSError as exc:  # an answer that is not HTTP as a client reads it
            self.answered = True
            check.problems.append(f"cannot be read: {exc or type(exc).__name__}")
            return None
        self.answered = True
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

    def file(self, url: str, claimed_us: int | None, parent: str | None) -> list[tuple[str, int | None, str | None]]:
        """Check one index or sitemap; the sitemaps an index names, each with the lastmod it claims and the index
        (none for an index named by an index: crawlers read no further, and neither does this)."""
        check = FileCheck(url, "sitemap")
        self.result.files.append(check)
        self.checks[url] = check
        try:
            return self._file(check, claimed_us, parent)
        finally:
            self._counted(check)

    def _file(
        self, check: FileCheck, claimed_us: int | None, parent: str | None
    ) -> list[tuple[str, int | None, str | None]]:
        url = check.url
        fetched = self._get(check)
        if fetched is None:
            return []
        decoded = decoded_body(check, fetched.body)
        if decoded is None:
            return []
        data, gzipped = decoded
        check.bytes = len(data)
        if len(data) > MAX_BYTES_PER_FILE:
            check.problems.append(f"{len(data):,} bytes uncompressed: over the limit of {MAX_BYTES_PER_FILE:,}")
        if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
            check.kind = "text sitemap"
            check_headers(check, _TEXT_TYPES, gzipped)
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
        check_headers(check, _XML_TYPES, gzipped)
        if self.schemas is not None:
            schema = self.schemas.urlset if root.localname == "urlset" else self.schemas.index
            if not schema.validate(doc):
                errors: list[Any] = list(schema.error_log)  # type: ignore[call-overload]
                check.problems += [f"line {e.line}: {e.message} (schema)" for e in errors[:20]]
        if root.localname == "sitemapindex":
            check.kind = "index"
            children = self._index(check, doc)
            return [(child, lastmod, url) for child, lastmod in children] if parent is None else []
        newest = self._urlset(check, doc)
        if claimed_us is not None and claimed_us < newest:  # later is fine: a page of it was deleted since
            check.problems.append(
                f"the index gives it lastmod {_text_of(claimed_us)}, older than its newest entry's {_text_of(newest)}"
            )
        return []

    def _index(self, check: FileCheck, doc: Any) -> list[tuple[str, int | None]]:
        children: list[tuple[str, int | None]] = []
        names: set[str] = set()
        entries = doc.iterfind(_SITEMAP)
        for entry in itertools.islice(entries, MAX_FILES_PER_INDEX):
            loc, text = _loc_and_lastmod(entry)
            lastmod = self._lastmod(check, text, loc)
            target = self._sitemap_url(check, loc)
            if target is None:
                continue
            if target in names:
                self._entry(check, f"{loc}: named twice", "named twice")
                continue
            names.add(target)
            self.named.append((check.url, target, loc))
            children.append((target, lastmod))
        check.entries = len(children)
        past = sum(1 for _ in entries)  # not read (a crawler reads none of an index over the limit)
        if past:
            check.entries += past
            check.problems.append(
                f"names {check.entries:,} sitemaps: over the limit of {MAX_FILES_PER_INDEX:,} (the rest not read)"
            )
        if not children:
            check.problems.append("names no sitemap")
        return children

    def index_loops(self) -> None:
        """Each index that names an index: itself, one naming it back (a loop), or any other (sitemaps.org: an
        index names sitemaps only; crawlers read no further)."""
        pairs = {(index, named) for index, named, _ in self.named}
        for index, named, loc in self.named:
            target = self.checks.get(named)
            if target is None or target.kind != "index":
                continue
            if named == index:
                problem = "names itself: an index loop"
            elif (named, index) in pairs:
                problem = f"names {loc}, an index that names it back: an index loop"
            else:
                problem = f"names {loc}, an index: an index may name sitemaps only, and crawlers read no further"
            self.checks[index].problems.append(problem)

    def _urlset(self, check: FileCheck, doc: Any) -> int:
        """Check each entry; the newest lastmod of the file in microseconds (0: none has one)."""
        newest = 0
        entries = doc.iterfind(_URL)
        for entry in itertools.islice(entries, MAX_URLS_PER_FILE):
            loc, lastmod = _loc_and_lastmod(entry)
            self._page(check, loc)
            newest = max(newest, self._lastmod(check, lastmod, loc) or 0)
        self._past_the_limit(check, sum(1 for _ in entries))
        return newest

    def _text(self, check: FileCheck, data: bytes) -> None:
        lines = (line.strip() for line in data.decode("utf-8", "replace").lstrip("\ufeff").splitlines())
        entries = (line for line in lines if line)
        for line in itertools.islice(entries, MAX_URLS_PER_FILE):
            self._page(check, line)
        self._past_the_limit(check, sum(1 for _ in entries))

    def _past_the_limit(self, check: FileCheck, count: int) -> None:
        """Entries past the limit are counted only (a file of 2,000,000 entries takes seconds, not minutes)."""
        if count:
            check.entries += count
            self.result.pages += count
            check.problems.append(f"more than {MAX_URLS_PER_FILE:,} URLs: over the limit (the rest counted only)")

    def _page(self, check: FileCheck, loc: str) -> None:
        check.entries += 1
        self.result.pages += 1
        try:
            canonical = canonical_page_url(loc, self.site)
        except ValueError as exc:  # UrlError, and urlsplit's own (an IPv6 literal left open)
            self._entry(check, f"{loc or '(empty loc)'}: {exc}", "not a URL the URL rules accept")
            return
        if canonical != loc:
            self._entry(check, f"{loc}: not in its canonical form {canonical}", "not in canonical form")
        first = self.listed.get(canonical)
        if first is None:
            self.listed[canonical] = check.url
        elif first == check.url:
            self._entry(check, f"{loc}: listed twice in this file", "listed twice in this file")
        else:
            self._entry(check, f"{loc}: listed again (first in {first})", "listed again, first in another file")

    def _lastmod(self, check: FileCheck, text: str | None, loc: str) -> int | None:
        """A lastmod in microseconds (None: none given, or not a W3C date, which is reported)."""
        if text is None:
            return None
        try:
            moment = parse_w3c(text.strip())
        except ValueError:
            self._entry(check, f"{loc}: lastmod {text!r} is not a W3C date or date-time", "lastmod not a W3C date")
            return None
        if not isinstance(moment, datetime):
            moment = datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
        if moment.tzinfo is None:
            self._entry(check, f"{loc}: lastmod {text!r} has a time but no time zone", "lastmod without a time zone")
            return None
        if (moment - self.now).total_seconds() > CLOCK_SKEW_S:
            self._entry(check, f"{loc}: lastmod {text.strip()} is in the future", "lastmod in the future")
        return round(moment.timestamp() * 1_000_000)


def _loc_and_lastmod(entry: Any) -> tuple[str, str | None]:
    """A ``<url>``'s (or ``<sitemap>``'s) first ``<loc>`` (stripped; "" when none) and first ``<lastmod>`` (None
    when none), read from its children (``findtext`` with a namespaced path costs about 7 us an entry)."""
    loc: str | None = None
    lastmod: str | None = None
    for child in entry:
        if child.tag == _LOC and loc is None:
            loc = (child.text or "").strip()
        elif child.tag == _LASTMOD and lastmod is None:
            lastmod = child.text or ""
    return loc or "", lastmod


def _text_of(micros: int) -> str:
    if not micros:
        return "none"
    return datetime.fromtimestamp(micros / 1_000_000, UTC).isoformat().replace("+00:00", "Z")
