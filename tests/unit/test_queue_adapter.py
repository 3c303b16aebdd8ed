"""The SQS adapter (``MessageQueue``) on moto: a queue's depth counts the messages waiting and those received and
not yet deleted (what ``redrive`` and the local runner wait on)."""

from __future__ import annotations

import boto3
from moto import mock_aws

from sitemap_updater.adapters.queues import MessageQueue


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
