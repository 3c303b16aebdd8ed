"""Against a deployed stack: the bootstrap state machine loads an export and its pages reach the published files.

Skipped unless AWS_SAM_STACK_NAME names a deployed stack (credentials and region from the environment). It adds
pages under /e2e-bootstrap/ to the deployed site (a bootstrap adds and updates; it never deletes).
"""

from __future__ import annotations

import gzip
import json
import os
import time
import uuid
from datetime import UTC, datetime

import pytest

STACK = os.environ.get("AWS_SAM_STACK_NAME")
pytestmark = pytest.mark.skipif(not STACK, reason="AWS_SAM_STACK_NAME is not set: no deployed stack to test")


def test_a_bootstrap_execution_publishes_its_export() -> None:
    import boto3

    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]["Outputs"]
    }
    site = outputs["RobotsTxtLine"].removeprefix("Sitemap: ").removesuffix("/sitemap.xml")
    run = f"e2e-{uuid.uuid4().hex[:12]}"
    now = datetime.now(UTC).isoformat()
    urls = [f"{site}/e2e-bootstrap/{run}/{i}" for i in range(30)]
    lines = [json.dumps({"type": "upsert", "url": url, "occurred_at": now}) for url in urls]
    bucket = outputs["SitemapBucketName"]
    s3 = boto3.client("s3")
    for number, start in enumerate(range(0, len(lines), 10)):
        body = gzip.compress("\n".join(lines[start : start + 10]).encode())
        s3.put_object(Bucket=bucket, Key=f"_bootstrap/{run}/export/part-{number:05d}.jsonl.gz", Body=body)
    states = boto3.client("stepfunctions")
    execution = states.start_execution(
        stateMachineArn=outputs["BootstrapStateMachineArn"], input=json.dumps({"run": run})
    )["executionArn"]
    # The state machine waits out running rebuilds for 150 s, and its own workers for 960 s before its release
    deadline = time.monotonic() + 1800
    status = "RUNNING"
    while status == "RUNNING" and time.monotonic() < deadline:
        time.sleep(10)
        status = states.describe_execution(executionArn=execution)["status"]
    assert status == "SUCCEEDED"
    found: set[str] = set()
    deadline = time.monotonic() + 180  # the index function runs after the bootstrap's end
    while time.monotonic() < deadline and not set(urls) <= found:
        for item in s3.list_objects_v2(Bucket=bucket, Prefix="sitemap-e2e-bootstrap-").get("Contents", []):
            text = gzip.decompress(s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()).decode()
            found |= {url for url in urls if f"<loc>{url}</loc>" in text}
        time.sleep(5)
    assert set(urls) <= found
