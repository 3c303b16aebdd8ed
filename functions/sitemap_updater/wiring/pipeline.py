"""Wiring at the edge: the AWS clients and adapters of the pipeline, built once per process at cold start from
the environment (or set by a local runner and tests). ``service/`` only receives them, as ports."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime
from typing import Any, TypeVar

import botocore.session
from botocore.config import Config

from sitemap_updater.adapters.executions import StepFunctionsExecutions
from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.adapters.manifest import ManifestStore
from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.adapters.search_console import SearchConsole, service_account_token
from sitemap_updater.adapters.sites import SiteItems
from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.site_keys import SITE_OBJECT_PREFIX
from sitemap_updater.ports import Executions
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.service.pipeline import Pipeline, utc_now
from sitemap_updater.settings import Settings
from sitemap_updater.wiring.sites import SiteCache, Sites

# Every AWS client retries inside botocore in "standard" mode: throttling (DynamoDB's
# ProvisionedThroughputExceededException and ThrottlingException, S3's 503 SlowDown, SQS's RequestThrottled),
# 5xx and transient network errors, with exponential backoff and full jitter, and a retry quota that stops
# retrying when most calls fail. Not "adaptive": its client-side rate limiter learns from one client's
# throttles, and a Lambda container's client lives for a few invocations among many concurrent ones.
# Four attempts: the worst backoff (about 1 + 2 + 4 s for throttles) still fits the ingest function's 30 s.
# What is still failing after that raises, the invocation (or its batch item) fails, and SQS redelivers.
# A pool as large as the bootstrap's writes in flight (service/bootstrap.py RECORD_THREADS), so none waits for or
# discards a connection; a rebuild has RENDER_THREADS calls in flight, the other functions one.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 4},  # "max_attempts" counts retries only
    max_pool_connections=16,
)


# Files a rebuild reads, renders and puts at once. Rendering holds the GIL (and a function of 1,024 MB has 0.58 of a
# vCPU), so more threads would not render faster; eight keep the CPU busy while the others wait on S3. Each file
# in flight holds its XML, gzip and snapshot bytes (about 6 MB at 10,000 URLs): larger files get fewer threads.
RENDER_THREADS = 8
_URLS_IN_FLIGHT = 100_000


def render_threads(urls_per_file: int) -> int:
    """Threads for a rebuild of files of up to ``urls_per_file`` URLs: 8 at 10,000, 4 at 25,000, 2 at 50,000."""
    return max(2, min(RENDER_THREADS, _URLS_IN_FLIGHT // max(urls_per_file, 1)))


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class Threads:
    """The pipeline's fan-out on Lambda: tasks on a pool of threads kept for the life of the container. It waits
    for every task, also when one fails (none is left writing after the invocation has answered), and raises the
    first error in the order of the items."""

    def __init__(self, workers: int = RENDER_THREADS) -> None:
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None

    def __call__(self, task: Callable[[_Item], _Result], items: Sequence[_Item], /) -> list[_Result]:
        if len(items) < 2 or self._workers < 2:
            return [task(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="fan-out")
        futures = [self._pool.submit(task, item) for item in items]
        wait(futures)
        return [future.result() for future in futures]


class BotocoreClients:
    """AWS clients from a plain botocore session: the clients boto3 would make, without importing boto3 and
    s3transfer (about 100 ms of every cold start); region and credentials come from the Lambda environment."""

    def __init__(self) -> None:
        self._session = botocore.session.get_session()

    def client(self, service_name: str, **kwargs: Any) -> Any:
        """One client, with the pipeline's retry configuration unless ``config`` is given."""
        kwargs.setdefault("config", CLIENT_CONFIG)
        return self._session.create_client(service_name, **kwargs)


def connect_pipeline(
    settings: Settings,
    make_client: Callable[..., Any],
    endpoint_url: str | None = None,
    clock: Callable[[], datetime] | None = None,
    observe: Callable[[object], None] | None = None,
) -> Pipeline:
    """Build the clients (optionally against a local endpoint) and the AWS adapters around them.

    ``make_client(service_name, **options)`` makes one AWS client: a boto3 session's ``client`` method, or
    ``BotocoreClients().client`` on Lambda."""
    extra: dict[str, Any] = {"config": CLIENT_CONFIG}
    if endpoint_url:
        extra["endpoint_url"] = endpoint_url
    sqs = make_client("sqs", **extra)
    dynamodb = make_client("dynamodb", **extra)
    return Pipeline(
        settings=settings,
        store=ManifestStore(dynamodb, settings.manifest_table, partitions=settings.section_partitions),
        directory=SiteItems(dynamodb, settings.manifest_table),
        # The stack's own site's listings leave out the other sites' trees (sites/<host>/, wiring/site_ports.py).
        bucket=SitemapBucket(
            make_client("s3", **extra), settings.bucket_name, settings.cdn_max_age_seconds, SITE_OBJECT_PREFIX
        ),
        rebuild_queue=MessageQueue(sqs, settings.rebuild_queue_url),
        index_queue=MessageQueue(sqs, settings.index_queue_url),
        notify_queue=MessageQueue(sqs, settings.notify_queue_url),
        dead_letters=MessageQueue(sqs, settings.ingest_dlq_url),
        clock=clock or utc_now,
        observe=observe or (lambda _result: None),
        rebuild_dead_letters=MessageQueue(sqs, settings.rebuild_dlq_url) if settings.rebuild_dlq_url else None,
        index_dead_letters=MessageQueue(sqs, settings.index_dlq_url) if settings.index_dlq_url else None,
        notify_dead_letters=MessageQueue(sqs, settings.notify_dlq_url) if settings.notify_dlq_url else None,
        fan_out=Threads(render_threads(settings.limits.max_urls)),
    )


_current: Pipeline | None = None
_sites: Sites | None = None
_notifiers: Notifiers | None = None
_executions: Executions | None = None


def current_pipeline() -> Pipeline:
    """The pipeline for this process; the first call reads and validates the settings (cold start)."""
    global _current
    if _current is None:
        _current = connect_pipeline(Settings.from_env(os.environ), BotocoreClients().client)
    return _current


def current_sites() -> Sites:
    """The pipelines of the stack's sites, by host (its own site's is ``current_pipeline()``); the sites' items are
    read through a cache kept for the life of the process."""
    global _sites
    pipeline = current_pipeline()
    if _sites is None or _sites.stack is not pipeline:
        _sites = Sites(pipeline, SiteCache(pipeline.directory) if pipeline.directory is not None else None)
    return _sites


def current_notifiers() -> Notifiers:
    """HTTP clients for notifications; Search Console only when a secret is configured."""
    global _notifiers
    if _notifiers is None:
        settings = current_pipeline().settings
        http = HttpClient()
        console = None
        if settings.search_console_secret_arn:
            token = service_account_token(
                BotocoreClients().client("secretsmanager"), settings.search_console_secret_arn
            )
            console = SearchConsole(http, token, settings.search_console_api)
        _notifiers = Notifiers(http, console)
    return _notifiers


def current_executions() -> Executions:
    """The bootstrap state machine's executions (for the bootstrap worker's scheduled check)."""
    global _executions
    if _executions is None:
        _executions = StepFunctionsExecutions(BotocoreClients().client("stepfunctions"))
    return _executions


def use_executions(executions: Executions | None) -> None:
    """Where the bootstrap worker asks for an execution's status (a local run's harness); None resets."""
    global _executions
    _executions = executions


def use_pipeline(pipeline: Pipeline | None, notifiers: Notifiers | None = None, sites: Sites | None = None) -> None:
    """Run the handlers of this process against ``pipeline`` (local runs and tests), and its sites through
    ``sites`` (a simulation's cache on its virtual clock; None: ``current_sites`` makes one); None resets."""
    global _current, _notifiers, _sites
    _current = pipeline
    _notifiers = notifiers
    _sites = sites
