"""Lambda (hourly): file upkeep, independent of the sweep: re-queue files whose news turned two days old, and
ask sections to delete files the index stopped naming once their grace is over."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.site_marks import ACTIVE, Deadline, SitesFailed
from sitemap_updater.service.sweep import upkeep_sites
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import due_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sites = current_sites()
    deadline = Deadline.within(context.get_remaining_time_in_millis() / 1000)
    # The stack's own site, then each site added at run time that is marked active (service/site_marks.py).
    done = upkeep_sites(due_sites(sites, ACTIVE), sites.stack.directory, deadline)
    counts = {"news_expired": done.news_expired, "cleanups": done.cleanups, "sites": done.visited,
              "sites_left": done.left}  # fmt: skip
    logger.info("upkeep done", extra=counts)
    if done.failed:
        raise SitesFailed("upkeep", done.failed)
    return counts
