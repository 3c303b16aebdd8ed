"""A fast path from one JSON line of an export to its spill record, for events of the common shape.

The pydantic models (``parse_event``) are the contract. This path takes only events that the models would
accept as they are, with no warning and no unknown field — an upsert or delete with a URL, dates, version,
changefreq, priority, section and images — and renders the bytes the model path renders, from the same
rendering functions. Anything else (an envelope, a video, news, an alternate, a URL to canonicalise with a
warning, a value to coerce, an error) returns None and goes to the model path, which also words the errors.
``tests/unit/test_fastline.py`` holds both paths to the same records.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import get_args

from pydantic_core import SchemaValidator
from pydantic_core import core_schema as cs

from sitemap_updater.core.entry import (
    FLAG_IMAGE,
    MAX_ENTRY_BYTES,
    URL_CLOSE,
    image_element,
    moment_micros,
    url_open,
    w3c,
)
from sitemap_updater.core.events import (
    MAX_BODY_BYTES,
    MAX_IMAGES,
    MAX_VERSION,
    TYPE_ALIASES,
    ChangeFreq,
    in_window,
    parse_w3c,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.records import encode_record
from sitemap_updater.core.sharding import url_bytes_key
from sitemap_updater.core.text import forbidden_character
from sitemap_updater.core.urls import ROOT_SECTION, Site, UrlError, canonical_media_url, canonical_page_url

_CACHE_LIMIT = 65_536
# The date-time shapes both readers take the same way: seconds, up to six fraction digits, Z or +hh:mm.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)", re.ASCII)


def _field(schema: cs.CoreSchema, *, required: bool = False) -> cs.TypedDictField:
    return cs.typed_dict_field(schema if required else cs.nullable_schema(schema), required=required)


def _strict_text(**limits: int) -> cs.CoreSchema:
    return cs.str_schema(strict=True, **limits)  # type: ignore[arg-type]


_IMAGE = cs.typed_dict_schema(
    {
        "loc": _field(_strict_text(min_length=1), required=True),
        "title": _field(_strict_text()),
        "caption": _field(_strict_text()),
    },
    extra_behavior="forbid",
)
# The common shape, checked in one pass by pydantic-core: exact JSON types (nothing the models would coerce),
# no field the models do not know, the models' bounds; optional fields may be null where the models allow it.
_SHAPE = SchemaValidator(
    cs.typed_dict_schema(
        {
            "type": _field(_strict_text(), required=True),
            "url": _field(_strict_text(min_length=1), required=True),
            "occurred_at": _field(_strict_text(), required=True),
            "version": _field(cs.int_schema(strict=True, ge=0, le=MAX_VERSION)),
            "lastmod": _field(_strict_text()),
            "changefreq": _field(cs.literal_schema(list(get_args(ChangeFreq)))),
            "priority": _field(cs.float_schema(strict=True, ge=0.0, le=1.0, allow_inf_nan=False)),
            "section": _field(_strict_text(min_length=1, max_length=100)),
            "images": cs.typed_dict_field(cs.list_schema(_IMAGE, max_length=MAX_IMAGES), required=False),
        },
        extra_behavior="forbid",
    )
)


class LineParser:
    """Turns export lines into ``(page key, spill record)``; None means "use the model path"."""

    def __init__(self, site: Site) -> None:
        self._site = site
        self._sections = site.sections
        self._path_at = len(site.base_url) + 1  # where the path of a URL on the site starts, after its "/"
        self._moments: dict[str, tuple[int, str] | None] = {}  # occurred_at -> (micros, W3C text)
        self._lastmods: dict[str, tuple[int, str] | None] = {}  # lastmod -> (micros, W3C text)

    def record(self, raw: bytes) -> tuple[int, bytes] | None:
        """The key and spill record of one line, exactly as the model path would make them, or None."""
        if len(raw) > MAX_BODY_BYTES:
            return None
        try:
            data = _SHAPE.validate_json(raw)  # the JSON reader the model path uses
        except ValueError:
            return None
        kind = TYPE_ALIASES.get(data["type"])
        url = data["url"]
        if self._site.is_canonical(url):
            # Site.section_of a URL with no escape: the first of several path segments (none before a query) when
            # the Sections setting names it
            slash = url.find("/", self._path_at)
            segment = url[self._path_at : slash] if slash > self._path_at else ROOT_SECTION
            if "?" in segment or (self._sections is not None and segment not in self._sections):
                segment = ROOT_SECTION
        else:
            url = self._canonical(url)
            segment = None
        occurred = self._moments.get(data["occurred_at"]) or self._occurred(data["occurred_at"])
        if kind is None or url is None or occurred is None:
            return None
        version = data.get("version")
        if version is None:
            version = -1
        lastmod = data.get("lastmod")
        if lastmod is None and "lastmod" in data:
            return None  # an explicit null: no lastmod shown, rendered by the model path
        if lastmod is not None:
            lastmod = self._lastmod(lastmod)
            if lastmod is None:
                return None
        changefreq = data.get("changefreq")
        priority = data.get("priority")
        section = data.get("section")
        if section is None:
            section = self._site.section_of(url) if segment is None else segment
        elif forbidden_character(section) is not None:
            return None
        parts = _image_parts(data["images"]) if "images" in data else []
        if parts is None:
            return None
        url_bytes = url.encode()
        key = url_bytes_key(url_bytes)
        order = (version, occurred[0])
        section_bytes = section.encode()
        if kind == "delete":
            return key, encode_record(1, order, key, occurred[0], url_bytes, section_bytes)
        moment_us, lastmod_text = occurred if lastmod is None else lastmod
        head = url_open(url, lastmod_text, changefreq, priority)
        body = (head + "".join(parts) if parts else head).encode()
        if len(body) + len(URL_CLOSE) > MAX_ENTRY_BYTES:
            return None  # the model path rejects it, naming the part that weighs most
        return key, encode_record(
            0, order, key, moment_us, url_bytes, section_bytes, body, b"", 0, FLAG_IMAGE if parts else 0
        )

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
        if text in self._lastmods:
            return self._lastmods[text]
        found: tuple[int, str] | None
        try:
            value: date | datetime = parse_w3c(text)
        except ValueError:
            found = None
        else:
            found = (moment_micros(value), w3c(value))
        return _remember(self._lastmods, text, found)


def _image_parts(images: list[dict[str, str | None]]) -> list[str] | None:
    """Rendered ``image:image`` elements, duplicates (by canonical URL) dropped; None when not plain."""
    parts: list[str] = []
    seen: set[str] = set()
    for image in images:
        loc, title, caption = image["loc"], image.get("title"), image.get("caption")
        if (title is not None and forbidden_character(title)) or (caption is not None and forbidden_character(caption)):
            return None
        try:
            loc = canonical_media_url(loc)  # type: ignore[arg-type]
        except UrlError:
            return None
        if loc not in seen:
            seen.add(loc)
            parts.append(image_element(loc, title, caption))
    return parts


def _remember(
    cache: dict[str, tuple[int, str] | None], text: str, value: tuple[int, str] | None
) -> tuple[int, str] | None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[text] = value
    return value
