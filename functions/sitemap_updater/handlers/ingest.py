"""Lambda: ingest page events from SQS (partial batch responses)."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.handlers.counts import dashboard_count
from sitemap_updater.service.ingest import DeadLettered, Rejected, event_urls, ingest_message
from sitemap_updater.service.marks import MarkBatch
from sitemap_updater.wiring.pipeline import current_pipeline

logger = Logger()
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel)


def record_handler(
    record: SqsRecordModel, marks: MarkBatch | None = None, outcomes: Counter[str] | None = None
) -> None:
    outcomes = Counter() if outcomes is None else outcomes
    receives = int(record.attributes.ApproximateReceiveCount or 1)
    result = ingest_message(str(record.body), record.messageId, current_pipeline(), receives, marks)
    if isinstance(result, DeadLettered):
        logger.error("event failed on every receive", extra={"reason": result.reason, "message_id": record.messageId})
        metrics.add_metric(name="EventsDeadLettered", unit=MetricUnit.Count, value=1)
        outcomes["dead_lettered"] += 1
        return
    if isinstance(result, Rejected):
        logger.warning("event rejected", extra={"reason": result.reason, "message_id": record.messageId})
        dashboard_count(metrics, "EventsRejected", 1)
        outcomes["rejected"] += 1
        return
    for warning in result.warnings:
        logger.warning("event canonicalised", extra={"url": result.url, "warning": warning})
    if result.unknown_fields:
        logger.info("unknown fields ignored", extra={"url": result.url, "fields": list(result.unknown_fields)})
    dashboard_count(metrics, f"Events{result.outcome.value.title()}", 1)
    outcomes[result.outcome.value] += 1


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The batch's rebuild marks go out together, one message per section, once every record is recorded; the
    # outbox opened before its first change names the URLs of all its events.
    pipeline = current_pipeline()
    bodies = [str(record.get("body", "")) for record in event.get("Records", [])]
    marks = MarkBatch(pipeline, partial(event_urls, pipeline, bodies))
    outcomes: Counter[str] = Counter()
    response = process_partial_response(
        event=event,
        record_handler=partial(record_handler, marks=marks, outcomes=outcomes),
        processor=processor,
        context=context,
    )
    marks.flush()
    logger.info("batch ingested", extra={"events": len(bodies), **outcomes})
    return dict(response)
