"""Lambda: one step of the bootstrap state machine (``BootstrapStateMachine`` in template.yaml), named by the
event's ``step``: begin, chunk (one export object), or segments and resection (one Scan segment's next pages, for a
re-section: ``service/resection.py``), plan, render (one key range), finish, release (after the
wait that follows Finish or a caught failure), and check (every five minutes, on a schedule: releases the hold
of an execution that stopped without a release, and reports the metrics the import alarms watch)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.service import bootstrap, bootstrap_release, resection
from sitemap_updater.wiring.pipeline import current_executions, current_pipeline

logger = Logger()
metrics = Metrics()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    step, run = str(event.get("step", "")), str(event.get("run", ""))
    execution = str(event.get("execution", ""))
    bootstrap.check_payload(event)  # a payload of another format version (an execution older than the code)
    pipeline = current_pipeline()
    answer: dict[str, Any]
    if step == "begin":
        bootstrap.begin(pipeline, run, execution)
        answer = {"run": run}
    elif step == "chunk":
        loaded = bootstrap.load_chunk(pipeline, run, str(event.get("key", "")))
        metrics.add_metric(name="BootstrapLines", unit=MetricUnit.Count, value=loaded.lines)
        metrics.add_metric(name="BootstrapRejected", unit=MetricUnit.Count, value=loaded.rejected)
        metrics.add_metric(name="BootstrapRecorded", unit=MetricUnit.Count, value=loaded.outcomes["recorded"])
        answer = loaded.as_dict()
    elif step == "segments":
        answer = resection.segments(pipeline, run)
    elif step == "resection":
        cursor = event.get("cursor")
        answer = resection.resection_segment(
            pipeline, run, execution, int(event.get("segment", -1)), int(event.get("total", 0)),
            {"pk": str(cursor["pk"]), "sk": str(cursor["sk"])} if isinstance(cursor, dict) else None,
        )  # fmt: skip
        metrics.add_metric(name="ResectionMoved", unit=MetricUnit.Count, value=answer["moved"])
    elif step == "plan":
        answer = bootstrap.plan(pipeline, run)
    elif step == "render":
        within = bootstrap.range_of(str(event.get("start", "")), int(event.get("depth", -1)))
        rendered = bootstrap.render_range(pipeline, str(event.get("section", "")), within, execution)
        metrics.add_metric(name="FilesWritten", unit=MetricUnit.Count, value=len(rendered.put))
        answer = rendered.as_dict()
    elif step == "finish":
        answer = bootstrap.finish(pipeline, run, execution)
    elif step == "release":  # the hold ends, nothing stays parked
        answer = bootstrap_release.release(pipeline, run, execution)
    elif step == "check":
        checked = bootstrap_release.check(pipeline, current_executions())
        # Reported only while there is something to report: a custom metric costs $0.30 a month in every hour it
        # is published, and an idle stack would pay for two zeros every 5 minutes. A check that fails is an error
        # of this function (FunctionErrorsAlarm).
        if checked.held_s:
            metrics.add_metric(name="ImportHeldSeconds", unit=MetricUnit.Seconds, value=checked.held_s)
        if checked.oldest_parked_s:
            metrics.add_metric(name="OldestParkedSeconds", unit=MetricUnit.Seconds, value=checked.oldest_parked_s)
        answer = checked.as_dict()
    else:
        raise bootstrap.BootstrapError(
            f"step: {step!r} is not one of begin, chunk, segments, resection, plan, render, finish, release, check"
        )
    logger.info("bootstrap step done", extra={"step": step, "run": run, **answer})
    return answer
