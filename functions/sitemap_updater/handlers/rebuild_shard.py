"""Lambda: rebuild the sitemap files of the sections named in a FIFO batch."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.handlers.counts import dashboard_count
from sitemap_updater.handlers.dead_letters import report_dead_letters, report_gone
from sitemap_updater.service.batches import rebuild_batch
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import message_site, route

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Each site's messages by its own pipeline (their groups are the site's: splitting keeps each group's order).
    routed = route(current_sites(), event.get("Records", []), message_site)
    failures: list[str] = []
    for pipeline, records in routed.batches:
        failures += _rebuild(records, pipeline)
    report_gone(logger, routed.gone)
    return {"batchItemFailures": [{"itemIdentifier": m} for m in failures]}


def _rebuild(records: list[dict[str, Any]], pipeline: Pipeline) -> list[str]:
    outcome = rebuild_batch(records, pipeline)
    site = {"site": pipeline.site.netloc}
    if outcome.parked:
        logger.info("rebuild requests parked until the running import ends", extra={"messages": outcome.parked})
    for done in outcome.sections:
        logger.info(
            "section rebuilt",
            extra={"section": done.section, "put": done.put, "files_written": len(done.put), "retired": done.retired,
                   "read": done.entries_read, **site},
        )  # fmt: skip
        dashboard_count(metrics, "FilesWritten", len(done.put))
        for latency in done.latencies_s:  # event recorded -> its file published; the p99 is alarmed
            metrics.add_metric(name="PublishLatency", unit=MetricUnit.Seconds, value=latency)
    for section, seconds in outcome.deferred.items():
        logger.info("held: the rebuild waits (freshness)", extra={"section": section, "seconds": seconds, **site})
    for section, count in outcome.merged.items():
        logger.info("held: waiting messages merged into fewer", extra={"section": section, "messages": count})
    for section, error in outcome.errors.items():
        logger.error("section rebuild failed", extra={"section": section, "error": error, **site})
    for message_id, error in outcome.unreadable.items():
        logger.error("rebuild message unreadable", extra={"message_id": message_id, "error": error})
    report_dead_letters(logger, metrics, outcome.dead_lettered, outcome.unsent)
    return list(outcome.failures)
