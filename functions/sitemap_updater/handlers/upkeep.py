"""Lambda (hourly): file upkeep, independent of the sweep: re-queue files whose news turned two days old, and
ask sections to delete files the index stopped naming once their grace is over."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.sweep import upkeep
from sitemap_updater.wiring.pipeline import current_pipeline

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    done = upkeep(current_pipeline())
    logger.info("upkeep done", extra={"news_expired": done.news_expired, "cleanups": done.cleanups})
    return {"news_expired": done.news_expired, "cleanups": done.cleanups}
