"""The Step Functions adapter the bootstrap worker asks whether its execution still runs (local runs use their
own harness instead): on moto, a running execution, one stopped with its stop date, and an ARN Step Functions
does not know (``ExecutionDoesNotExist``: None); any other error is raised."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from sitemap_updater.adapters.executions import StepFunctionsExecutions
from sitemap_updater.core.moments import to_micros

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/bootstrap"


@pytest.fixture
def stepfunctions() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("stepfunctions", region_name=REGION)


def test_a_running_a_stopped_and_an_unknown_execution(stepfunctions: Any) -> None:
    definition = json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 60, "End": True}}})
    machine = stepfunctions.create_state_machine(name="bootstrap", definition=definition, roleArn=ROLE)
    running = stepfunctions.start_execution(stateMachineArn=machine["stateMachineArn"], name="run-1")["executionArn"]
    stopped = stepfunctions.start_execution(stateMachineArn=machine["stateMachineArn"], name="run-2")["executionArn"]
    stepfunctions.stop_execution(executionArn=stopped)
    executions = StepFunctionsExecutions(stepfunctions)
    state = executions.describe(running)
    assert state is not None and (state.status, state.stopped_us) == ("RUNNING", 0)
    state = executions.describe(stopped)
    stop_date = stepfunctions.describe_execution(executionArn=stopped)["stopDate"]
    assert state is not None and (state.status, state.stopped_us) == ("ABORTED", to_micros(stop_date))
    assert state.stopped_us > 0
    assert executions.describe(running.replace("run-1", "never-started")) is None


def test_an_error_other_than_a_missing_execution_is_raised() -> None:
    class Refusing:
        def describe_execution(self, executionArn: str) -> Any:  # noqa: N803 (boto3's parameter name)
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DescribeExecution")

    with pytest.raises(ClientError, match="AccessDeniedException"):
        StepFunctionsExecutions(Refusing()).describe("arn:aws:states:us-east-1:123456789012:execution:bootstrap:x")
