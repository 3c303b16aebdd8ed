"""Lambda (hourly): reconciliation. Finds published files that are missing, changed out of band or named by
nothing, in a bounded slice of the site each run, and repairs them through the normal rebuild paths."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.reconcile import reconcile_sites
from sitemap_updater.service.site_marks import Deadline, Due, SitesFailed
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import other_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sites = current_sites()
    deadline = Deadline.within(context.get_remaining_time_in_millis() / 1000)
    # The stack's own site every hour; the sites added at run time in turn, each hour its share of a day.
    done = reconcile_sites([Due("", sites.stack)], other_sites(sites, set()), sites.stack.directory, deadline)
    if any(done.found.values()):
        logger.warning("published files repaired", extra=done.found)  # drift is worth an operator's look
    counts = {"checked": done.checked, "sites": done.visited + done.daily_visited, "sites_left": done.left}
    logger.info("reconciliation done", extra=counts)
    if done.failed:
        raise SitesFailed("reconcile", done.failed)
    return {**counts, **{kind: len(names) for kind, names in done.found.items()}}
