"""DynamoDB's attribute values and conditional writes, as the adapters of the table build and run them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from sitemap_updater.core.formats import check


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


def checked(item: Mapping[str, Any], known: int, what: str) -> Mapping[str, Any]:
    """``item``, once its format version (its ``v``, a number) is found to be ``known``; else UnknownFormat."""
    raw = item.get("v", {}).get("N")
    check(int(raw) if isinstance(raw, str) and raw.isdigit() else raw, known, what)
    return item
