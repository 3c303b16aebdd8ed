"""Lambda: rebuild the sitemap files of the sections named in a FIFO batch."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.messages import rebuild_batch
from sitemap_updater.service.runtime import current_pipeline

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    outcome = rebuild_batch(event.get("Records", []), current_pipeline())
    for done in outcome.sections:
        logger.info(
            "section rebuilt",
            extra={"section": done.section, "put": done.put, "retired": done.retired, "read": done.entries_read},
        )
        metrics.add_metric(name="FilesWritten", unit=MetricUnit.Count, value=len(done.put))
    for section, error in outcome.errors.items():
        logger.error("section rebuild failed", extra={"section": section, "error": error})
    return outcome.response()
