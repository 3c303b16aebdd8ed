"""The bootstrap state machine's endings in template.yaml: every one releases the hold on the import, none before
the worker's timeout has passed since the execution last started one, and the alarms bound how long it may hold;
and every payload it sends its worker carries the payload's format version."""

from __future__ import annotations

import json
import re
from typing import Any

from samtranslator.yaml_helper import yaml_parse

from sitemap_updater.core.formats import BOOTSTRAP
from sitemap_updater.service import bootstrap_release
from tests.integration.test_template import TEMPLATE, transformed


def _definition() -> dict[str, Any]:
    machine = yaml_parse(TEMPLATE.read_text(encoding="utf-8"))["Resources"]["BootstrapStateMachine"]
    return dict(machine["Properties"]["Definition"])


def test_every_caught_failure_and_the_success_wait_out_the_worker_s_timeout_before_releasing() -> None:
    states = _definition()["States"]
    worker = transformed()["Resources"]["BootstrapFunction"]["Properties"]
    assert int(worker["Timeout"]) == bootstrap_release.WORKER_TIMEOUT_S
    for wait, release in (("WaitForLastWorkers", "Release"), ("WaitAfterFailure", "ReleaseAfterFailure")):
        assert states[wait]["Seconds"] == bootstrap_release.RELEASE_AFTER_S > int(worker["Timeout"])
        assert states[wait]["Next"] == release
        assert states[release]["Parameters"]["Payload"] == {
            "v": 1, "step": "release", "run.$": "$.run", "execution.$": "$$.Execution.Id"
        }  # fmt: skip
    assert states["Finish"]["Next"] == "WaitForLastWorkers" and states["Release"]["End"] is True
    assert states["ReleaseAfterFailure"]["Next"] == "Failed" and states["Failed"]["Type"] == "Fail"
    catchers = [c for s in states.values() for c in s.get("Catch", [])]
    assert catchers and all(c["Next"] == "WaitAfterFailure" for c in catchers)
    # Every state that starts workers has a Catch; those that cannot fail the bootstrap's writes need none
    caught = {"LoadChunks", "ScanSegments", "Resection", "Plan", "RenderRanges", "Finish"}
    assert {n for n, s in states.items() if "Catch" in s} == caught
    assert states["Begin"]["Parameters"]["Payload"]["execution.$"] == "$$.Execution.Id"
    assert states["RenderRanges"]["ItemSelector"]["execution.$"] == "$$.Execution.Id"
    assert states["Resection"]["ItemSelector"]["execution.$"] == "$$.Execution.Id"  # moves only while holding


def test_the_endings_no_catch_sees_are_checked_often_and_the_alarms_bound_the_longest_hold() -> None:
    definition = _definition()
    assert definition["TimeoutSeconds"] == bootstrap_release.EXECUTION_TIMEOUT_S
    resources = transformed()["Resources"]
    schedules = [r for r in resources.values() if r["Type"] == "AWS::Events::Rule" and "ScheduleExpression" in
                 r["Properties"] and '"check"' in str(r["Properties"]["Targets"][0].get("Input", ""))]  # fmt: skip
    assert len(schedules) == 1
    assert schedules[0]["Properties"]["ScheduleExpression"] == f"rate({bootstrap_release.CHECK_EVERY_S // 60} minutes)"
    longest = definition["TimeoutSeconds"] + bootstrap_release.RELEASE_AFTER_S + 2 * bootstrap_release.CHECK_EVERY_S
    handler = (TEMPLATE.parent / "functions/sitemap_updater/handlers/bootstrap.py").read_text()
    emitted = set(re.findall(r'name="(\w+)"', handler))
    for name, metric in (("ImportHeldTooLongAlarm", "ImportHeldSeconds"), ("ParkedRebuildTooOldAlarm",
                                                                          "OldestParkedSeconds")):  # fmt: skip
        alarm = resources[name]["Properties"]
        assert alarm["MetricName"] == metric and metric in emitted
        assert alarm["Statistic"] == "Maximum" and alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert longest <= alarm["Threshold"] == bootstrap_release.HELD_ALARM_S <= longest + 3600
        assert alarm["Period"] >= 2 * bootstrap_release.CHECK_EVERY_S  # a late check leaves no period empty
    # Reported only above 0 (an idle stack publishes no metric): no data is nothing held or parked, and a check
    # that fails is an error of the worker, which FunctionErrorsAlarm watches
    watched = ("ImportHeldTooLongAlarm", "ParkedRebuildTooOldAlarm")
    assert {resources[n]["Properties"]["TreatMissingData"] for n in watched} == {"notBreaching"}
    errors = resources["FunctionErrorsAlarm"]["Properties"]["Metrics"]
    assert any("BootstrapFunction" in json.dumps(m) for m in errors)


def test_the_worker_may_describe_only_this_stack_s_bootstrap_executions() -> None:
    policies = transformed()["Resources"]["BootstrapFunctionRole"]["Properties"]["Policies"]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    describe = [s for s in statements if "states:DescribeExecution" in str(s["Action"])]
    assert len(describe) == 1 and describe[0]["Action"] == "states:DescribeExecution"
    arn = "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${AWS::StackName}-bootstrap:*"
    assert describe[0]["Resource"] == {"Fn::Sub": arn}


def _payloads(states: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every payload the definition builds for the worker, by where it is built: a Task's ``Payload``, a map's
    ``ItemSelector`` (its items' input) and the ResultSelector of a task whose output is its next call's payload."""
    found: dict[str, dict[str, Any]] = {}
    for name, state in states.items():
        payload = state.get("Parameters", {}).get("Payload")
        if isinstance(payload, dict):
            found[name] = payload
        if "ItemSelector" in state:
            found[f"{name} items"] = state["ItemSelector"]
        if state.get("Parameters", {}).get("Payload.$") == "$" and "step" in state.get("ResultSelector", {}):
            found[f"{name} again"] = state["ResultSelector"]
        found.update(_payloads(state.get("ItemProcessor", {}).get("States", {})))
    return found


def test_every_payload_the_worker_is_sent_carries_the_format_version() -> None:
    payloads = _payloads(_definition()["States"])
    steps = {str(p["step"]) for p in payloads.values()}
    assert steps == {"begin", "segments", "resection", "chunk", "plan", "render", "finish", "release"}
    assert {name: p.get("v") for name, p in payloads.items()} == dict.fromkeys(payloads, BOOTSTRAP)
    worker = yaml_parse(TEMPLATE.read_text(encoding="utf-8"))["Resources"]["BootstrapFunction"]["Properties"]
    check = worker["Events"]["CheckTheImportHold"]["Properties"]["Input"]
    assert json.loads(check) == {"v": BOOTSTRAP, "step": "check"}
