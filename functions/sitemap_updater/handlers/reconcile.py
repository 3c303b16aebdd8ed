"""Lambda (hourly): reconciliation. Finds published files that are missing, changed out of band or named by
nothing, in a bounded slice of the site each run, and repairs them through the normal rebuild paths."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service.reconcile import reconcile
from sitemap_updater.wiring.pipeline import current_sites
from sitemap_updater.wiring.sites import all_sites

logger = Logger()


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    checked = 0
    found: dict[str, list[str]] = {"missing": [], "changed": [], "stray": []}
    for pipeline in all_sites(current_sites()):  # the stack's own site, then each site added at run time
        done = reconcile(pipeline)
        checked += len(done.checked)
        for kind, names in (("missing", done.missing), ("changed", done.changed), ("stray", done.stray)):
            found[kind] += list(names)
    if any(found.values()):
        logger.warning("published files repaired", extra=found)  # drift is worth an operator's look
    logger.info("reconciliation done", extra={"checked": checked})
    return {"checked": checked, **{kind: len(names) for kind, names in found.items()}}
