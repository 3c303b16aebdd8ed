"""A stack read back with DescribeStacks (`import --stack`, `verify --stack`, `local --stack`): every value is the one
the template gives the functions, and whatever goes wrong is one line naming the stack."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from pytest_httpserver import HTTPServer

from sitemap_updater.local.stack import load_template
from sitemap_updater.settings import _ENV, Settings
from sitemap_updater.wiring.deployed import (
    OUTPUTS,
    SERVING_PARAMETERS,
    SITE_PARAMETERS,
    StackError,
    describe_stack,
    stack_name,
)

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
SITE = "https://www.example.com"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def _globals(template: dict[str, Any]) -> dict[str, Any]:
    return dict(template["Globals"]["Function"]["Environment"]["Variables"])


def test_each_output_read_names_the_resource_the_functions_environment_names(template: dict[str, Any]) -> None:
    variables, outputs = _globals(template), template["Outputs"]
    for variable, output in OUTPUTS.items():
        assert output in outputs, f"template.yaml has no output {output} (for {variable})"
        assert outputs[output]["Value"] == variables[variable], f"{output} and {variable} name other resources"
        assert "Condition" not in outputs[output], f"{output} must exist on every stack"


def test_each_parameter_read_is_the_one_the_functions_environment_takes(template: dict[str, Any]) -> None:
    variables = _globals(template)
    for variable, parameter in {**SITE_PARAMETERS, **SERVING_PARAMETERS}.items():
        assert parameter in template["Parameters"]
        assert variables[variable] == {"Ref": parameter}, f"{variable} is not the parameter {parameter}"


def test_every_setting_without_a_default_is_read_from_the_stack() -> None:
    required = {_ENV[name] for name, field in Settings.model_fields.items() if field.is_required()}
    assert required <= set(OUTPUTS) | set(SITE_PARAMETERS), required - set(OUTPUTS) - set(SITE_PARAMETERS)


@pytest.fixture
def cloudformation() -> Iterator[Any]:
    with mock_aws():
        yield boto3.session.Session(aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1")


def _create(session: Any, name: str, outputs: dict[str, str], parameters: dict[str, str]) -> None:
    body = {
        "Parameters": {key: {"Type": "String"} for key in parameters},
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    session.client("cloudformation").create_stack(
        StackName=name,
        TemplateBody=json.dumps(body),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
    )


def _full(leave_out: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """Every output read (but ``leave_out``), and every parameter read: the template's defaults and a site."""
    outputs = {key: f"value-of-{key}" for key in OUTPUTS.values() if key != leave_out}
    defaults = load_template(TEMPLATE)["Parameters"]
    parameters = {
        key: str(defaults[key].get("Default", ""))
        for key in [*SITE_PARAMETERS.values(), *SERVING_PARAMETERS.values(), "SitemapDomain"]
    }
    return outputs, parameters | {"SiteUrl": SITE, "Sections": "blog,news", "MaxUrlsPerFile": "500"}


def test_the_settings_are_the_stacks_outputs_and_parameters(cloudformation: Any) -> None:
    outputs, parameters = _full()
    _create(cloudformation, "site-prod", outputs, parameters)
    settings = Settings.from_env(describe_stack("site-prod", cloudformation.client).environment())
    assert settings.notify_queue_url == "value-of-NotifyQueueUrl"
    assert settings.ingest_dlq_url == "value-of-IngestDeadLetterQueueUrl"
    assert (settings.site_url, settings.sections, settings.max_urls_per_file) == (SITE, "blog,news", 500)
    # and the index names its files on the site, as the stack's functions do without a domain of their own
    assert settings.sitemap_base_url == "" and settings.files_site.base_url == settings.site.base_url


def test_a_stacks_sitemap_domain_is_where_the_index_names_its_files(cloudformation: Any) -> None:
    # Given a stack whose sitemaps are served on a domain of their own
    outputs, parameters = _full()
    _create(cloudformation, "site-domain", outputs, parameters | {"SitemapDomain": "sitemaps.example.com"})
    # Then a command reading it renders the index as the stack's functions do: its files on that domain
    settings = Settings.from_env(describe_stack("site-domain", cloudformation.client).environment())
    assert settings.sitemap_base_url == "https://sitemaps.example.com"


def test_a_stack_that_does_not_exist_is_named_with_its_region(cloudformation: Any) -> None:
    with pytest.raises(StackError) as raised:
        describe_stack("no-such-stack", cloudformation.client)
    assert str(raised.value) == "stack no-such-stack does not exist in region us-east-1"


def test_a_stack_without_an_output_says_which_and_its_status(cloudformation: Any) -> None:
    outputs, parameters = _full(leave_out="NotifyQueueUrl")
    _create(cloudformation, "older", outputs, parameters)
    with pytest.raises(StackError) as raised:
        describe_stack("older", cloudformation.client).environment()
    assert str(raised.value) == (
        "stack older (CREATE_COMPLETE) has no output NotifyQueueUrl: deploy this version of template.yaml to it"
    )


@pytest.fixture
def no_aws_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials or region anywhere botocore looks (environment, files, instance metadata)."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.usefixtures("no_aws_configuration")
def test_no_region_and_no_credentials_are_each_said_in_one_line(httpserver: HTTPServer) -> None:
    with pytest.raises(StackError) as raised:
        describe_stack("site", boto3.session.Session().client)
    assert str(raised.value) == (
        "cannot read stack site: no AWS region is configured (set AWS_REGION, or a profile's region)"
    )
    with pytest.raises(StackError) as raised:
        describe_stack("site", boto3.session.Session(region_name="eu-west-1").client, httpserver.url_for("/"))
    assert str(raised.value).startswith("cannot read stack site: no AWS credentials found")
    assert not httpserver.log  # nothing was sent


def test_credentials_cloudformation_refuses_are_named_by_its_error(httpserver: HTTPServer) -> None:
    # What CloudFormation answers a key it does not know (HTTP 403, the query protocol's XML error)
    httpserver.expect_request("/", method="POST").respond_with_data(
        '<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type>'
        "<Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid."
        "</Message></Error><RequestId>4a6a5d59-1f1d-4b4e-9d5e-2f1c0b8f7a11</RequestId></ErrorResponse>",
        status=403,
        content_type="text/xml",
    )
    session = boto3.session.Session(aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="x", region_name="us-east-1")
    with pytest.raises(StackError) as raised:
        describe_stack("site", session.client, httpserver.url_for("/"))
    assert str(raised.value) == (
        "cannot read stack site: InvalidClientTokenId: The security token included in the request is invalid."
    )


@pytest.mark.parametrize("name", ["site-prod", "S1", "arn:aws:cloudformation:us-east-1:123456789012:stack/s/1-2"])
def test_a_stack_is_named_by_its_name_or_id(name: str) -> None:
    assert stack_name(name) == name


@pytest.mark.parametrize("name", ["https://www.example.com/", "1site", "site_prod", "", "a" * 129])
def test_what_cannot_name_a_stack_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="is not a stack name"):
        stack_name(name)


def test_import_without_stack_or_settings_says_to_give_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a shell where none of the functions' environment variables is set
    for name in (
        "SITE_URL",
        "MANIFEST_TABLE",
        "BUCKET_NAME",
        "REBUILD_QUEUE_URL",
        "INDEX_QUEUE_URL",
        "NOTIFY_QUEUE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    from sitemap_updater.cli import main

    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>')
    # When an import is run without --stack
    assert main(["import", "--sitemap", str(sitemap)]) == 2
    err = capsys.readouterr().err
    # Then the one line says what is missing and how to point the command at a deployed stack
    assert err.startswith("sitemap-updater: invalid settings: SITE_URL: Field required")
    assert "give --stack NAME to read them from a deployed stack" in err and err.count("\n") == 1
