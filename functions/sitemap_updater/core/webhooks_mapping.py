"""The per-site mapping file (pydantic) and the page events it makes of a CMS document. Pure.

The events are bodies of the event contract (README, "Event contract v1"); the ingest's own validation
(``parse_event``) is the judge of them, so no rule of the contract is repeated here.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sitemap_updater.core.webhooks_payloads import Document, Variant, lookup
from sitemap_updater.core.webhooks_sites import SiteSelector, SiteUnmatched

_PLACEHOLDER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")
_PATH_SAFE = "/-._~!$&'()*+,;=:@"


class Unmapped(ValueError):
    """The mapping cannot place this document: a 400 with the reason, nothing enqueued."""


class NoSite(Unmapped, SiteUnmatched):
    """No site of the mapping's ``sites`` matches the document (its reason names the value looked at)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LocaleMap(_Strict):
    """A CMS locale as the site publishes it: its hreflang and the path prefix of its pages (``/de``)."""

    hreflang: Annotated[str, Field(pattern=r"^(x-default|[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*)$")]
    prefix: Annotated[str, Field(pattern=r"^(/[A-Za-z0-9._~-]+)*$")] = ""


class NewsMap(_Strict):
    """Google News for this content type: the publication, and the field holding the article's title."""

    publication_name: Annotated[str, Field(min_length=1)]
    title: Annotated[str, Field(pattern=_PLACEHOLDER.pattern)]
    language: str | None = None  # default: the locale's hreflang, as Google News writes it (en, zh-cn)


def _template(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("must be a path starting with /")
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
    except ValueError as exc:
        raise ValueError(f"not a template: {exc}") from None
    for name in names:
        if not _PLACEHOLDER.match(name):
            raise ValueError(f"{{{name}}} is not a field name (letters, digits, _ and . between names)")
    return value


class TypeMap(_Strict):
    """One content type: where its pages live and what their sitemap entries carry."""

    url: str = Field(description="path template, e.g. /blog/{slug}; {id} and {locale} are always known")
    section: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    changefreq: Literal["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"] | None = None
    priority: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    images: list[Annotated[str, Field(pattern=_PLACEHOLDER.pattern)]] = Field(default_factory=list)
    news: NewsMap | None = None

    @field_validator("url")
    @classmethod
    def _valid_template(cls, value: str) -> str:
        return _template(value)


class WebhookMapping(_Strict):
    """One site's mapping: content types to URL templates, CMS locales to hreflang."""

    version: Literal[1] = 1
    types: Annotated[dict[str, TypeMap], Field(min_length=1)]
    locales: dict[str, LocaleMap] = Field(default_factory=dict)
    media_base: Annotated[str, Field(pattern=r"^https?://[^/?#]+(/[^?#]*)?$")] | None = None
    sites: SiteSelector | None = None  # one endpoint for several sites: the origin of each document's pages


@dataclass(frozen=True)
class Mapped:
    """The event bodies for one document, and what was left out on the way (with why)."""

    events: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]


def map_document(document: Document, mapping: WebhookMapping, base_url: str, received_at: str) -> Mapped:
    """The page events of ``document`` (one per published locale), or Unmapped naming what is missing."""
    kind = mapping.types.get(document.content_type)
    if kind is None:
        known = ", ".join(sorted(mapping.types))
        raise Unmapped(f"content type {document.content_type!r} is not in the mapping (it has: {known})")
    variants = _variants(document, mapping, kind)
    warnings: list[str] = []
    urls = {
        v.locale: _origin(document, v, mapping, base_url) + _prefix(mapping, v.locale) + _render(kind.url, v, document)
        for v in variants
    }
    alternates = (
        [{"hreflang": mapping.locales[loc].hreflang, "href": url} for loc, url in urls.items() if loc is not None]
        if mapping.locales and len(urls) > 1
        else []
    )
    events: list[dict[str, Any]] = []
    for variant in variants:
        event: dict[str, Any] = {
            "type": document.action,
            "url": urls[variant.locale],
            "occurred_at": document.updated_at or received_at,
        }
        if document.revision is not None:
            event["version"] = document.revision
        if kind.section:
            event["section"] = kind.section
        if document.action == "upsert":
            event.update(_entry(document, variant, mapping, kind, warnings, received_at))
            if alternates:
                event["alternates"] = alternates
        events.append(event)
    return Mapped(tuple(events), tuple(warnings))


def withdrawn(
    document: Document, urls: list[str], mapping: WebhookMapping, received_at: str
) -> tuple[dict[str, Any], ...]:
    """Delete events for ``urls`` the document no longer has (withdrawn, or moved by a new slug), ordered as
    the document's own change."""
    kind = mapping.types.get(document.content_type)
    events = []
    for url in urls:
        event: dict[str, Any] = {"type": "delete", "url": url, "occurred_at": document.updated_at or received_at}
        if document.revision is not None:
            event["version"] = document.revision
        if kind is not None and kind.section:
            event["section"] = kind.section
        events.append(event)
    return tuple(events)


def document_order(document: Document, received_at: str) -> str:
    """A text that sorts as the document's changes happened: its revision first, then its time."""
    revision = -1 if document.revision is None else document.revision
    return f"{revision + 1:020d}#{document.updated_at or received_at}"


def _variants(document: Document, mapping: WebhookMapping, kind: TypeMap) -> list[Variant]:
    variants = list(document.variants) or [Variant(None, {})]  # a delete may carry no fields at all
    if not mapping.locales:
        if len(variants) > 1 and "{locale}" not in kind.url:
            found = ", ".join(str(v.locale) for v in variants)
            raise Unmapped(f"the document has locales {found}; add them to 'locales' in the mapping")
        return variants
    default = next(iter(mapping.locales))
    if not document.variants:
        return [Variant(loc, {}) for loc in mapping.locales]
    base = next((v.fields for v in variants if v.locale == default), {})
    chosen = [
        Variant(v.locale or default, {**base, **v.fields}) for v in variants if (v.locale or default) in mapping.locales
    ]
    if not chosen:
        found = ", ".join(str(v.locale) for v in variants)
        raise Unmapped(f"locale {found} is not in the mapping's locales ({', '.join(mapping.locales)})")
    return chosen


def _origin(document: Document, variant: Variant, mapping: WebhookMapping, base_url: str) -> str:
    if mapping.sites is None:
        return base_url
    try:
        return mapping.sites.origin(variant.locale, variant.fields, document.payload)
    except SiteUnmatched as exc:
        raise NoSite(str(exc)) from None


def _prefix(mapping: WebhookMapping, locale: str | None) -> str:
    return mapping.locales[locale].prefix if locale is not None and locale in mapping.locales else ""


def _render(template: str, variant: Variant, document: Document) -> str:
    out: list[str] = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        value = lookup(variant.fields, name)
        if value is None and name in ("id", "locale"):
            value = document.id if name == "id" else variant.locale
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip("/"):
            where = f" ({variant.locale})" if variant.locale else ""
            raise Unmapped(f"{name}{where}: missing or empty in the {document.action} payload; the URL needs it")
        parts = value.strip("/").split("/")
        if any(p in (".", "..") for p in parts):
            raise Unmapped(f"{name}: {value!r} has a . or .. segment")
        out.append(quote(value.strip("/"), safe=_PATH_SAFE))
    return "".join(out)


def _entry(
    document: Document, variant: Variant, mapping: WebhookMapping, kind: TypeMap, warnings: list[str], received: str
) -> dict[str, Any]:
    # A publish is a change: without the CMS's own time (Storyblok sends none), the arrival is its lastmod, or a
    # republished page would keep its first lastmod (the ingest keeps the stored one for an upsert without).
    entry: dict[str, Any] = {"lastmod": document.updated_at or received}
    if kind.changefreq:
        entry["changefreq"] = kind.changefreq
    if kind.priority is not None:
        entry["priority"] = kind.priority
    images = [{"loc": loc} for name in kind.images for loc in _asset_urls(name, variant, mapping, warnings)]
    if images:
        entry["images"] = images
    if kind.news:
        entry["news"] = _news(kind.news, document, variant, mapping)
    return entry


def _asset_urls(name: str, variant: Variant, mapping: WebhookMapping, warnings: list[str]) -> list[str]:
    value = lookup(variant.fields, name)
    found: list[str] = []
    for item in value if isinstance(value, list) else [] if value is None else [value]:
        url = item.get("url") if isinstance(item, Mapping) else item
        if isinstance(url, str) and url.startswith("//"):
            url = "https:" + url
        elif isinstance(url, str) and url.startswith("/") and mapping.media_base:
            url = mapping.media_base.rstrip("/") + url
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            found.append(url)
        else:
            warnings.append(f"{name}: an asset without an absolute URL is left out (a link, or no media_base)")
    return found


def _news(news: NewsMap, document: Document, variant: Variant, mapping: WebhookMapping) -> dict[str, Any]:
    title = lookup(variant.fields, news.title)
    if not isinstance(title, str) or not title.strip():
        raise Unmapped(f"{news.title}: missing; a news article needs its title")
    language = news.language
    if language is None and variant.locale in mapping.locales:
        tag = mapping.locales[variant.locale or ""].hreflang.lower()
        language = tag if tag in ("zh-cn", "zh-tw") else tag.split("-")[0]
    if language is None:
        raise Unmapped("news: no language; set news.language or the locale's hreflang in the mapping")
    published = document.published_at or document.updated_at
    if published is None:
        raise Unmapped("news: the payload has no publication date")
    return {
        "publication_name": news.publication_name,
        "publication_language": language,
        "publication_date": published,
        "title": title,
    }
