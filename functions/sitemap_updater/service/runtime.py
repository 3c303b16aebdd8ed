"""The pipeline of this process: built once at cold start from the environment, or set by a local runner."""

from __future__ import annotations

import os

import boto3

from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.settings import Settings

_current: Pipeline | None = None


def current_pipeline() -> Pipeline:
    """The pipeline for this process; the first call reads and validates the settings (cold start)."""
    global _current
    if _current is None:
        _current = Pipeline.connect(Settings.from_env(os.environ), boto3.session.Session())
    return _current


def use_pipeline(pipeline: Pipeline | None) -> None:
    """Run the handlers of this process against ``pipeline`` (local runs and tests); None resets."""
    global _current
    _current = pipeline
