"""Lambda (hourly): re-queue changes whose rebuild was never queued."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.service.sweep import sweep
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import all_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    requeued = 0
    for pipeline in all_sites(current_sites()):  # the stack's own site, then each site added at run time
        done = sweep(pipeline, HttpClient())  # for robots.txt only: no Search Console credentials
        requeued += done.requeued
        if done.robots_warning:
            logger.warning(done.robots_warning)
    logger.info("sweep done", extra={"requeued": requeued})
    return {"requeued": requeued}
