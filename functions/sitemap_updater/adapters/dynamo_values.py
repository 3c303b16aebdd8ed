"""DynamoDB's attribute values and conditional writes, as the adapters of the table build and run them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError


def s(value: str) -> dict[str, Any]:
    """A string attribute value."""
    return {"S": value}


def n(value: int) -> dict[str, Any]:
    """A number attribute value."""
    return {"N": str(value)}


def conditional(operation: Callable[[], object]) -> bool:
    """Run a conditional write; False when its condition did not hold."""
    try:
        operation()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True
