"""A deployed stack read back with CloudFormation's DescribeStacks: the settings that ``import``, ``verify --stack``
and ``local --stack`` need, from the stack's outputs (its resources' names) and parameters (the site's
configuration), instead of environment variables copied by hand.

Each value is what the template gives the functions (``Globals``, ``Environment``): tests/unit/test_deployed.py
checks these tables against template.yaml, so a renamed output or parameter fails there, not on a user's stack.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

from sitemap_updater.settings import Settings, SettingsError

# The functions' environment variables that hold a resource's name, and the stack output that holds the same name.
OUTPUTS = {
    "MANIFEST_TABLE": "ManifestTableName",
    "BUCKET_NAME": "SitemapBucketName",
    "REBUILD_QUEUE_URL": "RebuildQueueUrl",
    "INDEX_QUEUE_URL": "IndexQueueUrl",
    "NOTIFY_QUEUE_URL": "NotifyQueueUrl",
    "INGEST_DLQ_URL": "IngestDeadLetterQueueUrl",
    "REBUILD_DLQ_URL": "RebuildDeadLetterQueueUrl",
    "INDEX_DLQ_URL": "IndexDeadLetterQueueUrl",
    "NOTIFY_DLQ_URL": "NotifyDeadLetterQueueUrl",
}
# Those that hold a parameter: what a sitemap file's name and bytes depend on (the site's shape)...
SITE_PARAMETERS = {
    "SITE_URL": "SiteUrl",
    "SECTIONS": "Sections",
    "MAX_URLS_PER_FILE": "MaxUrlsPerFile",
    "MAX_FILES_PER_INDEX": "MaxFilesPerIndex",
    "TEXT_SITEMAPS": "TextSitemaps",
    "FEED_ENTRIES": "RecentChangesFeed",
    "FEED_MAX_AGE_SECONDS": "FeedMaxAgeSeconds",
}
# ... and how the files are served and kept. IndexNow and Search Console are left out: an import is not news.
SERVING_PARAMETERS = {
    "CDN_MAX_AGE_SECONDS": "CdnMaxAgeSeconds",
    "RETIRED_FILE_GRACE_SECONDS": "RetiredFileGraceSeconds",
}
# A stack name (letters, digits and hyphens, from a letter, at most 128) or a stack ID (its ARN).
_STACK_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9-]{0,127}|arn:[a-z-]+:cloudformation:[^\s]+:stack/[^\s]+)$")


class StackError(Exception):
    """A stack cannot be read, or lacks what a command needs; the message is one line for the user."""


def stack_name(value: str) -> str:
    """``value`` when it can name a CloudFormation stack (a name or a stack ID), else ValueError."""
    if not _STACK_NAME.match(value):
        raise ValueError(f"{value!r} is not a stack name (letters, digits and hyphens, starting with a letter)")
    return value


@dataclass(frozen=True, slots=True)
class DeployedStack:
    """One stack as DescribeStacks answers: its status, outputs and parameters, each by key."""

    name: str
    status: str
    outputs: dict[str, str]
    parameters: dict[str, str]

    def output(self, key: str) -> str:
        """An output's value; StackError, naming the stack and its status, when the stack has none."""
        if key not in self.outputs:
            raise StackError(
                f"stack {self.name} ({self.status}) has no output {key}: deploy this version of template.yaml to it"
            )
        return self.outputs[key]

    def parameter(self, key: str) -> str:
        if key not in self.parameters:
            raise StackError(
                f"stack {self.name} ({self.status}) has no parameter {key}: deploy this version of template.yaml to it"
            )
        return self.parameters[key]

    def environment(self) -> dict[str, str]:
        """The environment variables the settings are read from, with the values the stack's functions have."""
        values = {variable: self.output(key) for variable, key in OUTPUTS.items()}
        parameters = {**SITE_PARAMETERS, **SERVING_PARAMETERS}
        values |= {variable: self.parameter(key) for variable, key in parameters.items()}
        # Where the index names its files: as the template derives it from the optional domain of their own.
        domain = self.parameter("SitemapDomain")
        values["SITEMAP_BASE_URL"] = f"https://{domain}" if domain else ""
        return values

    def site_parameters(self) -> dict[str, str]:
        """The parameters that shape the site (SiteUrl, Sections, MaxUrlsPerFile, ...), by parameter name."""
        return {key: self.parameter(key) for key in SITE_PARAMETERS.values()}


def describe_stack(name: str, make_client: Callable[..., Any], endpoint_url: str | None = None) -> DeployedStack:
    """Read a stack with DescribeStacks. Whatever goes wrong (no credentials or region, credentials refused, no
    such stack, no answer) is a StackError with one line saying so."""
    options = {"endpoint_url": endpoint_url} if endpoint_url else {}
    try:
        client = make_client("cloudformation", **options)
        stacks = client.describe_stacks(StackName=name)["Stacks"]
    except NoRegionError:
        raise StackError(
            f"cannot read stack {name}: no AWS region is configured (set AWS_REGION, or a profile's region)"
        ) from None
    except NoCredentialsError:
        raise StackError(
            f"cannot read stack {name}: no AWS credentials found (aws configure, AWS_PROFILE or "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
        ) from None
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "error"), error.get("Message", str(exc))
        if code == "ValidationError" and "does not exist" in message:
            raise StackError(f"stack {name} does not exist{_where(client, endpoint_url)}") from None
        raise StackError(f"cannot read stack {name}: {code}: {message}") from None
    except BotoCoreError as exc:  # no answer: a wrong endpoint, no network
        raise StackError(f"cannot read stack {name}: {exc}") from None
    if not stacks:  # DescribeStacks answers ValidationError instead; an emulator might not
        raise StackError(f"stack {name} does not exist{_where(client, endpoint_url)}")
    stack = stacks[0]
    return DeployedStack(
        name=str(stack.get("StackName", name)),
        status=str(stack.get("StackStatus", "status unknown")),
        outputs={o["OutputKey"]: str(o.get("OutputValue", "")) for o in stack.get("Outputs", [])},
        parameters={p["ParameterKey"]: _parameter_value(p) for p in stack.get("Parameters", [])},
    )


def _parameter_value(parameter: Mapping[str, Any]) -> str:
    """A parameter's value as the functions got it (an SSM parameter's resolved value)."""
    return str(parameter.get("ResolvedValue", parameter.get("ParameterValue", "")))


def _where(client: Any, endpoint_url: str | None) -> str:
    if endpoint_url:
        return f" on {endpoint_url}"
    region = getattr(getattr(client, "meta", None), "region_name", None)
    return f" in region {region}" if region else ""


def command_settings(stack: str | None, make_client: Callable[..., Any], endpoint_url: str | None) -> Settings:
    """The settings of a command run from outside the stack (``import``, ``verify --stack``): the named stack's, read
    with DescribeStacks, or without a name the environment variables the functions read (SITE_URL, ...).
    StackError or SettingsError, each with one line for the user."""
    if stack is None:
        try:
            return Settings.from_env(os.environ)
        except SettingsError as exc:
            raise SettingsError(
                f"{exc} (without --stack NAME, the stack's settings are read from these environment variables: "
                "give --stack NAME to read them from a deployed stack)"
            ) from None
    return Settings.from_env(describe_stack(stack, make_client, endpoint_url).environment())
