"""A fast path from the JSON lines of an export to their spilled states, for events of the common shape.

The pydantic models (``parse_event``) are the contract. This path takes only events that the models would
accept as they are, with no warning and no unknown field — an upsert or delete with a URL, dates, version,
changefreq, priority, section and images — and renders the bytes the model path renders, from the same
rendering functions. Anything else (an envelope, a video, news, an alternate, a URL to canonicalise with a
warning, a value to coerce, an error) is left to the model path, which also words the errors. The JSON is read
by msgspec into a struct of exact types (nothing the models would coerce, no field they do not know, their
bounds), so no pydantic is imported here. ``tests/unit/test_fastline.py`` holds both paths to the same states.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from hashlib import blake2b
from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType
from msgspec.json import Decoder

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
    MAX_BODY_BYTES,
    MAX_IMAGES,
    MAX_SECTION_CHARS,
    MAX_VERSION,
    TYPE_ALIASES,
    ChangeFreq,
    in_window,
    parse_w3c,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.spill import HEAD, SHIFT, Spilled, SpillGroups
from sitemap_updater.core.text import forbidden_character
from sitemap_updater.core.urls import ROOT_SECTION, Site, UrlError, canonical_media_url, canonical_page_url

_CACHE_LIMIT = 65_536
# The date-time shapes both readers take the same way: seconds, up to six fraction digits, Z or +hh:mm.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)", re.ASCII)
_KEY_HASH = blake2b(digest_size=8)  # sharding.page_key's hash, copied per URL
_ENTRY_BUDGET = MAX_ENTRY_BYTES - len(URL_CLOSE)


class _Image(Struct, forbid_unknown_fields=True, gc=False):
    loc: Annotated[str, Meta(min_length=1)]
    title: str | None = None
    caption: str | None = None


class _Line(Struct, forbid_unknown_fields=True, gc=False):
    """The common shape: exact JSON types, optional fields null where the models allow it. ``lastmod`` tells
    null (no lastmod, left to the model path) from absent; ``images`` may not be null."""

    type: str
    url: Annotated[str, Meta(min_length=1)]
    occurred_at: str
    version: Annotated[int, Meta(ge=0, le=MAX_VERSION)] | None = None
    lastmod: str | UnsetType | None = UNSET
    changefreq: ChangeFreq | None = None
    priority: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    section: Annotated[str, Meta(min_length=1, max_length=MAX_SECTION_CHARS)] | None = None
    images: Annotated[list[_Image], Meta(max_length=MAX_IMAGES)] | UnsetType = UNSET


_DECODE = Decoder(_Line).decode


class LineParser:
    """Turns export lines into spilled states (``core.spill``); a line it cannot decide is the model path's."""

    def __init__(self, site: Site) -> None:
        self._site = site
        self._sections = site.sections
        self._path_at = len(site.base_url) + 1  # where the path of a URL on the site starts, after its "/"
        self._moments: dict[str, tuple[int, str] | None] = {}  # occurred_at -> (micros, W3C text)
        self._lastmods: dict[str, tuple[int, str] | None] = {}  # lastmod -> (micros, W3C text)

    def parse(self, data: bytes, spill: SpillGroups) -> tuple[int, list[tuple[int, bytes]]]:
        """Spill every line of ``data`` the fast path decides into ``spill``. Returns the number of lines and
        the others (numbered from 1, blank ones included) for the model path."""
        record = self.record
        groups = spill.groups
        rest: list[tuple[int, bytes]] = []
        number = 0
        for number, raw in enumerate(data.splitlines(), start=1):
            found = record(raw)
            if found is None:
                rest.append((number, raw))
                continue
            section, key, head, blob = found
            group = groups.get(section)
            if group is None:
                spill.add(section, key, head, blob)
                continue
            bucket = key >> SHIFT
            group[0][bucket].append(head)
            group[1][bucket].append(blob)
        return number, rest

    def record(self, raw: bytes) -> Spilled | None:
        """The spilled state of one line, exactly as the model path would make it, or None."""
        if len(raw) > MAX_BODY_BYTES:
            return None
        try:
            line = _DECODE(raw)
        except ValueError:  # not JSON, or not of the common shape: msgspec's errors are ValueErrors
            return None
        kind = TYPE_ALIASES.get(line.type)
        url = line.url
        if self._site.is_canonical(url):
            # Site.section_of a URL with no escape: the first of several path segments (none before a query) when
            # the Sections setting names it
            slash = url.find("/", self._path_at)
            segment = url[self._path_at : slash] if slash > self._path_at else ROOT_SECTION
            if "?" in segment or (self._sections is not None and segment not in self._sections):
                segment = ROOT_SECTION
        else:
            canonical = self._canonical(url)
            if canonical is None:
                return None
            url, segment = canonical, None
        occurred = self._moments.get(line.occurred_at) or self._occurred(line.occurred_at)
        if kind is None or occurred is None:
            return None
        version = line.version
        if version is None:
            version = -1
        section = line.section
        if section is None:
            section = self._site.section_of(url) if segment is None else segment
        elif forbidden_character(section) is not None:
            return None
        url_bytes = url.encode()
        digest = _KEY_HASH.copy()
        digest.update(url_bytes)
        key = int.from_bytes(digest.digest(), "big")
        lastmod = line.lastmod
        if lastmod is UNSET:
            moment_us, lastmod_text = occurred
        elif lastmod is None:
            return None  # an explicit null: no lastmod shown, rendered by the model path
        else:
            found = self._lastmods[lastmod] if lastmod in self._lastmods else self._lastmod(lastmod)
            if found is None:
                return None
            moment_us, lastmod_text = found
        images = _image_parts(line.images) if line.images else ""  # checked for deletes too, as the models do
        if images is None:
            return None
        if kind == "delete":
            head = HEAD.pack(key, 1, version, occurred[0], occurred[0], 0, 0, len(url_bytes), 0, 0)
            return section, key, head, url_bytes
        text = url_open(url, lastmod_text, line.changefreq, line.priority)
        flags = 0
        if images:
            text += images
            flags = FLAG_IMAGE
        body = text.encode()
        if len(body) > _ENTRY_BUDGET:
            return None  # the model path rejects it, naming the part that weighs most
        head = HEAD.pack(key, 0, version, occurred[0], moment_us, 0, flags, len(url_bytes), len(body), 0)
        return section, key, head, url_bytes + body

    def _canonical(self, url: str) -> str | None:
        warnings: list[str] = []
        try:
            canonical = canonical_page_url(url, self._site, warnings)
        except UrlError:
            return None
        return None if warnings else canonical

    def _occurred(self, text: str) -> tuple[int, str] | None:
        """RFC 3339 date-time with an offset, within the models' window, as the model reads it."""
        found: tuple[int, str] | None = None
        if _RFC3339.fullmatch(text):
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                moment = None
            if moment is not None and in_window(moment):
                found = (to_micros(moment), w3c(moment))
        return _remember(self._moments, text, found)

    def _lastmod(self, text: str) -> tuple[int, str] | None:
        found: tuple[int, str] | None
        try:
            value: date | datetime = parse_w3c(text)
        except ValueError:
            found = None
        else:
            found = (moment_micros(value), w3c(value))
        return _remember(self._lastmods, text, found)


def _image_parts(images: list[_Image]) -> str | None:
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
