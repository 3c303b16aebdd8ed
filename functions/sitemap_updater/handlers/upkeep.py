"""Lambda (hourly): file upkeep, independent of the sweep: re-queue files whose news turned two days old, and
ask sections to delete files the index stopped naming once their grace is over."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.sweep import upkeep
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import all_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    news_expired = cleanups = 0
    for pipeline in all_sites(current_sites()):  # the stack's own site, then each site added at run time
        done = upkeep(pipeline)
        news_expired, cleanups = news_expired + done.news_expired, cleanups + done.cleanups
    logger.info("upkeep done", extra={"news_expired": news_expired, "cleanups": cleanups})
    return {"news_expired": news_expired, "cleanups": cleanups}
