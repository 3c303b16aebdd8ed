"""Create a stack's queues, table, bucket and distribution on an AWS-compatible endpoint from template.yaml.

The template is the one source of truth: queue attributes, redrive policies, key schemas and the functions'
environment variables are read from it, so what runs locally is what deploys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.exceptions import ClientError

from sitemap_updater.local.iam import Names, Policy, function_policies, resolve
from sitemap_updater.wiring.deployed import StackError, describe_stack

REGION = "us-east-1"
_QUEUE_ATTRIBUTES = (
    "VisibilityTimeout",
    "DelaySeconds",
    "MessageRetentionPeriod",
    "FifoQueue",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "ContentBasedDeduplication",
)


class _CfnLoader(yaml.SafeLoader):
    """YAML loader that keeps CloudFormation short-form tags (!Ref, !GetAtt, !Sub) as their long forms."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


def load_template(path: Path) -> dict[str, Any]:
    """Parse a SAM/CloudFormation template, short-form tags included."""
    return dict(yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader))  # noqa: S506 - safe loader subclass


@dataclass(frozen=True, slots=True)
class EventSource:
    """An SQS event source of a function: which queue feeds which handler, in batches of what size."""

    function: str
    handler: str
    queue_url: str
    batch_size: int


@dataclass(slots=True)
class LocalStack:
    """Physical names of what was created, the functions' environment and IAM policies, and their SQS event
    sources. ``endpoint_url`` is None for moto in this process."""

    endpoint_url: str | None
    name: str = ""
    physical: dict[str, str] = field(default_factory=dict)
    arns: dict[str, str] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)  # a distribution's domain name
    environment: dict[str, str] = field(default_factory=dict)
    sources: list[EventSource] = field(default_factory=list)
    policies: dict[str, Policy] = field(default_factory=dict)

    def queue_url(self, logical_id: str) -> str:
        return self.physical[logical_id]


def session() -> boto3.session.Session:
    # Fixed credentials for the local endpoint only; nothing here reaches AWS.
    return boto3.session.Session(
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106
        region_name=REGION,
    )


def create_stack(template_path: Path, endpoint_url: str | None, parameters: dict[str, str], name: str) -> LocalStack:
    """Create every queue, table, bucket and distribution of the template; resolve the functions' environment
    and IAM policies."""
    template = load_template(template_path)
    resources: dict[str, Any] = template["Resources"]
    params = {key: str(spec.get("Default", "")) for key, spec in template.get("Parameters", {}).items()}
    params.update(parameters)
    params["AWS::StackName"] = name
    aws = session()
    stack = LocalStack(endpoint_url, name=name)
    sqs = aws.client("sqs", endpoint_url=endpoint_url)
    queues = {k: v for k, v in resources.items() if v["Type"] == "AWS::SQS::Queue"}
    for logical, spec in sorted(queues.items(), key=lambda kv: "RedrivePolicy" in kv[1].get("Properties", {})):
        props = spec.get("Properties", {})
        fifo = bool(props.get("FifoQueue", False))
        values = {k: params[v["Ref"]] if isinstance(v, dict) and "Ref" in v else v for k, v in props.items()}
        attributes: dict[Any, str] = {
            k: str(values[k]).lower() if isinstance(values[k], bool) else str(values[k])
            for k in _QUEUE_ATTRIBUTES
            if k in values
        }
        if "RedrivePolicy" in props:
            policy = props["RedrivePolicy"]
            target = policy["deadLetterTargetArn"]["Fn::GetAtt"][0]
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": stack.arns[target], "maxReceiveCount": int(policy["maxReceiveCount"])}
            )
        queue_name = f"{name}-{logical}" + (".fifo" if fifo else "")
        url = sqs.create_queue(QueueName=queue_name, Attributes=attributes)["QueueUrl"]
        stack.physical[logical] = url
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        stack.arns[logical] = arn
    dynamodb = aws.client("dynamodb", endpoint_url=endpoint_url)
    s3 = aws.client("s3", endpoint_url=endpoint_url)
    cloudfront = aws.client("cloudfront", endpoint_url=endpoint_url)
    for logical, spec in resources.items():
        props = spec.get("Properties", {})
        if spec["Type"] == "AWS::DynamoDB::Table":
            table = f"{name}-{logical}"
            created_table = dynamodb.create_table(
                TableName=table,
                KeySchema=props["KeySchema"],
                AttributeDefinitions=props["AttributeDefinitions"],
                BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
                **(
                    {"GlobalSecondaryIndexes": props["GlobalSecondaryIndexes"]}
                    if "GlobalSecondaryIndexes" in props
                    else {}
                ),
            )
            stack.physical[logical] = table
            stack.arns[logical] = created_table["TableDescription"]["TableArn"]
        elif spec["Type"] == "AWS::S3::Bucket":
            bucket = f"{name}-{logical}".lower()
            s3.create_bucket(Bucket=bucket)
            if props.get("VersioningConfiguration", {}).get("Status") == "Enabled":
                s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
            stack.physical[logical] = bucket
            stack.arns[logical] = f"arn:aws:s3:::{bucket}"
    for logical, spec in resources.items():
        if spec["Type"] == "AWS::CloudFront::Distribution":
            origin = next(v for k, v in stack.physical.items() if resources[k]["Type"] == "AWS::S3::Bucket")
            created = cloudfront.create_distribution(DistributionConfig=_distribution_config(name, origin))
            stack.physical[logical] = created["Distribution"]["Id"]
            stack.arns[logical] = created["Distribution"]["ARN"]
            stack.domains[logical] = created["Distribution"]["DomainName"]
    return _wired(template, stack, params)


def _wired(template: dict[str, Any], stack: LocalStack, params: dict[str, str]) -> LocalStack:
    """``stack`` with the functions' environment, IAM policies and event sources, resolved against its names."""
    resources: dict[str, Any] = template["Resources"]
    variables = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    names = Names(params, stack.physical, stack.arns, template.get("Conditions", {}), stack.domains)
    stack.environment = {key: str(resolve(value, names)) for key, value in variables.items()}
    stack.policies = function_policies(template, names)
    for logical, spec in resources.items():
        if spec["Type"] != "AWS::Serverless::Function":
            continue
        for source in spec["Properties"].get("Events", {}).values():
            if source["Type"] == "SQS" and resolve(source["Properties"].get("Enabled", True), names) is True:
                queue = source["Properties"]["Queue"]["Fn::GetAtt"][0]
                size = int(source["Properties"].get("BatchSize", 10))
                stack.sources.append(EventSource(logical, spec["Properties"]["Handler"], stack.physical[queue], size))
    return stack


def attach_stack(template_path: Path, endpoint_url: str | None, parameters: dict[str, str], name: str) -> LocalStack:
    """The stack ``name`` that CloudFormation created on ``endpoint_url`` (LocalStack, a moto server): its
    queues, table, bucket and distribution named by its outputs (DescribeStacks), its parameters as deployed
    unless ``parameters`` says otherwise; the environment, policies and event sources as :func:`create_stack`
    resolves them. StackError when the stack cannot be read or an output is missing or names nothing there."""
    template = load_template(template_path)
    aws = session()
    deployed = describe_stack(name, aws.client, endpoint_url)
    params = {key: str(spec.get("Default", "")) for key, spec in template.get("Parameters", {}).items()}
    params |= deployed.parameters | parameters
    params["AWS::StackName"] = deployed.name  # as CloudFormation resolves it in the policies (the bootstrap's ARNs)
    named = {
        value["Ref"]: key
        for key, output in template.get("Outputs", {}).items()
        if isinstance(value := output.get("Value"), dict) and set(value) == {"Ref"}
    }
    stack = LocalStack(endpoint_url, name=deployed.name)
    for logical, spec in template["Resources"].items():
        if spec["Type"] not in _CREATED:
            continue
        if logical not in named:
            raise StackError(f"template.yaml has no output that names {logical}, so stack {name} cannot be used")
        physical = deployed.output(named[logical])
        try:
            stack.arns[logical] = _arn(aws, endpoint_url, spec["Type"], physical)
        except ClientError as exc:
            raise StackError(
                f"stack {name}'s output {named[logical]} names {physical}, which cannot be read: {exc}"
            ) from None
        stack.physical[logical] = physical
    return _wired(template, stack, params)


_CREATED = ("AWS::SQS::Queue", "AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::CloudFront::Distribution")


def _arn(aws: boto3.session.Session, endpoint_url: str | None, kind: str, physical: str) -> str:
    """The ARN of a resource of the kind, by its physical name (a queue's URL, a table's or bucket's name, a
    distribution's ID), read from the endpoint: which also shows that it exists."""
    if kind == "AWS::SQS::Queue":
        sqs = aws.client("sqs", endpoint_url=endpoint_url)
        return str(sqs.get_queue_attributes(QueueUrl=physical, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
    if kind == "AWS::DynamoDB::Table":
        return str(
            aws.client("dynamodb", endpoint_url=endpoint_url).describe_table(TableName=physical)["Table"]["TableArn"]
        )
    if kind == "AWS::S3::Bucket":
        aws.client("s3", endpoint_url=endpoint_url).head_bucket(Bucket=physical)
        return f"arn:aws:s3:::{physical}"
    return str(aws.client("cloudfront", endpoint_url=endpoint_url).get_distribution(Id=physical)["Distribution"]["ARN"])


def _distribution_config(name: str, bucket: str) -> Any:
    return {
        "CallerReference": name,
        "Comment": "local",
        "Enabled": True,
        "Origins": {
            "Quantity": 1,
            "Items": [
                {
                    "Id": "sitemaps",
                    "DomainName": f"{bucket}.s3.amazonaws.com",
                    "S3OriginConfig": {"OriginAccessIdentity": ""},
                }
            ],
        },
        "DefaultCacheBehavior": {
            "TargetOriginId": "sitemaps",
            "ViewerProtocolPolicy": "redirect-to-https",
            "MinTTL": 0,
        },
    }
