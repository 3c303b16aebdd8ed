"""template.yaml: lints clean, transforms offline with the SAM translator, and keeps its promises."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

from tests.cfn_template import stack

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


class _NoManagedPolicies:
    """The translator's policy loader, offline: SAM policy templates need no AWS call."""

    def load(self) -> dict[str, str]:
        return {}


@cache
def transformed() -> dict[str, Any]:
    template = yaml_parse(TEMPLATE.read_text(encoding="utf-8"))
    template["Globals"]["Function"]["CodeUri"] = "s3://artifacts/sitemap-updater.zip"  # what `sam package` does
    parameters = {"SiteUrl": "https://www.example.com"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # the translator asks for a region, nothing more
        return dict(transform(template, parameters, _NoManagedPolicies()))


def test_cfn_lint_is_clean() -> None:
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    run = subprocess.run([str(cfn_lint), str(TEMPLATE)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_sam_transform_gives_functions_with_partial_batch_responses() -> None:
    resources = transformed()["Resources"]
    mappings = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert len(mappings) == 4
    assert all(m["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings)
    functions = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    # ingest, shard, index, notify, the three hourly ones (sweep, news expiry, reconciliation), the webhook, and
    # the bootstrap's worker
    assert len(functions) == 9
    assert all(f["Architectures"] == ["arm64"] and f["Runtime"].startswith("python3.1") for f in functions)


def test_queues_have_dead_letter_queues_and_long_enough_visibility() -> None:
    resources = transformed()["Resources"]
    timeouts = {
        name: r["Properties"]["Timeout"] for name, r in resources.items() if r["Type"] == "AWS::Lambda::Function"
    }
    consumer = {
        "IngestQueue": "IngestFunction",
        "RebuildQueue": "RebuildShardFunction",
        "IndexQueue": "RebuildIndexFunction",
    }
    for queue, function in consumer.items():
        props = resources[queue]["Properties"]
        # five attempts each; a rebuild request may take one more receive waiting for the rest of a burst, an index
        # request that only moves lastmods one waiting until it is due
        assert props["RedrivePolicy"]["maxReceiveCount"] == (5 if queue == "IngestQueue" else 6)
        assert props["VisibilityTimeout"] >= 6 * timeouts[function]
    assert resources["RebuildQueue"]["Properties"]["FifoQueue"] is True


def test_bucket_is_private_and_read_only_through_cloudfront() -> None:
    resources = transformed()["Resources"]
    bucket = resources["SitemapBucket"]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
    statements = resources["SitemapBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    allow = [s for s in statements if s["Effect"] == "Allow"]
    assert [s["Principal"] for s in allow] == [{"Service": "cloudfront.amazonaws.com"}]
    origin = resources["Distribution"]["Properties"]["DistributionConfig"]["Origins"][0]
    assert "OriginAccessControlId" in origin


def test_the_dashboard_shows_only_metrics_the_functions_emit() -> None:
    # Given the dashboard body with every ${...} filled in
    dashboard = transformed()["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    body = json.loads(re.sub(r"\$\{[^}]+\}", "1", dashboard[0]))
    shown = {
        metric[1]
        for widget in body["widgets"]
        for metric in widget["properties"]["metrics"]
        if metric[0] == "SitemapUpdater"
    }
    # Then each of our metrics on it is one a handler publishes (a renamed metric would leave a blank graph)
    handlers = "".join(p.read_text() for p in (ROOT / "functions/sitemap_updater/handlers").glob("*.py"))
    emitted = set(re.findall(r'(?:name=|dashboard_count\(metrics, )"(\w+)"', handlers))
    emitted |= {f"Events{o.title()}" for o in ("accepted", "stale", "noop")}
    emitted |= {f"Webhooks{o}" for o in ("Accepted", "Failed", "Refused")}  # the webhook handler's outcomes
    assert shown and shown <= emitted, shown - emitted
    alarm = transformed()["Resources"]["PublishLatencyAlarm"]["Properties"]
    assert alarm["MetricName"] in emitted and alarm["ExtendedStatistic"] == "p99"


def test_the_webhook_endpoint_is_a_function_url_that_may_only_queue_events_read_its_secret_and_its_urls() -> None:
    resources = transformed()["Resources"]
    url = resources["WebhookFunctionUrl"]
    assert url["Type"] == "AWS::Lambda::Url" and url["Properties"]["AuthType"] == "NONE"  # the signature is the auth
    assert url["Condition"] == resources["WebhookFunction"]["Condition"] == "HasWebhooks"
    role = resources["WebhookFunctionRole"]["Properties"]
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    granted = sorted(json.dumps([s["Action"], s["Resource"]]) for s in statements)
    assert granted == sorted(
        [
            json.dumps([["dynamodb:GetItem", "dynamodb:PutItem"], {"Fn::GetAtt": ["ManifestTable", "Arn"]}]),
            json.dumps(["secretsmanager:GetSecretValue", {"Ref": "WebhookSecretArn"}]),
            json.dumps(["sqs:SendMessage", {"Fn::GetAtt": ["IngestQueue", "Arn"]}]),
        ]
    )
    assert "WebhookUrl" in transformed()["Outputs"]


def test_the_stack_prints_the_robots_txt_line_for_the_site() -> None:
    # robots.txt is the site's own file: the stack never writes it, it says which line to add (the index on the
    # site, or on the sitemaps' own host: tests/unit/test_deploy_template.py)
    line = stack({"SiteUrl": "https://www.example.com"}).outputs["RobotsTxtLine"]
    assert line == "Sitemap: https://www.example.com/sitemap.xml"


def test_cfn_lint_checks_the_bootstrap_state_machine_definition(tmp_path: Path) -> None:
    """The definition is a CloudFormation object (not SAM's generated string), so cfn-lint validates its states."""
    broken = tmp_path / "template.yaml"
    text = TEMPLATE.read_text(encoding="utf-8")
    assert "            Type: Wait\n" in text
    broken.write_text(text.replace("            Type: Wait\n", "            Type: Sleep\n", 1), encoding="utf-8")
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    run = subprocess.run([str(cfn_lint), str(broken)], capture_output=True, text=True, check=False)
    assert run.returncode != 0
    assert "E3601" in run.stdout and "'Sleep' is not one of" in run.stdout


def test_the_bootstrap_waits_out_every_rebuild_that_started_before_it() -> None:
    """Rebuild requests received after Begin are parked; one received just before it may still run, at most for
    the rebuild function's timeout: the ranges are rendered only after that."""
    resources = transformed()["Resources"]
    timeout = int(resources["RebuildShardFunction"]["Properties"]["Timeout"])
    definition = yaml_parse(TEMPLATE.read_text(encoding="utf-8"))["Resources"]["BootstrapStateMachine"]
    states = definition["Properties"]["Definition"]["States"]
    assert states["WaitForRunningRebuilds"]["Seconds"] > timeout
    assert states["Plan"]["Next"] == "WaitForRunningRebuilds"
    assert states["WaitForRunningRebuilds"]["Next"] == "RenderRanges"
