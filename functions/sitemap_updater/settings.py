"""Settings: one pydantic model, read once at cold start from the environment and passed down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sitemap_updater.core.sharding import DEFAULT_URLS_PER_FILE, MAX_URLS_PER_FILE, Limits
from sitemap_updater.core.urls import Site, UrlError

_ENV = {
    "site_url": "SITE_URL",
    "max_urls_per_file": "MAX_URLS_PER_FILE",
    "manifest_table": "MANIFEST_TABLE",
    "bucket_name": "BUCKET_NAME",
    "distribution_id": "DISTRIBUTION_ID",
    "rebuild_queue_url": "REBUILD_QUEUE_URL",
    "index_queue_url": "INDEX_QUEUE_URL",
    "notify_queue_url": "NOTIFY_QUEUE_URL",
    "ingest_dlq_url": "INGEST_DLQ_URL",
}
Name = Annotated[str, Field(min_length=1)]


class SettingsError(ValueError):
    """Settings are missing or invalid; the message names the environment variables."""


class Settings(BaseModel):
    """Everything a function needs to know about its stack. Resource names have no defaults."""

    model_config = ConfigDict(frozen=True)

    site_url: Name
    max_urls_per_file: Annotated[int, Field(ge=1, le=MAX_URLS_PER_FILE)] = DEFAULT_URLS_PER_FILE
    manifest_table: Name
    bucket_name: Name
    distribution_id: Name
    rebuild_queue_url: Name
    index_queue_url: Name
    notify_queue_url: Name
    ingest_dlq_url: Name

    @field_validator("site_url")
    @classmethod
    def _valid_site(cls, value: str) -> str:
        try:
            Site.parse(value)
        except UrlError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read settings from environment variables (``SITE_URL``, ``MANIFEST_TABLE``, ...)."""
        values = {field: env[name] for field, name in _ENV.items() if env.get(name)}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = [f"{_ENV.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" for e in exc.errors()]
            raise SettingsError("invalid settings: " + "; ".join(problems)) from None

    def to_env(self) -> dict[str, str]:
        """The environment variables that give these settings (for local runs and tests)."""
        return {name: str(getattr(self, field)) for field, name in _ENV.items()}

    @property
    def site(self) -> Site:
        return Site.parse(self.site_url)

    @property
    def limits(self) -> Limits:
        return Limits(max_urls=self.max_urls_per_file)
