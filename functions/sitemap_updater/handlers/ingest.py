"""Lambda: ingest page events from SQS (partial batch responses)."""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.handlers.counts import dashboard_count
from sitemap_updater.service.ingest import DeadLettered, IngestResult, Rejected, event_urls, ingest_message
from sitemap_updater.service.marks import MarkBatch
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.sites import event_host, refuse_unknown_host
from sitemap_updater.wiring.pipeline import current_pipeline, current_sites
from sitemap_updater.wiring.sites import route

logger = Logger()
metrics = Metrics()
processor = BatchProcessor(event_type=EventType.SQS, model=SqsRecordModel)


def record_handler(
    record: SqsRecordModel,
    marks: MarkBatch | None = None,
    outcomes: Counter[str] | None = None,
    pipeline: Pipeline | None = None,
) -> None:
    outcomes = Counter() if outcomes is None else outcomes
    receives = int(record.attributes.ApproximateReceiveCount or 1)
    pipeline = pipeline or current_pipeline()
    result = ingest_message(str(record.body), record.messageId, pipeline, receives, marks)
    _report(result, record.messageId, outcomes)


def _report(result: IngestResult | Rejected | DeadLettered, message_id: str, outcomes: Counter[str]) -> None:
    if isinstance(result, DeadLettered):
        logger.error("event failed on every receive", extra={"reason": result.reason, "message_id": message_id})
        metrics.add_metric(name="EventsDeadLettered", unit=MetricUnit.Count, value=1)
        outcomes["dead_lettered"] += 1
        return
    if isinstance(result, Rejected):
        logger.warning("event rejected", extra={"reason": result.reason, "message_id": message_id})
        dashboard_count(metrics, "EventsRejected", 1)
        outcomes["rejected"] += 1
        return
    for warning in result.warnings:
        logger.warning("event canonicalised", extra={"url": result.url, "warning": warning})
    if result.unknown_fields:
        logger.info("unknown fields ignored", extra={"url": result.url, "fields": list(result.unknown_fields)})
    dashboard_count(metrics, f"Events{result.outcome.value.title()}", 1)
    outcomes[result.outcome.value] += 1


def _event_site(stack: Pipeline, record: dict[str, Any]) -> str:
    """The host of the site an event is for: its URL's ("" for the stack's own host, or when there is no URL to
    read, so that the stack's own site refuses it naming the field)."""
    host = event_host(str(record.get("body", "")))
    return "" if host is None or host == stack.site.netloc else host


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Each site's events by its own pipeline, chosen by the host of the event's URL. Within a site, the batch's
    # rebuild marks go out together, one message per section, once every record is recorded; the outbox opened
    # before its first change names the URLs of all its events.
    sites = current_sites()
    records = event.get("Records", [])
    routed = route(sites, records, partial(_event_site, sites.stack), mark=True)
    outcomes: Counter[str] = Counter()
    failures: list[dict[str, str]] = []
    for pipeline, batch in routed.batches:
        bodies = [str(record.get("body", "")) for record in batch]
        marks = MarkBatch(pipeline, partial(event_urls, pipeline, bodies))
        try:
            response = process_partial_response(
                event={**event, "Records": batch},
                record_handler=partial(record_handler, marks=marks, outcomes=outcomes, pipeline=pipeline),
                processor=processor,
                context=context,
            )
        except BatchProcessingError:
            if len(routed.batches) == 1 and len(batch) == len(records):
                raise  # every record failed: the whole batch is retried, as with one site
            failures += [{"itemIdentifier": str(record.get("messageId", ""))} for record in batch]
            continue
        marks.flush()
        failures += [{"itemIdentifier": str(f["itemIdentifier"])} for f in response.get("batchItemFailures", [])]
    for record in records:  # hosts that are no site of the stack
        message_id = str(record.get("messageId", ""))
        if message_id in routed.gone:
            body = str(record.get("body", ""))
            _report(refuse_unknown_host(sites.stack, body, message_id, routed.gone[message_id]), message_id, outcomes)
    logger.info("batch ingested", extra={"events": len(records), **outcomes})
    return {"batchItemFailures": failures}
