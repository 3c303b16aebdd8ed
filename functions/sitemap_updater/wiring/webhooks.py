"""Wiring at the edge for the webhook function: its receiver, built once per process at cold start from the
environment (or set by a local runner and tests), and the mapping file it is deployed with."""

from __future__ import annotations

import os
from pathlib import Path

from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.adapters.secrets import CachedSecrets, secret_reader
from sitemap_updater.adapters.webhook_documents import DocumentUrls
from sitemap_updater.core.webhooks_mapping import WebhookMapping
from sitemap_updater.service.webhooks import WebhookReceiver
from sitemap_updater.settings import Settings
from sitemap_updater.wiring.pipeline import BotocoreClients

FUNCTIONS_DIR = Path(__file__).resolve().parents[2]  # /var/task on Lambda: where the mapping file is deployed


def load_mapping(path: str | Path) -> WebhookMapping:
    """Read and validate a mapping file (JSON); a relative path is relative to the functions' directory."""
    resolved = Path(path) if Path(path).is_absolute() else FUNCTIONS_DIR / path
    return WebhookMapping.model_validate_json(resolved.read_bytes())


_current: WebhookReceiver | None = None


def current_receiver() -> WebhookReceiver:
    """The receiver of this process, built at the first request (cold start) from the environment."""
    global _current
    if _current is None:
        settings = Settings.from_env(os.environ)
        if not settings.ingest_queue_url or not settings.webhook_secret_id:
            raise RuntimeError("INGEST_QUEUE_URL and WEBHOOK_SECRET_ID must be set for the webhook function")
        clients = BotocoreClients()
        _current = WebhookReceiver(
            site=settings.site,
            mapping=load_mapping(settings.webhook_mapping_file),
            secrets=CachedSecrets(
                secret_reader(clients.client("secretsmanager"), settings.webhook_secret_id),
                settings.webhook_secret_ttl_seconds,
            ),
            queue=MessageQueue(clients.client("sqs"), settings.ingest_queue_url),
            max_body_bytes=settings.webhook_max_body_bytes,
            window_s=settings.webhook_window_seconds,
            clock_skew_s=settings.event_clock_skew_seconds,
            documents=DocumentUrls(clients.client("dynamodb"), settings.manifest_table),
        )
    return _current


def use_receiver(receiver: WebhookReceiver | None) -> None:
    """Serve the handler of this process with ``receiver`` (local runs and tests); None resets."""
    global _current
    _current = receiver
