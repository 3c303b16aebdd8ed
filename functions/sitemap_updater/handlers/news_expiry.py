"""Lambda (hourly): re-queue the files whose news turned two days old, so the news leaves the sitemap."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.runtime import current_pipeline
from sitemap_updater.service.sweep import expire_news

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    expired = expire_news(current_pipeline())
    logger.info("news expiry done", extra={"news_expired": expired})
    return {"news_expired": expired}
