"""Which failed messages of a batch are dead-lettered, and with what (service/dead_letters.py): only those on their
queue's last allowed receive, sent as they came with their reason, source message ID and receive count, in their
FIFO group; the rest, and those whose dead-letter send fails, are given back to SQS. The SQS client is a
recording stand-in behind the real queue adapter."""

from __future__ import annotations

from typing import Any, cast

import pytest

from sitemap_updater.adapters.queues import MessageQueue
from sitemap_updater.service.dead_letters import REASON_LIMIT, DeadLetters, dead_letter, error_text, settle

FIFO_DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/rebuild-dlq.fifo"
STANDARD_DLQ = "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq"


class Sqs:
    """Records ``send_message`` calls; raises ``error`` instead when it is set."""

    def __init__(self, error: Exception | None = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.error = error

    def send_message(self, **params: Any) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        self.sent.append(params)
        return {"MessageId": f"dlq-{len(self.sent)}"}


def queue(sqs: Sqs, url: str) -> MessageQueue:
    """The real queue adapter over the recording client."""
    return MessageQueue(cast(Any, sqs), url)


def record(message_id: str, receives: int | None, body: str = "{}", group: str | None = None) -> dict[str, Any]:
    """An SQS event record as Lambda gives it (no attributes at all when ``receives`` is None)."""
    found: dict[str, Any] = {"messageId": message_id, "body": body}
    if receives is not None:
        found["attributes"] = {"ApproximateReceiveCount": str(receives)}
        if group is not None:
            found["attributes"]["MessageGroupId"] = group
    return found


def attributes(sent: dict[str, Any]) -> dict[str, str]:
    return {name: value["StringValue"] for name, value in sent["MessageAttributes"].items()}


def test_only_a_message_on_its_last_receive_is_dead_lettered_with_its_reason() -> None:
    sqs = Sqs()
    records = [
        record("early", 2, group="blog"),
        record("last", 3, body='{"section": "blog"}', group="blog"),
        record("later", 4, group="news"),
        record("fine", 3, group="blog"),
    ]
    errors = {"early": "RuntimeError: boom", "last": "RuntimeError: boom", "later": "KeyError: 'x'"}
    settled = settle(records, errors, DeadLetters(queue(sqs, FIFO_DLQ), 3))
    # The message received fewer times than the queue allows is retried; the others are dead-lettered
    assert settled.failures == ["early"]
    assert [(d.message_id, d.reason) for d in settled.dead_lettered] == [
        ("last", "failed on all 3 receives: RuntimeError: boom"),
        ("later", "failed on all 4 receives: KeyError: 'x'"),
    ]
    first, second = sqs.sent
    # As it came, with its reason, source and count, in its own FIFO group, deduplicated by its message ID
    assert first["MessageBody"] == '{"section": "blog"}'
    assert attributes(first) == {
        "reason": "failed on all 3 receives: RuntimeError: boom",
        "source_message_id": "last",
        "receive_count": "3",
    }
    assert (first["MessageGroupId"], first["MessageDeduplicationId"]) == ("blog", "last")
    assert (second["MessageGroupId"], second["MessageDeduplicationId"]) == ("news", "later")


def test_a_message_without_a_group_keeps_the_default_group_or_its_own_id() -> None:
    sqs = Sqs()
    dead = DeadLetters(queue(sqs, FIFO_DLQ), 1)
    settle([record("m-1", 1)], {"m-1": "E: x"}, dead, default_group="index")
    settle([record("m-2", 1)], {"m-2": "E: x"}, dead)
    assert [(s["MessageGroupId"], s["MessageDeduplicationId"]) for s in sqs.sent] == [("index", "m-1"), ("m-2", "m-2")]


def test_a_record_without_attributes_counts_as_received_once() -> None:
    sqs = Sqs()
    settled = settle([record("m", None)], {"m": "E: x"}, DeadLetters(queue(sqs, FIFO_DLQ), 1))
    assert [d.reason for d in settled.dead_lettered] == ["failed on all 1 receives: E: x"]
    assert attributes(sqs.sent[0])["receive_count"] == "1"
    assert settle([record("n", None)], {"n": "E: x"}, DeadLetters(queue(sqs, FIFO_DLQ), 2)).failures == ["n"]


@pytest.mark.parametrize("dead", [DeadLetters(None, 3), DeadLetters(queue(Sqs(), FIFO_DLQ), 0)])
def test_without_a_dead_letter_queue_or_a_receive_limit_every_failure_goes_back_to_sqs(dead: DeadLetters) -> None:
    settled = settle([record("a", 5), record("b", 1)], {"a": "E: x", "b": "E: y"}, dead)
    assert (settled.failures, settled.dead_lettered) == (["a", "b"], [])


def test_a_failed_dead_letter_send_leaves_the_message_to_sqs_with_the_send_error() -> None:
    sqs = Sqs(ConnectionError("SQS unreachable"))
    settled = settle([record("m", 3)], {"m": "E: x"}, DeadLetters(queue(sqs, FIFO_DLQ), 3))
    assert (settled.failures, settled.dead_lettered) == (["m"], [])
    assert settled.unsent == {"m": "ConnectionError: SQS unreachable"}


def test_a_standard_dead_letter_queue_gets_the_message_without_group_and_the_reason_is_cut_to_its_limit() -> None:
    sqs = Sqs()
    dead_letter(queue(sqs, STANDARD_DLQ), "not json", "r" * (REASON_LIMIT + 5), "m-9")
    [sent] = sqs.sent
    assert "MessageGroupId" not in sent and sent["MessageBody"] == "not json"
    assert attributes(sent) == {"reason": "r" * 1000, "source_message_id": "m-9"}


def test_an_error_is_told_by_its_type_and_message() -> None:
    assert error_text(ValueError("bad input")) == "ValueError: bad input"
