"""Lambda: rewrite sitemap.xml when it changes."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.handlers.counts import dashboard_count
from sitemap_updater.handlers.dead_letters import report_dead_letters, report_gone
from sitemap_updater.service.batches import index_batch
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import message_site, route

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    routed = route(current_sites(), event.get("Records", []), message_site)
    failures: list[str] = []
    for pipeline, records in routed.batches:  # each site's index of its own
        failures += _index(records, pipeline)
    report_gone(logger, routed.gone)
    return {"batchItemFailures": [{"itemIdentifier": m} for m in failures]}


def _index(records: list[dict[str, Any]], pipeline: Pipeline) -> list[str]:
    done, settled = index_batch(records, pipeline)
    site = {"site": pipeline.site.netloc}
    if isinstance(done, str):
        logger.error("index rebuild failed; its requests will be retried", extra={"error": done, **site})
    elif isinstance(done, int):
        logger.info("index requests wait for their due time", extra={"seconds": done, "requests": len(records)})
    else:
        logger.info(
            "index rebuilt", extra={"written": done.written, "files": done.files, "unnamed": done.unnamed, **site}
        )
        dashboard_count(metrics, "IndexWritten", int(done.written))
    report_dead_letters(logger, metrics, settled.dead_lettered, settled.unsent)
    return list(settled.failures)
