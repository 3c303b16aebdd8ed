"""Counts the dashboard shows: custom metrics only on a stack with the dashboard (``CreateDashboard``), since each
metric costs $0.30 a metric-month in every hour it is published. The alarms' metrics are always published; a count
that is not published is still in its invocation's log line."""

from __future__ import annotations

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from sitemap_updater.wiring.pipeline import current_pipeline


def dashboard_count(metrics: Metrics, name: str, value: int) -> None:
    if current_pipeline().settings.dashboard_metrics:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
