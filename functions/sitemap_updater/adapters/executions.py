"""Step Functions: the status of the bootstrap state machine's executions (DescribeExecution)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from sitemap_updater.core.moments import to_micros
from sitemap_updater.ports import ExecutionState


class StepFunctionsExecutions:
    """DescribeExecution of one execution ARN: its status and stop date (executions are kept 90 days after they
    stop; after that, or for an ARN that never was, ``ExecutionDoesNotExist``: None)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def describe(self, arn: str) -> ExecutionState | None:
        try:
            found = self._client.describe_execution(executionArn=arn)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return None
            raise
        stopped = found.get("stopDate")
        return ExecutionState(str(found["status"]), to_micros(stopped) if stopped is not None else 0)
