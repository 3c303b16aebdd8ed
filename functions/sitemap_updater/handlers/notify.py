"""Lambda: tell search engines about changed pages (IndexNow) and a changed index (Search Console)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.handlers.counts import dashboard_count
from sitemap_updater.handlers.dead_letters import report_dead_letters
from sitemap_updater.service.batches import notify_batch
from sitemap_updater.service.notify import search_console_hint
from sitemap_updater.wiring.pipeline import current_notifiers, current_pipeline

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    records = event.get("Records", [])
    done, settled = notify_batch(records, current_pipeline(), current_notifiers())
    if done is None:
        logger.warning("search engine busy; the change records will be retried", extra={"records": len(records)})
    elif isinstance(done, str):
        logger.error("notification failed; the change records will be retried", extra={"error": done})
    else:
        if done.held:  # changed again inside their quiet window: sent once it ends (the wake-up runs every minute)
            logger.info("held until the quiet window ends", extra={"urls": len(done.held)})
        for sent in done.sent:
            logger.info("notified", extra={"endpoint": sent.endpoint, "status": sent.status, "urls": len(sent.urls)})
            dashboard_count(metrics, "UrlsNotified", len(sent.urls))
        for refused in done.rejected:
            hint = search_console_hint(refused.status or 0) if "googleapis" in refused.endpoint else ""
            logger.error(
                "notification refused",
                extra={
                    "endpoint": refused.endpoint,
                    "status": refused.status,
                    "body": refused.body[:2000],
                    "hint": hint,
                },
            )
            metrics.add_metric(name="NotificationsRejected", unit=MetricUnit.Count, value=1)
    report_dead_letters(logger, metrics, settled.dead_lettered, settled.unsent)
    return {"batchItemFailures": [{"itemIdentifier": m} for m in settled.failures]}
