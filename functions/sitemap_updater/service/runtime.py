"""The pipeline of this process: built once at cold start from the environment, or set by a local runner."""

from __future__ import annotations

import os
from typing import Any

import botocore.session

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.adapters.search_console import SearchConsole, service_account_token
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.service.pipeline import CLIENT_CONFIG, Pipeline
from sitemap_updater.settings import Settings


class BotocoreClients:
    """AWS clients from a plain botocore session: the clients boto3 would make, without importing boto3 and
    s3transfer (about 100 ms of every cold start); region and credentials come from the Lambda environment."""

    def __init__(self) -> None:
        self._session = botocore.session.get_session()

    def client(self, service_name: str, **kwargs: Any) -> Any:
        """One client, with the pipeline's retry configuration unless ``config`` is given."""
        kwargs.setdefault("config", CLIENT_CONFIG)
        return self._session.create_client(service_name, **kwargs)


_current: Pipeline | None = None
_notifiers: Notifiers | None = None


def current_pipeline() -> Pipeline:
    """The pipeline for this process; the first call reads and validates the settings (cold start)."""
    global _current
    if _current is None:
        _current = Pipeline.connect(Settings.from_env(os.environ), BotocoreClients().client)
    return _current


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


def use_pipeline(pipeline: Pipeline | None, notifiers: Notifiers | None = None) -> None:
    """Run the handlers of this process against ``pipeline`` (local runs and tests); None resets."""
    global _current, _notifiers
    _current = pipeline
    _notifiers = notifiers
