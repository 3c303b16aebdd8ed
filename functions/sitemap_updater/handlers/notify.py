"""Lambda: tell search engines about changed pages (IndexNow) and a changed index (Search Console)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.core.messages import NOTIFY_GROUP, WAKE_UP, is_wake_up
from sitemap_updater.handlers.counts import dashboard_count
from sitemap_updater.handlers.dead_letters import report_dead_letters, report_gone
from sitemap_updater.service.batches import notify_batch
from sitemap_updater.service.notify import nothing_held, search_console_hint
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.site_marks import HELD, Deadline, Due, clear_if_quiet, visit
from sitemap_updater.wiring.pipeline import current_notifiers, current_sites
from sitemap_updater.wiring.sites import due_sites, message_site, route

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    routed = route(current_sites(), event.get("Records", []), message_site)
    failures: list[str] = []
    for pipeline, records in routed.batches:  # the scheduled wake-up names no site: the stack's own site's
        failures += _notify(records, pipeline)
    if any(_is_wake_up(r) and not message_site(r) for r in event.get("Records", [])):  # the schedule's minute
        _wake_sites(context.get_remaining_time_in_millis() / 1000)
    report_gone(logger, routed.gone)
    return {"batchItemFailures": [{"itemIdentifier": m} for m in failures]}


def _wake_sites(seconds: float) -> None:
    """Wake each site added at run time that is marked as holding changes back (service/site_marks.py): a wake-up
    in the site's own FIFO group, so that its held changes are sent in turn with its change records, never beside
    them (two runs at once would both send a change); a failure is retried by the next minute's. A site found
    holding nothing is no longer visited once its mark is old enough."""
    sites = current_sites()
    directory = sites.stack.directory
    minute = int(sites.stack.clock().timestamp()) // 60

    def work(due: Due) -> None:
        if not nothing_held(due.pipeline):
            if due.pipeline.settings.indexnow_key:
                due.pipeline.notify_queue.send(dict(WAKE_UP), NOTIFY_GROUP, f"wake-up|{minute}")
        elif due.marked_us is not None and directory is not None:
            clear_if_quiet(due.pipeline, directory, HELD, due.host, due.marked_us, nothing_held)

    dues = [due for due in due_sites(sites, HELD) if due.host]
    done = visit("wake-up", dues, directory, work, Deadline.within(seconds))
    for host, error in done.failed:  # the next minute's wake-up tries again
        logger.error("wake-up of a site failed; the next minute's tries again", extra={"site": host, "error": error})


def _notify(records: list[dict[str, Any]], pipeline: Pipeline) -> list[str]:
    done, settled = notify_batch(records, pipeline, current_notifiers())
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
    return list(settled.failures)


def _is_wake_up(record: dict[str, Any]) -> bool:
    try:
        body = json.loads(str(record.get("body", "")))
    except ValueError:
        return False
    return isinstance(body, dict) and is_wake_up(body)
