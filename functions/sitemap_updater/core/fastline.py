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

from pydantic_core import from_json

from sitemap_updater.core.entry import FLAG_IMAGE, default_section, image_element, moment_micros, url_open, w3c
from sitemap_updater.core.events import MAX_BODY_BYTES, MAX_IMAGES, MAX_VERSION, TYPE_ALIASES, parse_w3c, to_micros
from sitemap_updater.core.records import encode_record
from sitemap_updater.core.sharding import url_bytes_key
from sitemap_updater.core.text import forbidden_character
from sitemap_updater.core.urls import Site, UrlError, canonical_media_url, canonical_page_url

_FIELDS = frozenset({"type", "url", "occurred_at", "version", "lastmod", "changefreq", "priority", "section", "images"})
_IMAGE_FIELDS = frozenset({"loc", "title", "caption"})
_CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_CACHE_LIMIT = 65_536
# The date-time shapes both readers take the same way: seconds, up to six fraction digits, Z or +hh:mm.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)", re.ASCII)


class LineParser:
    """Turns export lines into ``(page key, spill record)``; None means "use the model path"."""

    def __init__(self, site: Site) -> None:
        self._site = site
        self._moments: dict[str, tuple[int, str] | None] = {}  # occurred_at -> (micros, W3C text)
        self._lastmods: dict[str, tuple[int, str] | None] = {}  # lastmod -> (micros, W3C text)

    def record(self, raw: bytes) -> tuple[int, bytes] | None:
        """The key and spill record of one line, exactly as the model path would make them, or None."""
        if len(raw) > MAX_BODY_BYTES:
            return None
        try:
            data = from_json(raw, allow_inf_nan=False)  # the JSON reader the model path uses
        except ValueError:
            return None
        if type(data) is not dict or not data.keys() <= _FIELDS:
            return None
        event_type = data.get("type")
        kind = TYPE_ALIASES.get(event_type) if type(event_type) is str else None
        url = self._url(data.get("url"))
        occurred = self._occurred(data.get("occurred_at"))
        version = data.get("version")
        if version is None:
            version = -1
        elif type(version) is not int or not 0 <= version <= MAX_VERSION:
            return None
        if kind is None or url is None or occurred is None:
            return None
        lastmod = data.get("lastmod")
        if lastmod is not None:
            lastmod = self._lastmod(lastmod)
            if lastmod is None:
                return None
        changefreq = data.get("changefreq")
        if changefreq is not None and (type(changefreq) is not str or changefreq not in _CHANGEFREQS):
            return None
        priority = data.get("priority")
        if priority is not None:
            if (type(priority) is not float and type(priority) is not int) or not 0.0 <= priority <= 1.0:
                return None
            priority = float(priority)
        section = data.get("section")
        if section is None:
            section = default_section(url)
        elif type(section) is not str or not 1 <= len(section) <= 100 or forbidden_character(section) is not None:
            return None
        parts = _image_parts(data["images"]) if "images" in data else []  # null is not a list: the model rejects it
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
        return key, encode_record(
            0, order, key, moment_us, url_bytes, section_bytes, body, flags=FLAG_IMAGE if parts else 0
        )

    def _url(self, url: object) -> str | None:
        if type(url) is not str or not url:
            return None
        if self._site.is_canonical(url):
            return url
        warnings: list[str] = []
        try:
            canonical = canonical_page_url(url, self._site, warnings)
        except UrlError:
            return None
        return None if warnings else canonical

    def _occurred(self, text: object) -> tuple[int, str] | None:
        """RFC 3339 date-time with an offset, after 1970, as the model reads it."""
        if type(text) is not str:
            return None
        try:
            return self._moments[text]
        except KeyError:
            pass
        found: tuple[int, str] | None = None
        if _RFC3339.fullmatch(text):
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                moment = None
            if moment is not None and moment.year >= 1970:
                found = (to_micros(moment), w3c(moment))
        return _remember(self._moments, text, found)

    def _lastmod(self, text: object) -> tuple[int, str] | None:
        if type(text) is not str:
            return None
        try:
            return self._lastmods[text]
        except KeyError:
            pass
        found: tuple[int, str] | None
        try:
            value: date | datetime = parse_w3c(text)
        except ValueError:
            found = None
        else:
            found = (moment_micros(value), w3c(value))
        return _remember(self._lastmods, text, found)


def _image_parts(images: object) -> list[str] | None:
    """Rendered ``image:image`` elements, duplicates (by canonical URL) dropped; None when not plain."""
    if type(images) is not list or len(images) > MAX_IMAGES:
        return None
    parts: list[str] = []
    seen: set[str] = set()
    for image in images:
        if type(image) is not dict or not image.keys() <= _IMAGE_FIELDS:
            return None
        loc, title, caption = image.get("loc"), image.get("title"), image.get("caption")
        if type(loc) is not str or not loc or not (_plain_text(title) and _plain_text(caption)):
            return None
        try:
            loc = canonical_media_url(loc)
        except UrlError:
            return None
        if loc not in seen:
            seen.add(loc)
            parts.append(image_element(loc, title, caption))
    return parts


def _plain_text(value: object) -> bool:
    return value is None or (type(value) is str and forbidden_character(value) is None)


def _remember(
    cache: dict[str, tuple[int, str] | None], text: str, value: tuple[int, str] | None
) -> tuple[int, str] | None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[text] = value
    return value
