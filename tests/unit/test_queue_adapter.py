"""The SQS adapter (``MessageQueue``) on moto: a queue's depth counts the messages waiting and those received and
not yet deleted (what ``redrive`` and the local runner wait on)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.adapters.queues import BATCH_BYTES, MessageQueue, batches
from sitemap_updater.core.messages import Message


def test_the_depth_counts_waiting_and_received_messages_until_deleted() -> None:
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        queue = MessageQueue(client, client.create_queue(QueueName="rebuild")["QueueUrl"])
        assert queue.depth() == 0
        for n in range(3):
            queue.send({"n": n})
        assert queue.depth() == 3
        [taken] = queue.receive(1, hold_s=60, wait_s=0)
        assert queue.depth() == 3  # one in flight, two waiting
        queue.delete(taken.receipt)
        assert queue.depth() == 2


def test_a_batch_send_keeps_each_groups_order_in_requests_sqs_accepts() -> None:
    # 23 messages of two FIFO groups, two of them too large for SQS's 256 KiB of bodies in one request together
    messages = [
        Message({"n": n, "pad": "x" * (150_000 if n in (12, 13) else 10)}, f"g{n % 2}", f"d{n}") for n in range(23)
    ]
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        url = client.create_queue(QueueName="rebuild.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        requests: list[int] = []
        client.meta.events.register(
            "provide-client-params.sqs.SendMessageBatch", lambda params, **_: requests.append(len(params["Entries"]))
        )
        queue = MessageQueue(client, url)
        queue.send_batch(messages)
        assert requests == [10, 3, 10]  # ten; two and a large one; the other large one and nine more
        received = []
        while batch := queue.receive(10, hold_s=60, wait_s=0):
            for message in batch:
                received.append((message.group, json.loads(message.body)["n"]))
                queue.delete(message.receipt)
    for group in ("g0", "g1"):
        assert [n for g, n in received if g == group] == [n for n in range(23) if f"g{n % 2}" == group]


def test_a_batch_send_that_sqs_refuses_in_part_raises_naming_the_refusal() -> None:
    with mock_aws():
        client = boto3.client("sqs", region_name="us-east-1")
        url = client.create_queue(QueueName="rebuild.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]

        def refuse_second(parsed: dict[str, Any], **_: Any) -> None:
            parsed["Successful"] = parsed["Successful"][:1]
            parsed["Failed"] = [{"Id": "1", "SenderFault": False, "Code": "InternalError", "Message": "try again"}]

        client.meta.events.register("after-call.sqs.SendMessageBatch", refuse_second)
        with pytest.raises(RuntimeError, match="SQS refused 1 of 2 messages: InternalError: try again"):
            MessageQueue(client, url).send_batch([Message({"n": 1}, "g", "d1"), Message({"n": 2}, "g", "d2")])


def test_requests_hold_at_most_ten_entries_and_256_kib_of_bodies() -> None:
    assert [len(c) for c in batches(["x"] * 21)] == [10, 10, 1]
    at_limit = ["x" * (BATCH_BYTES // 2)] * 2  # exactly the limit: one request
    assert [len(c) for c in batches(at_limit)] == [2]
    over = ["x" * (BATCH_BYTES // 2), "x" * (BATCH_BYTES // 2 + 1)]  # a byte more: two
    assert [len(c) for c in batches(over)] == [1, 1]
    assert [[i for i, _ in c] for c in batches(["é" * 70_000] * 2)] == [[0], [1]]  # bytes, not characters
