"""Lambda (hourly): reconciliation. Finds published files that are missing, changed out of band or named by
nothing, in a bounded slice of the site each run, and repairs them through the normal rebuild paths."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.reconcile import reconcile_sites
from sitemap_updater.service.site_marks import ACTIVE
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import due_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    sites = current_sites()
    # The stack's own site, each site added at run time marked active, and the others once a day each.
    dues = due_sites(sites, ACTIVE, daily=True)
    done = reconcile_sites(dues, sites.stack.directory, context.get_remaining_time_in_millis() / 1000)
    if any(done.found.values()):
        logger.warning("published files repaired", extra=done.found)  # drift is worth an operator's look
    logger.info("reconciliation done", extra={"checked": done.checked, "sites": done.visited, "sites_left": done.left})
    return {"checked": done.checked, "sites": done.visited, "sites_left": done.left,
            **{kind: len(names) for kind, names in done.found.items()}}  # fmt: skip
