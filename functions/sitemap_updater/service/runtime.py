"""The pipeline of this process: built once at cold start from the environment, or set by a local runner."""

from __future__ import annotations

import os

import boto3

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.adapters.search_console import SearchConsole, service_account_token
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.settings import Settings

_current: Pipeline | None = None
_notifiers: Notifiers | None = None


def current_pipeline() -> Pipeline:
    """The pipeline for this process; the first call reads and validates the settings (cold start)."""
    global _current
    if _current is None:
        _current = Pipeline.connect(Settings.from_env(os.environ), boto3.session.Session())
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
                boto3.session.Session().client("secretsmanager"), settings.search_console_secret_arn
            )
            console = SearchConsole(http, token, settings.search_console_api)
        _notifiers = Notifiers(http, console)
    return _notifiers


def use_pipeline(pipeline: Pipeline | None, notifiers: Notifiers | None = None) -> None:
    """Run the handlers of this process against ``pipeline`` (local runs and tests); None resets."""
    global _current, _notifiers
    _current = pipeline
    _notifiers = notifiers
