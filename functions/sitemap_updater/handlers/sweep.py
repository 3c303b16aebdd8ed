"""Lambda (hourly): re-queue changes whose rebuild was never queued."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.service.site_marks import ACTIVE, Deadline, SitesFailed
from sitemap_updater.service.sweep import sweep_sites
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import due_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sites = current_sites()
    deadline = Deadline.within(context.get_remaining_time_in_millis() / 1000)
    # The stack's own site, then each site added at run time that is marked active (service/site_marks.py);
    # the HTTP client reads robots.txt only (no Search Console credentials).
    done = sweep_sites(due_sites(sites, ACTIVE), sites.stack.directory, HttpClient(), deadline)
    for warning in done.robots_warnings:
        logger.warning(warning)
    counts = {"requeued": done.requeued, "sites": done.visited, "sites_left": done.left, "unmarked": done.unmarked}
    logger.info("sweep done", extra=counts)
    if done.failed:
        raise SitesFailed("sweep", done.failed)
    return counts
