"""What can go wrong around an AWS call in the simulation: the generic crash before or after it, and the error
shapes AWS really answers with (DynamoDB throughput and throttling, transaction conflicts, S3 503 SlowDown and
409 ConditionalRequestConflict, SQS throttling).

On AWS, botocore's standard retry mode retries throttling and 503 SlowDown inside the client; these fakes sit
above botocore, so here such an error is what the code sees once the SDK's attempts are spent: it must fail
the invocation (or the batch item) and let SQS deliver the message again. Partial batch results
(``UnprocessedItems``/``UnprocessedKeys``) are drawn by the DynamoDB fake; over-size keys and items fail its
size checks (``tests/sim/dynamo.py``), which are persistent, not drawn."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError


class InjectedFault(RuntimeError):
    """An AWS call failed or timed out: the code sees an exception and may handle it."""


class LambdaDied(BaseException):
    """The invocation stopped (timeout, out of memory, runtime crash): nothing after this line runs."""


def aws_error(code: str, operation: str, status: int = 400, message: str = "", **extra: Any) -> ClientError:
    """A ClientError as botocore parses it: the code, the HTTP status, and any modeled fields at the top."""
    response: Any = {
        "Error": {"Code": code, "Message": message or code},
        "ResponseMetadata": {"HTTPStatusCode": status},
        **extra,
    }
    return ClientError(response, operation)


def _transaction_conflict() -> ClientError:
    # One reason per action; the conflict is on the section's sequence counter, the item every change touches.
    reasons = [{"Code": "None"}, {"Code": "None"}, {"Code": "TransactionConflict", "Message": "Transaction is ongoing"}]
    message = "Transaction cancelled, please refer cancellation reasons for specific reasons [None, None, "
    message += "TransactionConflict]"
    return aws_error("TransactionCanceledException", "TransactWriteItems", 400, message, CancellationReasons=reasons)


_DYNAMO = [
    lambda op: aws_error(
        "ProvisionedThroughputExceededException",
        op,
        400,
        "The level of configured provisioned throughput for the table was exceeded",
    ),
    lambda op: aws_error("ThrottlingException", op, 400, "Rate of requests exceeds the allowed throughput"),
]
# The error shapes of each call, by the name the fakes give it (before the call: the request was not applied).
SHAPES: dict[str, list[Callable[[str], ClientError]]] = {
    **{f"dynamodb.{name}": _DYNAMO for name in (
        "get_item", "put_item", "update_item", "delete_item", "query", "scan", "batch_get_item", "batch_write_item")},
    "dynamodb.transact_write_items": [*_DYNAMO, lambda _op: _transaction_conflict()],
    "s3.head_object": [lambda op: aws_error("SlowDown", op, 503, "Please reduce your request rate.")],
    "s3.put_object": [
        lambda op: aws_error("SlowDown", op, 503, "Please reduce your request rate."),
        lambda op: aws_error("ConditionalRequestConflict", op, 409, "A conflicting operation occurred. Retry."),
    ],
    "s3.delete_object": [lambda op: aws_error("SlowDown", op, 503, "Please reduce your request rate.")],
    "sqs.send_message": [lambda op: aws_error("RequestThrottled", op, 400, "Request is throttled.")],
    "sqs.send_message_batch": [lambda op: aws_error("RequestThrottled", op, 400, "Request is throttled.")],
}  # fmt: skip


@dataclass
class Faults:
    """Where and how often AWS calls fail. ``enabled`` is switched off for an invocation whose messages are on
    their last receive (transient faults; persistent ones must end in a dead-letter queue with a reason).

    Of the faults: ``death_share`` kill the invocation, ``aws_share`` (before a call that has AWS error shapes)
    raise one of them, the rest raise a generic exception (a timeout of the call, which may have been applied)."""

    rng: random.Random
    rate: float
    death_share: float = 0.3
    aws_share: float = 0.5
    partial_rate: float = 0.3  # how often a batch call returns part of its items unprocessed
    injected: dict[str, int] = field(default_factory=dict)

    def _count(self, key: str) -> None:
        self.injected[key] = self.injected.get(key, 0) + 1

    def maybe(self, where: str, enabled: bool) -> None:
        if not enabled or self.rate <= 0 or self.rng.random() >= self.rate:
            return
        self._count(where)
        if self.rng.random() < self.death_share:
            self._count("died")
            raise LambdaDied(where)
        phase, _, call = where.partition(" ")
        shapes = SHAPES.get(call, []) if phase == "before" else []
        if shapes and self.rng.random() < self.aws_share:
            error = self.rng.choice(shapes)(call.rpartition(".")[2])
            self._count("aws")
            reasons = {str(r["Code"]) for r in error.response.get("CancellationReasons", [])} - {"None"}
            self._count(" ".join([f"shape {error.response['Error']['Code']}", *sorted(reasons)]))
            raise error
        self._count("raised")
        raise InjectedFault(where)

    def unprocessed(self, enabled: bool, count: int) -> int:
        """How many of ``count`` batch items DynamoDB leaves unprocessed this time (usually none)."""
        if not enabled or count == 0 or self.rate <= 0 or self.rng.random() >= self.rate * self.partial_rate * 10:
            return 0
        self._count("shape UnprocessedItems")
        self._count("aws")
        return self.rng.randint(1, count)
