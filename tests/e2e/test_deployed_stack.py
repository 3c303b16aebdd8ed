"""Against a deployed stack: an event sent to the ingest queue reaches the published sitemap.

Skipped unless AWS_SAM_STACK_NAME names a deployed stack (credentials and region from the environment).
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


def test_a_published_page_appears_in_its_sitemap_file() -> None:
    import boto3

    outputs = {
        o["OutputKey"]: o["OutputValue"]
        for o in boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]["Outputs"]
    }
    lambda_env = boto3.client("lambda")
    site = None
    for page in lambda_env.get_paginator("list_functions").paginate():
        for function in page["Functions"]:
            variables = function.get("Environment", {}).get("Variables", {})
            if variables.get("MANIFEST_TABLE") == outputs["ManifestTableName"]:
                site = variables["SITE_URL"]
    assert site is not None
    url = f"{site}/e2e/{uuid.uuid4().hex}"
    body = {"type": "publish", "url": url, "occurred_at": datetime.now(UTC).isoformat()}
    boto3.client("sqs").send_message(QueueUrl=outputs["IngestQueueUrl"], MessageBody=json.dumps(body))
    s3 = boto3.client("s3")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        for item in s3.list_objects_v2(Bucket=outputs["SitemapBucketName"], Prefix="sitemap-e2e-").get("Contents", []):
            data = s3.get_object(Bucket=outputs["SitemapBucketName"], Key=item["Key"])["Body"].read()
            if url.encode() in gzip.decompress(data):
                return
        time.sleep(5)
    pytest.fail(f"{url} did not reach a published sitemap within 180 s")


def test_the_commands_read_from_the_stack_what_its_functions_are_given() -> None:
    """`import --stack` and `verify --stack` read outputs and parameters: each value is the one in the functions'
    environment on AWS (the ingest function's, as Lambda reports it)."""
    import boto3

    from sitemap_updater.wiring.deployed import describe_stack

    assert STACK is not None
    read = describe_stack(STACK, boto3.session.Session().client).environment()
    resource = boto3.client("cloudformation").describe_stack_resource(
        StackName=STACK, LogicalResourceId="IngestFunction"
    )
    function = resource["StackResourceDetail"]["PhysicalResourceId"]
    given = boto3.client("lambda").get_function_configuration(FunctionName=function)["Environment"]["Variables"]
    assert read == {name: given.get(name) for name in read}
