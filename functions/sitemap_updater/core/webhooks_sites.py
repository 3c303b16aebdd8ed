"""Which site a CMS document's page is on, for one webhook endpoint serving several sites. Pure.

The mapping's ``sites`` section is a table from a value of the document to a site's origin: the document's locale
(a site per language), a value of the webhook's body (a Contentful space or environment, a Storyblok space, a Sanity
dataset projected into the body) or a field of the document (a "site" reference, or an absolute URL whose host is
the key). The page's path comes from the type's URL template as for one site; the origin is put before it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sitemap_updater.core.urls import Site, UrlError
from sitemap_updater.core.webhooks_payloads import lookup

_PATH = r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*"
SELECTOR = re.compile(rf"^(locale|payload:{_PATH}|field:{_PATH})$")


class SiteUnmatched(ValueError):
    """No site of the mapping matches the document: a 400 naming what was looked at, nothing enqueued."""


class SiteSelector(BaseModel):
    """``{"by": "locale" | "payload:<path>" | "field:<path>", "key": "value" | "host", "origins": {value: origin},
    "default": origin}``: the origin of a document's pages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by: Annotated[str, Field(pattern=SELECTOR.pattern)]
    key: Literal["value", "host"] = "value"  # host: the value is an absolute URL, and its host is looked up
    origins: Annotated[dict[str, str], Field(min_length=1)]
    default: str | None = None

    @field_validator("origins")
    @classmethod
    def _origins(cls, value: dict[str, str]) -> dict[str, str]:
        return {key: _origin(origin) for key, origin in value.items()}

    @field_validator("default")
    @classmethod
    def _default(cls, value: str | None) -> str | None:
        return None if value is None else _origin(value)

    @property
    def scopes_documents(self) -> bool:
        """True when the value names where a document lives (a space, a dataset): the same id in two of them is
        two documents, so the URLs remembered for a document are kept per value."""
        return self.by.startswith("payload:")

    def origin(self, locale: str | None, fields: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
        """The origin (``https://www.example.de``) of one locale's page of a document; SiteUnmatched naming the
        value looked at when no site matches and there is no default."""
        value = self.value(locale, fields, payload)
        found = self.origins.get(value) if value is not None else None
        if found is not None:
            return found
        if self.default is not None:
            return self.default
        what = self.by if self.key == "value" else f"the host of {self.by}"
        known = ", ".join(sorted(self.origins))
        if value is None:
            raise SiteUnmatched(f"site: {what} is missing in the payload; the mapping's sites choose the site by it")
        raise SiteUnmatched(f"site: {what} is {value!r}, which is no site in the mapping's sites (it has: {known})")

    def value(self, locale: str | None, fields: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
        """The value the site is chosen by, as text (numbers such as Storyblok's space id included)."""
        if self.by == "locale":
            raw: Any = locale
        else:
            source, path = self.by.split(":", 1)
            raw = lookup(fields if source == "field" else payload, path)
        if isinstance(raw, int) and not isinstance(raw, bool):
            raw = str(raw)
        if not isinstance(raw, str) or not raw:
            return None
        if self.key == "host":
            try:
                return urlsplit(raw).hostname or None
            except ValueError:
                return None
        return raw


def _origin(value: str) -> str:
    try:
        return Site.parse(value).base_url
    except UrlError as exc:
        raise ValueError(str(exc)) from None
