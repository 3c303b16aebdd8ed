"""What the SQS handlers log and count about messages they sent to their dead-letter queue themselves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from sitemap_updater.service.dead_letters import DeadLetter


def report_dead_letters(
    logger: Logger, metrics: Metrics, dead_lettered: Iterable[DeadLetter], unsent: Mapping[str, str]
) -> None:
    """Log each dead-lettered message with its reason (counted as ``MessagesDeadLettered``), and each whose
    dead-letter send failed (SQS's redrive moves it, without a reason)."""
    for dead in dead_lettered:
        logger.error("message failed on every receive", extra={"reason": dead.reason, "message_id": dead.message_id})
        metrics.add_metric(name="MessagesDeadLettered", unit=MetricUnit.Count, value=1)
    for message_id, error in unsent.items():
        logger.error("dead-letter send failed; SQS will move it", extra={"message_id": message_id, "error": error})


def report_gone(logger: Logger, gone: Mapping[str, str]) -> None:
    """Log each message of a site that is no longer a site of the stack (removed): nothing is done for it."""
    for message_id, host in gone.items():
        logger.warning("message of a site that was removed: dropped", extra={"site": host, "message_id": message_id})
