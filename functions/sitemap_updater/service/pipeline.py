"""The pipeline's dependencies, wired once per cold start (or per local run) and passed to every use case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.config import Config

from sitemap_updater.adapters.manifest import ManifestStore
from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site
from sitemap_updater.settings import Settings

# Every AWS client retries inside botocore in "standard" mode: throttling (DynamoDB's
# ProvisionedThroughputExceededException and ThrottlingException, S3's 503 SlowDown, SQS's RequestThrottled),
# 5xx and transient network errors, with exponential backoff and full jitter, and a retry quota that stops
# retrying when most calls fail. Not "adaptive": its client-side rate limiter learns from one client's
# throttles, and a Lambda container's client lives for a few invocations among many concurrent ones.
# Four attempts: the worst backoff (about 1 + 2 + 4 s for throttles) still fits the ingest function's 30 s.
# What is still failing after that raises, the invocation (or its batch item) fails, and SQS redelivers.
CLIENT_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 4})  # "max_attempts" counts retries only


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Pipeline:
    """Settings plus one adapter per AWS resource."""

    settings: Settings
    store: ManifestStore
    bucket: SitemapBucket
    rebuild_queue: MessageQueue
    index_queue: MessageQueue
    notify_queue: MessageQueue
    dead_letters: MessageQueue
    clock: Callable[[], datetime] = field(default=_now)
    observe: Callable[[object], None] = field(default=lambda _result: None)
    # The FIFO dead-letter queues of the rebuild, index and notify queues (None: failures are left to SQS).
    rebuild_dead_letters: MessageQueue | None = None
    index_dead_letters: MessageQueue | None = None
    notify_dead_letters: MessageQueue | None = None
    site: Site = field(init=False)
    limits: Limits = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "site", self.settings.site)
        object.__setattr__(self, "limits", self.settings.limits)

    @classmethod
    def connect(
        cls,
        settings: Settings,
        make_client: Callable[..., Any],
        endpoint_url: str | None = None,
        clock: Callable[[], datetime] = _now,
        observe: Callable[[object], None] | None = None,
    ) -> Pipeline:
        """Build the clients (optionally against a local endpoint) and the adapters around them.

        ``make_client(service_name, **options)`` makes one AWS client: a boto3 session's ``client`` method, or
        ``runtime.BotocoreClients().client`` on Lambda."""
        extra: dict[str, Any] = {"config": CLIENT_CONFIG}
        if endpoint_url:
            extra["endpoint_url"] = endpoint_url
        sqs = make_client("sqs", **extra)
        return cls(
            settings=settings,
            store=ManifestStore(make_client("dynamodb", **extra), settings.manifest_table),
            bucket=SitemapBucket(make_client("s3", **extra), settings.bucket_name, settings.cdn_max_age_seconds),
            rebuild_queue=MessageQueue(sqs, settings.rebuild_queue_url),
            index_queue=MessageQueue(sqs, settings.index_queue_url),
            notify_queue=MessageQueue(sqs, settings.notify_queue_url),
            dead_letters=MessageQueue(sqs, settings.ingest_dlq_url),
            clock=clock,
            observe=observe or (lambda _result: None),
            rebuild_dead_letters=MessageQueue(sqs, settings.rebuild_dlq_url) if settings.rebuild_dlq_url else None,
            index_dead_letters=MessageQueue(sqs, settings.index_dlq_url) if settings.index_dlq_url else None,
            notify_dead_letters=MessageQueue(sqs, settings.notify_dlq_url) if settings.notify_dlq_url else None,
        )
