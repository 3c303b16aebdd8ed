"""Sites added to a stack at run time (issue 32): one pydantic model per site, stored as an item of the manifest
table (pk ``sites``, sort key the site's host, ``adapters/sites.py``) and read by the functions through the
``SiteDirectory`` port with a cache (``wiring/sites.py``).

A site has what makes its sitemaps its own: its canonical origin, sections, text sitemaps, feed, freshness,
IndexNow key and Search Console property. Everything else (resource names, limits, the CDN lifetime, the Search
Console credentials) is the stack's, from its settings. The stack's own site (``SiteUrl``) needs no item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sitemap_updater.core.freshness import FreshnessError, parse_section_freshness
from sitemap_updater.core.site_keys import HostError, check_host
from sitemap_updater.core.urls import FilesBase, Site, UrlError, parse_sections
from sitemap_updater.settings import Settings

ACTIVE: Final = "active"
REMOVING: Final = "removing"  # ``sites remove`` began: its events are refused while its files and records are deleted


class SiteConfigError(ValueError):
    """A site's configuration is invalid; the message names each field."""


class SiteConfig(BaseModel):
    """One site of the stack, as ``sitemap-updater sites add`` stores it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The canonical scheme and host (https://www.example.de): its events' URLs must be on it, its files name it.
    origin: str
    # First path segments whose pages get files of their own ("blog,news"; "*": every one), as ``Sections``.
    sections: str = ""
    text_sitemaps: bool = False
    feed_entries: Annotated[int, Field(ge=0, le=1000)] = 0
    # None: the stack's FreshnessSeconds and SectionFreshness.
    freshness_seconds: Annotated[int, Field(ge=0)] | None = None
    section_freshness: str | None = None
    indexnow_key: Annotated[str, Field(pattern=r"^([a-zA-Z0-9-]{8,128})?$")] = ""
    # "" : the origin's root (a URL-prefix property); else ``sc-domain:example.de`` or a URL prefix.
    search_console_property: str = ""
    # Where its files are served. "" : on its own host, whose CDN routes /sitemap* and /<key>.txt to the stack's
    # distribution under /sites/<host> (docs/deploy.md); else the base URL its files are named under, such as
    # https://<SitemapDomain or the distribution's domain>/sites/<host> (a cross-submission: the site's robots.txt
    # names the index there). ``sites add --served-at`` resolves it once.
    served_at: str = ""
    state: Literal["active", "removing"] = ACTIVE

    @field_validator("origin")
    @classmethod
    def _canonical_origin(cls, value: str) -> str:
        try:
            site = Site.parse(value)
            check_host(site.netloc)
        except (UrlError, HostError) as exc:
            raise ValueError(str(exc)) from None
        return site.base_url

    @field_validator("sections")
    @classmethod
    def _valid_sections(cls, value: str) -> str:
        parse_sections(value)
        return value

    @field_validator("indexnow_key")
    @classmethod
    def _key_is_no_sitemap_name(cls, value: str) -> str:
        # Its file (sites/<host>/<key>.txt) must never be a text sitemap's name, nor one the grants keep from the
        # notifier (template.yaml: NoSiteFileButTheKeyFile).
        if value.startswith("sitemap"):
            raise ValueError("must not start with 'sitemap' (its key file would be named like a sitemap file)")
        return value

    @field_validator("served_at")
    @classmethod
    def _valid_served_at(cls, value: str) -> str:
        if value:
            try:
                return FilesBase.parse(value).base_url
            except UrlError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("section_freshness")
    @classmethod
    def _valid_section_freshness(cls, value: str | None) -> str | None:
        if value:
            try:
                parse_section_freshness(value)
            except FreshnessError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("search_console_property")
    @classmethod
    def _valid_property(cls, value: str) -> str:
        if value and not (value.startswith("sc-domain:") or value.startswith(("https://", "http://"))):
            raise ValueError("must be sc-domain:<domain> or a URL prefix (https://www.example.de/)")
        return value

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> SiteConfig:
        """A site from its fields; SiteConfigError naming each invalid field."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            problems = [_problem(e["loc"], e["msg"]) for e in exc.errors()]
            raise SiteConfigError("invalid site: " + "; ".join(problems)) from None

    @property
    def host(self) -> str:
        """The site's host, which names its tree (core/site_keys.py)."""
        return Site.parse(self.origin).netloc

    @property
    def files(self) -> FilesBase:
        """Where the site's files are served: ``served_at``, else its own host's root."""
        return FilesBase.parse(self.served_at or self.origin)

    def settings(self, stack: Settings) -> Settings:
        """The stack's settings with this site's own: what its pipeline runs with. Its files are named where
        ``served_at`` says (the stack's SitemapDomain serves the stack's own site). SiteConfigError when the
        combination is not valid (a freshness the stack's CDN lifetime cannot honour)."""
        values = stack.model_dump()
        values.update(
            site_url=self.origin,
            sitemap_base_url=self.served_at,
            sections=self.sections,
            text_sitemaps=self.text_sitemaps,
            feed_entries=self.feed_entries,
            indexnow_key=self.indexnow_key,
            search_console_property=self.search_console_property,
        )
        if self.freshness_seconds is not None:
            values["freshness_seconds"] = self.freshness_seconds
        if self.section_freshness is not None:
            values["section_freshness"] = self.section_freshness
        try:
            return Settings.model_validate(values)
        except ValidationError as exc:
            problems = [_problem(e["loc"], e["msg"]) for e in exc.errors()]
            raise SiteConfigError(f"site {self.host} cannot run on this stack: " + "; ".join(problems)) from None


def _problem(loc: tuple[int | str, ...], message: str) -> str:
    message = message.removeprefix("Value error, ")
    return f"{loc[0]}: {message}" if loc else message
