"""A fast path from the JSON lines of an export to their spilled states, for events of the common shape.

The pydantic models (``parse_event``) are the contract. This path takes only events that the models would
accept as they are, with no unknown field — an upsert or delete with a URL, dates, version, changefreq, priority,
section and images — and renders the bytes the model path renders, from the same rendering functions; a URL the
rules canonicalise with a warning (a session ID removed) is canonicalised by them, the warning noted as the model
path words it. Anything else (an envelope, a video, news, an alternate, a value to coerce, an error) is left to the
model path, which also words the errors. The JSON is read by msgspec (``core.fastjson``) into a struct of exact
types (nothing the models would coerce, no field they do not know, their bounds), so no pydantic is imported here.
``tests/unit/test_fastline.py`` and ``tests/unit/test_fastline_warnings.py`` hold both paths to the same states.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from datetime import date, datetime
from hashlib import blake2b
from itertools import compress
from operator import attrgetter, itemgetter, not_
from urllib.parse import unquote

from msgspec import UNSET

from sitemap_updater.core.entry import (
    FLAG_IMAGE,
    MAX_ENTRY_BYTES,
    URL_CLOSE,
    image_element,
    moment_micros,
    url_open,
    w3c,
)
from sitemap_updater.core.event_rules import (
    TYPE_ALIASES,
    Horizon,
    in_window,
    parse_w3c,
)
from sitemap_updater.core.fastjson import Image, Line, decode_chunk
from sitemap_updater.core.fasturl import (
    ABOVE_ASCII,
    KEPT_ESCAPE,
    NOT_FRAGMENT,
    PATH_CHARS,
    QUERY_CHARS,
    UrlCanonicaliser,
    encode_above_ascii,
    encode_each_above_ascii,
    escapes_respelled,
    session_free,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.spill import BUCKET_BITS, HEAD, Spilled, SpillGroups
from sitemap_updater.core.text import escape_text, forbidden_character
from sitemap_updater.core.urls import MAX_URL_LENGTH, ROOT_SECTION, Site, UrlError, canonical_media_url

_CACHE_LIMIT = 65_536
# The date-time shapes both readers take the same way: seconds, up to six fraction digits, Z or +hh:mm.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)", re.ASCII)
_KEY_HASH = blake2b(digest_size=8)  # sharding.page_key's hash, copied per URL
# HEAD with the key as the hash's 8 bytes: HEAD is big-endian, so it reads them back as sharding's key.
_FAST_HEAD = struct.Struct(HEAD.format.replace("Q", "8s", 1))
_BUCKET_SHIFT = 8 - BUCKET_BITS  # a key's bucket from its first byte
_ENTRY_BUDGET = MAX_ENTRY_BYTES - len(URL_CLOSE)
_SEGMENT = f"[{PATH_CHARS}%]"  # a path segment's characters in a canonical URL (each "%" checked: see _plain)


_DECODE_BYTES = 1 << 18  # lines read at a time (see LineParser.parse)
_URL_OF = attrgetter("url")
_WIDE_SHARE = 8  # a block's URLs are encoded at once after a block of which at least one in this many were above ASCII


class LineParser:
    """Turns export lines into spilled states (``core.spill``); a line it cannot decide is the model path's."""

    def __init__(self, site: Site, horizon: Horizon) -> None:
        self._site = site
        self._horizon = horizon  # an occurred_at or lastmod past it is the model path's, which rejects it
        self._sections = site.sections
        self._moments: dict[str, tuple[int, str] | None] = {}  # occurred_at -> (micros, W3C text)
        self._lastmods: dict[str, tuple[int, str] | None] = {}  # lastmod -> (micros, W3C text)
        # A canonical URL, as Site.is_canonical recognises it but with percent escapes the rules keep (each "%"
        # checked by _loose_escape) and no session ID in its query (group 2); one match that also finds the first
        # path segment (group 1) when more segments follow. No path parameter (";"; where the site's own address
        # holds one, no URL) nor dot segment.
        prefix = "(?!)" if ";" in site.base_url else re.escape(site.base_url)
        query = session_free(site.session_params, QUERY_CHARS.replace("&", "") + "%")
        self._plain = re.compile(rf"{prefix}/(?:({_SEGMENT}++)/)?[{PATH_CHARS}/%]*+(?:\?(?!\Z)({query}))?").fullmatch
        # Such a URL as a site writes it before the rules encode it, tried where _plain finds none: characters above
        # ASCII in its path and query, which the rules percent-encode one by one, and a fragment (group 3), which
        # they drop (see _parse_block). A second match, not a wider first: its classes are slower to match with.
        wide = f"[{PATH_CHARS}%{ABOVE_ASCII}]"
        self._written = re.compile(
            rf"{prefix}/(?:({wide}++)/)?[{PATH_CHARS}/%{ABOVE_ASCII}]*+(?:\?([{QUERY_CHARS}%{ABOVE_ASCII}]++))?"
            rf"(#[^{NOT_FRAGMENT}]*+)?"
        ).fullmatch
        self._loose_escape = re.compile(f"%(?!{KEPT_ESCAPE[1:]})").search  # "%" but of an escape the rules keep
        # Escapes the rules rewrite (lower-case hex, an unreserved character) are rewritten as they are and the URL
        # matched again (``_respelled``), unless a session parameter's name holds a "%": the rules look for it in the
        # query as written, _plain in the query rewritten.
        self._respell = not any("%" in name for name in site.session_params)
        self._many_wide = True  # whether the last block's URLs were above ASCII in numbers (see _parse_block)
        self._segments: dict[str | None, str] = {}  # first segment (None: none) -> the section it puts a page in
        self._urls = UrlCanonicaliser(site)  # any other URL
        # A canonical URL holds no "<", ">" nor '"' (all percent-encoded) unless the site's address does
        self._escape_all = escape_text(site.base_url) != site.base_url
        # The warnings about the lines taken, as the model path words them (a session ID removed from a URL), in order
        self.warnings: list[tuple[int, str]] = []

    def parse(self, data: bytes, spill: SpillGroups) -> tuple[int, list[tuple[int, bytes]]]:
        """Spill every line of ``data`` the fast path decides into ``spill``. Returns the number of lines and
        the others (numbered from 1, blank ones included) for the model path.

        Read a block of lines at a time (``_blocks``): the lines a block decodes into are freed before the next is
        read, so each reuses the memory of the one before instead of faulting in new pages for a whole chunk's.
        """
        lines = 0
        rest: list[tuple[int, bytes]] = []
        for block in _blocks(data):
            count, left = self._parse_block(block, lines, spill)
            rest += left
            lines += count
        return lines, rest

    def _parse_block(self, data: bytes, before: int, spill: SpillGroups) -> tuple[int, list[tuple[int, bytes]]]:
        """``parse`` of one block of whole lines, numbered after ``before``: its number of lines, and the others.

        One loop with everything it uses bound to locals: a line costs a few microseconds, most of them here.
        """
        decoded, raws = decode_chunk(data)
        plain, segments, loose_escape = self._plain, self._segments, self._loose_escape
        escape_all, respelled = self._escape_all, self._respelled
        written, has_session_id = self._written, self._urls.has_session_id
        # Each URL above ASCII, percent-encoded as encode_above_ascii does, all at once (_encoded): where the block
        # before held many (finding them costs every line a little)
        encoded = _encoded(decoded, self._site.base_url) if self._many_wide and not data.isascii() else {}
        wide_urls = 0
        moments, lastmods = self._moments.get, self._lastmods.get
        occurred_of, lastmod_of, canonical_of = self._occurred, self._lastmod, self._urls.canonical
        warned_of, warnings = self._urls.warned, self.warnings
        group_of, groups = spill.group, spill.groups
        copy_hash, pack = _KEY_HASH.copy, _FAST_HEAD.pack
        aliases = TYPE_ALIASES.get
        left: list[int] = []  # numbers of the lines left to the model path
        for number, line in enumerate(decoded, start=before + 1):
            if line is None:
                left.append(number)
                continue
            kind = aliases(line.type)
            url = line.url
            # Site.is_canonical of a URL, by one match that also finds its first path segment
            wide = False  # found by _written, not _plain: to encode
            noted = None  # the rules' warnings about the URL
            if "/." not in url and len(url) <= MAX_URL_LENGTH:
                found = plain(url) if url.isascii() else None  # _plain's classes are ASCII: it finds no other URL
                if found is None:
                    found = written(url)
                    wide = True
                if found is not None and "%" in url and loose_escape(url) is not None:
                    # an escape the rules rewrite: in a URL _plain found, rewritten and the URL matched again
                    url, found = (url, None) if wide else respelled(url)
            else:
                found = None
            if found is not None and (not wide or found[2] is None or not has_session_id(found[2])):
                # _plain's query holds no session ID
                segment = found[1]
                if wide:
                    # the fragment dropped, each character above ASCII percent-encoded as the rules encode it (their
                    # escapes and other characters are already as the rules keep them)
                    if found[3] is not None:
                        url = url[: found.start(3)]
                    if not url.isascii():
                        url = encoded.get(url) or encode_above_ascii(url)
                        wide_urls += 1
                        if segment is not None and not segment.isascii():
                            segment = encode_above_ascii(segment)
                        if len(url) > MAX_URL_LENGTH:
                            left.append(number)  # the model path words the refusal
                            continue
                section_found = segments.get(segment)
                if section_found is None:
                    section_found = self._segment_section(segment)
            else:
                canonical = canonical_of(url)
                if canonical is None:  # the rules warn (a session ID: noted once the line is taken) or refuse it
                    warned = warned_of(url)
                    if warned is None:
                        left.append(number)
                        continue
                    url, section_found, noted = warned
                else:
                    url, section_found = canonical
            occurred = moments(line.occurred_at) or occurred_of(line.occurred_at)
            if kind is None or occurred is None:
                left.append(number)
                continue
            section = line.section
            if section is None:
                section = section_found
            elif forbidden_character(section) is not None:
                left.append(number)
                continue
            lastmod = line.lastmod
            lastmod_text: str | None
            if lastmod is UNSET:
                moment_us, lastmod_text = occurred
            elif lastmod is None:  # an explicit null (as adoption writes): no lastmod shown, and it moves no file's
                moment_us, lastmod_text = 0, None
            else:
                lastmod_found = lastmods(lastmod) or lastmod_of(lastmod)
                if lastmod_found is None:
                    left.append(number)
                    continue
                moment_us, lastmod_text = lastmod_found
            images = _image_parts(line.images) if line.images else ""  # checked for deletes too, as the models do
            if images is None:
                left.append(number)
                continue
            url_bytes = url.encode()
            digest = copy_hash()
            digest.update(url_bytes)
            key = digest.digest()
            version = line.version
            if version is None:
                version = -1
            url_size = len(url_bytes)
            if kind == "delete":
                head = pack(key, 1, version, occurred[0], occurred[0], 0, 0, url_size, 0, 0)
                blob = url_bytes
            else:
                # The URL and the body, spilled together (core.spill): the body is url_open's, then the images
                if line.changefreq is None and line.priority is None:
                    loc = url  # escaped: what else a canonical URL may hold is percent-encoded
                    if escape_all:
                        loc = escape_text(url)
                    else:
                        if "&" in loc:
                            loc = loc.replace("&", "&amp;")
                        if "'" in loc:
                            loc = loc.replace("'", "&apos;")
                    if lastmod_text is None:
                        blob = f"{url}<url><loc>{loc}</loc>{images}".encode()
                    else:
                        blob = f"{url}<url><loc>{loc}</loc><lastmod>{lastmod_text}</lastmod>{images}".encode()
                else:
                    blob = (url + url_open(url, lastmod_text, line.changefreq, line.priority) + images).encode()
                body_size = len(blob) - url_size
                if body_size > _ENTRY_BUDGET:  # the model path rejects it, naming the part that weighs most
                    left.append(number)
                    continue
                head = pack(key, 0, version, occurred[0], moment_us, 0, FLAG_IMAGE if images else 0, url_size,
                            body_size, 0)  # fmt: skip
            if noted:
                warnings += [(number, f"url: {text}") for text in noted]
            group = groups.get(section) or group_of(section)
            bucket = key[0] >> _BUCKET_SHIFT
            group[0][bucket] += head
            group[1][bucket] += blob
        self._many_wide = wide_urls * _WIDE_SHARE >= len(decoded)
        if left:
            lines = data.splitlines() if raws is None else raws
            return len(decoded), [(n, lines[n - before - 1]) for n in left]
        return len(decoded), []

    def record(self, raw: bytes) -> Spilled | None:
        """The spilled state of one line as ``parse`` makes it (so exactly as the model path would), or None where the
        line is left to the model path or warned about."""
        found = self.noted_record(raw)
        return None if found is None or found[1] else found[0]

    def noted_record(self, raw: bytes) -> tuple[Spilled, list[str]] | None:
        """The spilled state of one line as ``parse`` makes it, with the warnings it notes about it, or None."""
        spill = SpillGroups()
        noted = len(self.warnings)
        lines, rest = self.parse(raw, spill)
        if lines != 1 or rest:
            return None
        ((section, (heads, blobs)),) = spill.groups.items()
        (head,) = [bytes(found) for found in heads if found]
        (blob,) = [bytes(found) for found in blobs if found]
        return (section, HEAD.unpack(head)[0], head, blob), [text for _, text in self.warnings[noted:]]

    def _respelled(self, url: str) -> tuple[str, re.Match[str] | None]:
        """An ASCII URL _plain found but for escapes the rules rewrite, with each escape as the rules write it, and
        _plain's match of that (what ``canonical_page_url`` gives: the rest of the URL is as the rules keep it, and
        neither a dot segment nor a session ID appears by the rewriting); or the URL as it is and None, for the rules.
        """
        text = escapes_respelled(url) if self._respell else None
        found = None if text is None or "/." in text else self._plain(text)
        return (url, None) if text is None or found is None else (text, found)

    def _segment_section(self, segment: str | None) -> str:
        """Site.section_of a canonical URL whose first segment (followed by more) is ``segment``, remembered."""
        sections = self._sections
        name = unquote(segment) if segment is not None and "%" in segment else segment  # as core.urls.first_segment
        section = ROOT_SECTION if name is None or (sections is not None and name not in sections) else name
        if len(self._segments) >= _CACHE_LIMIT:
            self._segments.clear()
        self._segments[segment] = section
        return section

    def _occurred(self, text: str) -> tuple[int, str] | None:
        """RFC 3339 date-time with an offset, within the models' window, as the model reads it."""
        found: tuple[int, str] | None = None
        if _RFC3339.fullmatch(text):
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                moment = None
            if moment is not None and in_window(moment):
                micros = to_micros(moment)
                found = (micros, w3c(moment)) if micros <= self._horizon.limit_us else None
        return _remember(self._moments, text, found)

    def _lastmod(self, text: str) -> tuple[int, str] | None:
        found: tuple[int, str] | None
        try:
            value: date | datetime = parse_w3c(text)
        except ValueError:
            found = None
        else:
            # past the horizon: the model path's (it keeps one on a state of unknown time, rejects the others)
            found = None if self._horizon.passes(value) else (moment_micros(value), w3c(value))
        return _remember(self._lastmods, text, found)


def _blocks(data: bytes) -> Iterator[bytes]:
    """``data`` in blocks of about ``_DECODE_BYTES``, each ending after a line break (or where ``data`` ends): cut
    after a \\n, which no line break continues, the blocks split into the lines ``data`` splits into."""
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start + _DECODE_BYTES) + 1 or size
        yield data[start:end]
        start = end


def _encoded(decoded: list[Line | None], base: str) -> dict[str, str]:
    """The URLs above ASCII of ``decoded`` lines, each with ``encode_above_ascii`` of it where it starts with the
    site's address ``base`` (all the matches take): the address, then the rest encoded (``encode_each_above_ascii``:
    one call for them all; none where one holds a line break)."""
    urls = list(map(_URL_OF, filter(None, decoded)))
    wide = list(compress(urls, map(not_, map(str.isascii, urls))))
    coded = encode_each_above_ascii(list(map(itemgetter(slice(len(base), None)), wide))) if wide else None
    return {} if coded is None else dict(zip(wide, map(base.__add__, coded), strict=True))


def _image_parts(images: list[Image]) -> str | None:
    """Rendered ``image:image`` elements, duplicates (by canonical URL) dropped; None when not plain."""
    parts: list[str] = []
    seen: set[str] = set()
    for image in images:
        loc, title, caption = image.loc, image.title, image.caption
        if (title is not None and forbidden_character(title)) or (caption is not None and forbidden_character(caption)):
            return None
        try:
            loc = canonical_media_url(loc)
        except UrlError:
            return None
        if loc not in seen:
            seen.add(loc)
            parts.append(image_element(loc, title, caption))
    return "".join(parts)


def _remember(
    cache: dict[str, tuple[int, str] | None], text: str, value: tuple[int, str] | None
) -> tuple[int, str] | None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[text] = value
    return value
