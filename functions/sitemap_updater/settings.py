"""Settings: one pydantic model, read once at cold start from the environment and passed down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sitemap_updater.core.event_rules import FUTURE_SKEW_SECONDS
from sitemap_updater.core.freshness import (
    BURST_PAGES,
    INGEST_WINDOW_SECONDS,
    MAX_INGEST_WINDOW_SECONDS,
    FreshnessError,
    check_freshness,
    parse_section_freshness,
    section_freshness,
)
from sitemap_updater.core.sharding import DEFAULT_URLS_PER_FILE, MAX_FILES_PER_INDEX, MAX_URLS_PER_FILE, Limits
from sitemap_updater.core.urls import FilesBase, Site, UrlError, parse_sections

_ENV = {
    "site_url": "SITE_URL",
    "sitemap_base_url": "SITEMAP_BASE_URL",
    "event_clock_skew_seconds": "EVENT_CLOCK_SKEW_SECONDS",
    "max_urls_per_file": "MAX_URLS_PER_FILE",
    "sections": "SECTIONS",
    "max_files_per_index": "MAX_FILES_PER_INDEX",
    "text_sitemaps": "TEXT_SITEMAPS",
    "dashboard_metrics": "DASHBOARD_METRICS",
    "feed_entries": "FEED_ENTRIES",
    "feed_max_age_seconds": "FEED_MAX_AGE_SECONDS",
    "manifest_table": "MANIFEST_TABLE",
    "section_partitions": "SECTION_PARTITIONS",
    "bucket_name": "BUCKET_NAME",
    "rebuild_queue_url": "REBUILD_QUEUE_URL",
    "index_queue_url": "INDEX_QUEUE_URL",
    "notify_queue_url": "NOTIFY_QUEUE_URL",
    "ingest_dlq_url": "INGEST_DLQ_URL",
    "ingest_max_receive_count": "INGEST_MAX_RECEIVE_COUNT",
    "rebuild_dlq_url": "REBUILD_DLQ_URL",
    "rebuild_max_receive_count": "REBUILD_MAX_RECEIVE_COUNT",
    "index_dlq_url": "INDEX_DLQ_URL",
    "index_max_receive_count": "INDEX_MAX_RECEIVE_COUNT",
    "notify_dlq_url": "NOTIFY_DLQ_URL",
    "notify_max_receive_count": "NOTIFY_MAX_RECEIVE_COUNT",
    "cdn_max_age_seconds": "CDN_MAX_AGE_SECONDS",
    "freshness_seconds": "FRESHNESS_SECONDS",
    "section_freshness": "SECTION_FRESHNESS",
    "ingest_window_seconds": "INGEST_WINDOW_SECONDS",
    "rebuild_settle_pages": "REBUILD_SETTLE_PAGES",
    "retired_file_grace_seconds": "RETIRED_FILE_GRACE_SECONDS",
    "indexnow_key": "INDEXNOW_KEY",
    "indexnow_endpoint": "INDEXNOW_ENDPOINT",
    "indexnow_window_seconds": "INDEXNOW_WINDOW_SECONDS",
    "notify_dry_run": "NOTIFY_DRY_RUN",
    "search_console_secret_arn": "SEARCH_CONSOLE_SECRET_ARN",
    "search_console_property": "SEARCH_CONSOLE_PROPERTY",
    "search_console_interval_seconds": "SEARCH_CONSOLE_INTERVAL_SECONDS",
    "search_console_api": "SEARCH_CONSOLE_API",
    "robots_check": "ROBOTS_CHECK",
    "ingest_queue_url": "INGEST_QUEUE_URL",
    "webhook_secret_id": "WEBHOOK_SECRET_ID",
    "webhook_secret_ttl_seconds": "WEBHOOK_SECRET_TTL_SECONDS",
    "webhook_mapping_file": "WEBHOOK_MAPPING_FILE",
    "webhook_max_body_bytes": "WEBHOOK_MAX_BODY_BYTES",
    "webhook_window_seconds": "WEBHOOK_WINDOW_SECONDS",
}
INDEXNOW_ENDPOINT = "https://api.indexnow.org/indexnow"
# The largest webhook body accepted by default (WebhookMaxBodyBytes): Ghost sends a post's html and plaintext (and,
# before 2025, its editor JSON) in ``current`` and again in ``previous``, so a long post's edit is 1-2 MB. Twice
# that, and under the 6 MB a Function URL passes to Lambda once the body is escaped into its event (2-5% more for
# a post's html, plaintext and editor JSON, measured).
WEBHOOK_MAX_BODY_BYTES = 4_194_304
SEARCH_CONSOLE_API = "https://www.googleapis.com/webmasters/v3"
Name = Annotated[str, Field(min_length=1)]
ReceiveCount = Annotated[int, Field(ge=0, le=1000)]  # SQS allows maxReceiveCount 1..1000


class SettingsError(ValueError):
    """Settings are missing or invalid; the message names the environment variables."""


class Settings(BaseModel):
    """Everything a function needs to know about its stack. Resource names have no defaults."""

    model_config = ConfigDict(frozen=True)

    site_url: Name
    # Where the sitemap files are served, when not on the site's own host (the stack's SitemapDomain): the index
    # names its files there, and the site's robots.txt names the index there (a cross-submission). Empty: the site.
    sitemap_base_url: str = ""
    max_urls_per_file: Annotated[int, Field(ge=1, le=MAX_URLS_PER_FILE)] = DEFAULT_URLS_PER_FILE
    # Files one index may name: 50,000 (the protocol's limit); lower only to try several index files on a small site.
    max_files_per_index: Annotated[int, Field(ge=1, le=MAX_FILES_PER_INDEX)] = MAX_FILES_PER_INDEX
    # A text sitemap (the same URLs, one a line) beside each sitemap file: sitemap-<section>-<start>.txt.
    text_sitemaps: bool = False
    # The custom metrics only the dashboard shows (CreateDashboard): each costs $0.30 a metric-month while published.
    dashboard_metrics: bool = False
    # The recent-changes Atom feed (sitemap-changes.atom): how many pages it lists (0: no feed), and how long the
    # CDN and crawlers may keep it.
    feed_entries: Annotated[int, Field(ge=0, le=1000)] = 0
    feed_max_age_seconds: Annotated[int, Field(ge=0, le=3600)] = 60
    # How far past now an event's occurred_at and lastmod may be (clocks differ); a later one is rejected, naming
    # the field, since it would outrank every real change to its page until then and publish a future lastmod.
    event_clock_skew_seconds: Annotated[int, Field(ge=0, le=86_400)] = FUTURE_SKEW_SECONDS
    # First path segments whose pages get files of their own ("blog,news"; "*": every one); the rest are in root.
    sections: str = ""
    manifest_table: Name
    # Partition keys each section's manifest entries are spread over, by key range (SectionPartitions, a power of
    # two): one key takes at most 1,000 write units a second (docs/architecture.md, "Partitions"). Chosen before the
    # first load: entries are found only under the keys this count gives.
    section_partitions: Annotated[int, Field(ge=1, le=256)] = 1
    bucket_name: Name
    rebuild_queue_url: Name
    index_queue_url: Name
    notify_queue_url: Name
    ingest_dlq_url: Name
    # The ingest queue's maxReceiveCount: on that receive a failing event goes to the dead-letter queue with its
    # error as the reason (SQS's own redrive would move it without one). 0: leave it to SQS.
    ingest_max_receive_count: ReceiveCount = 0
    # The same for the FIFO rebuild, index and notify queues: their dead-letter queues (FIFO) and their queues'
    # maxReceiveCount. Without a URL, or with 0, a message failing on every receive is left to SQS's redrive.
    rebuild_dlq_url: str = ""
    rebuild_max_receive_count: ReceiveCount = 0
    index_dlq_url: str = ""
    index_max_receive_count: ReceiveCount = 0
    notify_dlq_url: str = ""
    notify_max_receive_count: ReceiveCount = 0
    # How long the CDN may serve a file or the index after it changed (their Cache-Control max-age, the cache
    # policies' TTL and the index queue's delay); 0 where nothing caches (local runs, tests). And how long a file
    # the index no longer names is kept, so that an index a CDN or crawler still holds never names a missing file.
    cdn_max_age_seconds: Annotated[int, Field(ge=0, le=3600)] = 0
    retired_file_grace_seconds: Annotated[int, Field(ge=0, le=7 * 86_400)] = 0
    # How long after an event is accepted the CDN may still serve a file without its change (core/freshness.py):
    # a section's rebuild waits at most what is left of it once the ingest window, the functions' runs and the
    # CDN lifetime are counted, so that a busy section is rebuilt about once per that wait. 0: never wait (local
    # runs, tests). ``section_freshness``: ``section=seconds`` pairs that override it (news=30,products=900).
    freshness_seconds: Annotated[int, Field(ge=0)] = 0
    section_freshness: str = ""
    # The ingest event source's batching window (IngestWindowSeconds): the hold counts it as it is.
    ingest_window_seconds: Annotated[int, Field(ge=0, le=MAX_INGEST_WINDOW_SECONDS)] = INGEST_WINDOW_SECONDS
    # Changed pages in a quiet section's first rebuild request that make a burst worth waiting for (not a
    # parameter of the template; the simulation lowers it to make bursts of its few events).
    rebuild_settle_pages: Annotated[int, Field(ge=1)] = BURST_PAGES
    # Notifications. IndexNow is off without a key; Search Console is off without a secret.
    indexnow_key: Annotated[str, Field(pattern=r"^([a-zA-Z0-9-]{8,128})?$")] = ""
    indexnow_endpoint: Annotated[str, Field(pattern=r"^https?://")] = INDEXNOW_ENDPOINT
    indexnow_window_seconds: Annotated[int, Field(ge=0, le=86_400)] = 300
    notify_dry_run: bool = False
    search_console_secret_arn: str = ""
    search_console_property: str = ""
    search_console_interval_seconds: Annotated[int, Field(ge=0)] = 3600
    search_console_api: Annotated[str, Field(pattern=r"^https?://")] = SEARCH_CONSOLE_API
    robots_check: bool = False
    # Webhooks (issue 16): the queue the endpoint sends page events to; the secret's ARN (Secrets Manager, the
    # only store the template grants), read again after its TTL; the mapping file (relative to the functions'
    # directory); the largest body accepted (413 above); how far a signed timestamp may be from now.
    ingest_queue_url: str = ""
    webhook_secret_id: str = ""
    webhook_secret_ttl_seconds: Annotated[int, Field(ge=0, le=86_400)] = 300
    webhook_mapping_file: str = "webhook-mapping.json"
    webhook_max_body_bytes: Annotated[int, Field(ge=1024, le=6_291_456)] = WEBHOOK_MAX_BODY_BYTES
    webhook_window_seconds: Annotated[int, Field(ge=1, le=86_400)] = 300

    @field_validator("site_url")
    @classmethod
    def _valid_site(cls, value: str) -> str:
        try:
            Site.parse(value)
        except UrlError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @field_validator("sitemap_base_url")
    @classmethod
    def _valid_sitemap_base(cls, value: str) -> str:
        if value:
            try:
                FilesBase.parse(value)
            except UrlError as exc:
                raise ValueError(str(exc)) from exc
        return value

    @field_validator("section_partitions")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("must be a power of two (1, 2, 4, ... 256)")
        return value

    @field_validator("sections")
    @classmethod
    def _valid_sections(cls, value: str) -> str:
        parse_sections(value)
        return value

    @model_validator(mode="after")
    def _honourable_freshness(self) -> Settings:
        try:
            window = self.ingest_window_seconds
            check_freshness(self.freshness_seconds, self.cdn_max_age_seconds, window=window)
            for section, seconds in parse_section_freshness(self.section_freshness).items():
                check_freshness(seconds, self.cdn_max_age_seconds, f"SectionFreshness {section}", window)
        except FreshnessError as exc:
            raise ValueError(str(exc)) from None
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read settings from environment variables (``SITE_URL``, ``MANIFEST_TABLE``, ...)."""
        values = {field: env[name] for field, name in _ENV.items() if env.get(name)}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = [_problem(e["loc"], e["msg"]) for e in exc.errors()]
            raise SettingsError("invalid settings: " + "; ".join(problems)) from None

    @property
    def site(self) -> Site:
        return Site.parse(self.site_url, sections=parse_sections(self.sections))

    @property
    def files_site(self) -> FilesBase:
        """Where the sitemap files and index files are served: ``sitemap_base_url``, else the site."""
        return FilesBase.parse(self.sitemap_base_url or self.site.base_url)

    @property
    def property_url(self) -> str:
        """The Search Console property: as configured (``sc-domain:...`` or a URL prefix), else the site root."""
        return self.search_console_property or f"{self.site.base_url}/"

    @property
    def announces_pages(self) -> bool:
        """Whether anything hears of changed pages (IndexNow, the recent-changes feed): without either a rebuild
        sends no change record, and the notifier's queue is not polled (template.yaml: HasNotifier)."""
        return bool(self.indexnow_key) or self.feed_entries > 0

    @property
    def announces_index(self) -> bool:
        """Whether Search Console hears of a changed index: the only reader of an index rebuild's change record."""
        return bool(self.search_console_secret_arn)

    def freshness_for(self, section: str) -> int:
        """The freshness of ``section``'s files: its SectionFreshness override, else FreshnessSeconds."""
        return section_freshness(section, self.freshness_seconds, parse_section_freshness(self.section_freshness))

    @property
    def limits(self) -> Limits:
        return Limits(max_urls=self.max_urls_per_file, max_files_per_index=self.max_files_per_index)


def _problem(loc: tuple[int | str, ...], message: str) -> str:
    """One validation error, naming its environment variable (a check of several fields names them itself)."""
    if not loc:
        return message.removeprefix("Value error, ")
    return f"{_ENV.get(str(loc[0]), loc[0])}: {message}"
