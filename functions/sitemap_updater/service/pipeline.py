"""The pipeline's dependencies, wired once per cold start (or per local run) and passed to every use case."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sitemap_updater.adapters.cdn import Invalidator
from sitemap_updater.adapters.manifest import ManifestStore
from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site
from sitemap_updater.settings import Settings


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Pipeline:
    """Settings plus one adapter per AWS resource."""

    settings: Settings
    store: ManifestStore
    bucket: SitemapBucket
    cdn: Invalidator
    rebuild_queue: MessageQueue
    index_queue: MessageQueue
    notify_queue: MessageQueue
    dead_letters: MessageQueue
    clock: Callable[[], datetime] = field(default=_now)
    observe: Callable[[object], None] = field(default=lambda _result: None)
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
        extra: dict[str, Any] = {"endpoint_url": endpoint_url} if endpoint_url else {}
        sqs = make_client("sqs", **extra)
        return cls(
            settings=settings,
            store=ManifestStore(make_client("dynamodb", **extra), settings.manifest_table),
            bucket=SitemapBucket(make_client("s3", **extra), settings.bucket_name),
            cdn=Invalidator(make_client("cloudfront", **extra), settings.distribution_id),
            rebuild_queue=MessageQueue(sqs, settings.rebuild_queue_url),
            index_queue=MessageQueue(sqs, settings.index_queue_url),
            notify_queue=MessageQueue(sqs, settings.notify_queue_url),
            dead_letters=MessageQueue(sqs, settings.ingest_dlq_url),
            clock=clock,
            observe=observe or (lambda _result: None),
        )
