"""SQS: send messages (FIFO group and deduplication IDs when the queue is FIFO); receive, delete and release them
for an operator's command (``redrive``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sitemap_updater.core.messages import Message
from sitemap_updater.ports import QueuedMessage

# SendMessageBatch: at most 10 entries, and (as SQS documented until 2025, when it allowed 1 MiB) 256 KiB of bodies
# together: a request stays within both.
BATCH_ENTRIES = 10
BATCH_BYTES = 262_144

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


class MessageQueue:
    """One SQS queue."""

    def __init__(self, client: SQSClient, url: str) -> None:
        self._client = client
        self.url = url
        self.fifo = url.endswith(".fifo")

    def _fifo(self, group: str | None, dedup: str | None) -> dict[str, Any]:
        """The group and deduplication ID a FIFO queue requires (nothing for a standard queue)."""
        if not self.fifo:
            return {}
        if group is None or dedup is None:
            raise ValueError("a FIFO queue needs a message group and a deduplication ID")
        return {"MessageGroupId": group, "MessageDeduplicationId": dedup}

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        """Send one JSON message; ``group`` and ``dedup`` are required on a FIFO queue."""
        params: dict[str, Any] = {"QueueUrl": self.url, "MessageBody": json.dumps(body, sort_keys=True)}
        self._client.send_message(**params, **self._fifo(group, dedup))

    def send_batch(self, messages: Sequence[Message]) -> None:
        """Send JSON messages in as few SendMessageBatch requests as their count and sizes allow (in order: FIFO
        keeps each group's order within and across requests). Raises if SQS refuses any entry: those before it
        may have been sent (a retry sends them again; a FIFO queue drops them as duplicates for five minutes)."""
        for chunk in batches([json.dumps(m.body, sort_keys=True) for m in messages]):
            entries = [
                {"Id": str(i), "MessageBody": text, **self._fifo(messages[i].group, messages[i].dedup)}
                for i, text in chunk
            ]
            answer = self._client.send_message_batch(QueueUrl=self.url, Entries=entries)  # type: ignore[arg-type]
            if answer.get("Failed"):
                failed = answer["Failed"][0]
                raise RuntimeError(
                    f"SQS refused {len(answer['Failed'])} of {len(entries)} messages: {failed.get('Code')}: "
                    f"{failed.get('Message', '')}"
                )

    def send_raw(self, body: str, attributes: dict[str, str]) -> None:
        """Send a body as it is, with string message attributes (for dead letters with their reason), to a
        standard queue."""
        self.send_raw_grouped(body, attributes, None, None)

    def send_raw_grouped(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None) -> None:
        """``send_raw`` to any queue: ``group`` and ``dedup`` are required on a FIFO queue (a FIFO dead-letter
        queue keeps the message's group; the deduplication ID makes a repeated send within five minutes one)."""
        params: dict[str, Any] = {
            "QueueUrl": self.url,
            "MessageBody": body if body else "(empty)",
            "MessageAttributes": {k: {"DataType": "String", "StringValue": v or "-"} for k, v in attributes.items()},
        }
        self._client.send_message(**params, **self._fifo(group, dedup))

    def defer(self, receipts: list[str], seconds: int) -> None:
        """Give received messages back to the queue, visible again after ``seconds`` (ChangeMessageVisibility;
        the caller reports them failed so the event source does not delete them). Raises if SQS refuses one."""
        for start in range(0, len(receipts), 10):
            entries = [
                {"Id": str(i), "ReceiptHandle": receipt, "VisibilityTimeout": seconds}
                for i, receipt in enumerate(receipts[start : start + 10])
            ]
            answer = self._client.change_message_visibility_batch(QueueUrl=self.url, Entries=entries)  # type: ignore[arg-type]
            if answer.get("Failed"):
                raise RuntimeError(f"SQS did not defer {len(answer['Failed'])} messages: {answer['Failed'][0]}")

    def receive(self, limit: int, hold_s: int, wait_s: int) -> list[QueuedMessage]:
        """Up to ``limit`` (at most 10) messages with every attribute, invisible to others for ``hold_s`` seconds.
        ``wait_s`` above 0 is a long poll, which asks every SQS server (a short poll of a standard queue may answer
        nothing while messages wait)."""
        answer = self._client.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=max(1, min(limit, 10)),
            VisibilityTimeout=hold_s,
            WaitTimeSeconds=wait_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return [_queued(message) for message in answer.get("Messages", [])]

    def delete(self, receipt: str) -> None:
        self._client.delete_message(QueueUrl=self.url, ReceiptHandle=receipt)

    def release(self, receipts: list[str]) -> None:
        """Make received messages visible again at once."""
        self.defer(receipts, 0)

    def depth(self) -> int:
        """About how many messages the queue holds, visible or received and not yet deleted."""
        answer = self._client.get_queue_attributes(
            QueueUrl=self.url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        visible = answer.get("ApproximateNumberOfMessages", "0")
        return int(visible) + int(answer.get("ApproximateNumberOfMessagesNotVisible", "0"))


def _queued(message: Any) -> QueuedMessage:
    system = message.get("Attributes", {})
    attributes = {
        key: str(value.get("StringValue", ""))
        for key, value in message.get("MessageAttributes", {}).items()
        if "StringValue" in value
    }
    return QueuedMessage(
        message_id=str(message["MessageId"]),
        receipt=str(message["ReceiptHandle"]),
        body=str(message.get("Body", "")),
        attributes=attributes,
        group=system.get("MessageGroupId"),
        dedup=system.get("MessageDeduplicationId"),
        sent_at_ms=int(system.get("SentTimestamp", 0)),
    )


def batches(texts: Sequence[str]) -> Iterator[list[tuple[int, str]]]:
    """The (index, body) of ``texts`` in order, cut into requests of at most ``BATCH_ENTRIES`` entries and
    ``BATCH_BYTES`` of bodies (a body larger than that goes alone: SQS judges it by its own limit)."""
    chunk: list[tuple[int, str]] = []
    size = 0
    for i, text in enumerate(texts):
        length = len(text.encode())
        if chunk and (len(chunk) == BATCH_ENTRIES or size + length > BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append((i, text))
        size += length
    if chunk:
        yield chunk
