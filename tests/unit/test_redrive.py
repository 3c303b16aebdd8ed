"""What a redrive does with each kind of dead letter, told apart by the attributes their producers write."""

from __future__ import annotations

import pytest

from sitemap_updater.ports import QueuedMessage
from sitemap_updater.service.dead_letters import (
    UNREADABLE,
    DeadLetterKind,
    DeadLetters,
    classify,
    dead_letter,
    error_text,
    settle,
)
from sitemap_updater.service.redrive import Action, RedriveFailed, RedriveOptions, redrive


class _Recorder:
    """A queue that keeps what ``dead_letter`` sends it."""

    def __init__(self, fifo: bool = False) -> None:
        self.fifo = fifo
        self.url = "https://sqs.example/q" + (".fifo" if fifo else "")
        self.sent: list[tuple[str, dict[str, str], str | None, str | None]] = []

    def send_raw_grouped(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None) -> None:
        self.sent.append((body, attributes, group, dedup))

    def send_raw(self, body: str, attributes: dict[str, str]) -> None:
        self.send_raw_grouped(body, attributes, None, None)


class _Source:
    """A dead-letter queue: received messages are hidden until deleted or released."""

    def __init__(self, messages: list[QueuedMessage], fifo: bool = False) -> None:
        self.url, self.fifo = "https://sqs.example/dlq", fifo
        self.messages = {m.message_id: m for m in messages}
        self.hidden: set[str] = set()
        self.released: list[str] = []

    def receive(self, limit: int, hold_s: int, wait_s: int) -> list[QueuedMessage]:
        visible = [m for m in self.messages.values() if m.message_id not in self.hidden][: min(limit, 10)]
        self.hidden.update(m.message_id for m in visible)
        return visible

    def delete(self, receipt: str) -> None:
        del self.messages[receipt]
        self.hidden.discard(receipt)

    def release(self, receipts: list[str]) -> None:
        self.released += receipts
        self.hidden -= set(receipts)

    def depth(self) -> int:
        return len(self.messages)


def _dead(number: int, attributes: dict[str, str], group: str | None = None) -> QueuedMessage:
    name = f"m{number:03d}"
    return QueuedMessage(name, name, f"body {number}", attributes, group, f"dedup-{number}" if group else None)


def _produced(send: str) -> dict[str, str]:
    """The attributes a producer wrote: a rejection, a failure, a bootstrap line, an unreadable message."""
    queue = _Recorder()
    if send == "rejected":
        dead_letter(queue, "{}", "url: Field required", "id-1")  # type: ignore[arg-type]
    elif send == "bootstrap line":
        dead_letter(queue, "{}", "line 7: url: Field required", "_bootstrap/r/export/a.jsonl:7")  # type: ignore[arg-type]
    else:
        error = f"{UNREADABLE}: {error_text(ValueError('not JSON'))}" if send == "unreadable" else "ClientError: x"
        record = {"messageId": "id-2", "body": "{}", "attributes": {"ApproximateReceiveCount": "5"}}
        settle([record], {"id-2": error}, DeadLetters(queue, 5))  # type: ignore[arg-type]
    return queue.sent[0][1]


@pytest.mark.parametrize(
    ("produced", "kind"),
    [
        ("rejected", DeadLetterKind.REJECTED),
        ("bootstrap line", DeadLetterKind.REJECTED),
        ("unreadable", DeadLetterKind.REJECTED),
        ("failed", DeadLetterKind.FAILED),
    ],
)
def test_each_producer_s_dead_letters_are_classified_by_their_attributes(produced: str, kind: DeadLetterKind) -> None:
    assert classify(_produced(produced)) is kind


def test_a_dead_letter_without_a_reason_is_unexplained_and_a_reason_without_a_receive_count_is_a_rejection() -> None:
    assert classify({}) is DeadLetterKind.UNEXPLAINED
    assert classify({"reason": "failed on all 5 receives: ClientError: x"}) is DeadLetterKind.REJECTED


def test_only_failures_are_redriven_by_default_and_the_rest_are_released_at_the_end() -> None:
    failed, rejected = _produced("failed"), _produced("rejected")
    source = _Source([_dead(1, failed), _dead(2, rejected), _dead(3, {}), _dead(4, failed)])
    queue = _Recorder()
    result = redrive(source, queue, RedriveOptions())  # type: ignore[arg-type]
    assert [body for body, *_ in queue.sent] == ["body 1", "body 4"]
    assert sorted(source.messages) == ["m002", "m003"]
    assert result.read == 4 and result.actions == {Action.REDRIVE: 2, Action.KEEP: 2, Action.DISCARD: 0}
    assert sorted(source.released) == ["m002", "m003"] and not source.hidden


def test_options_narrow_or_widen_what_is_redriven_and_a_dry_run_changes_nothing() -> None:
    failed, rejected = _produced("failed"), _produced("rejected")
    throttled = {**failed, "reason": "failed on all 5 receives: ClientError: ProvisionedThroughputExceededException"}

    def run(options: RedriveOptions) -> tuple[list[str], list[str]]:
        source = _Source([_dead(1, failed), _dead(2, rejected), _dead(3, {}), _dead(4, throttled)])
        queue = _Recorder()
        redrive(source, queue, options)  # type: ignore[arg-type]
        return [body for body, *_ in queue.sent], sorted(source.messages)

    assert run(RedriveOptions(matching="provisionedthroughput")) == (["body 4"], ["m001", "m002", "m003"])
    assert run(RedriveOptions(include_unexplained=True)) == (["body 1", "body 3", "body 4"], ["m002"])
    assert run(RedriveOptions(discard_rejected=True)) == (["body 1", "body 4"], ["m003"])
    assert run(RedriveOptions(dry_run=True, discard_rejected=True)) == ([], ["m001", "m002", "m003", "m004"])


def test_a_run_reads_at_most_its_limit() -> None:
    failed = _produced("failed")
    source = _Source([_dead(n, failed) for n in range(25)])
    queue = _Recorder()
    assert redrive(source, queue, RedriveOptions(limit=12)).read == 12  # type: ignore[arg-type]
    assert len(queue.sent) == 12 and len(source.messages) == 13


def test_a_fifo_dead_letter_keeps_its_group_and_deduplication_id() -> None:
    source = _Source([_dead(1, _produced("failed"), group="blog")], fifo=True)
    queue = _Recorder(fifo=True)
    redrive(source, queue, RedriveOptions())  # type: ignore[arg-type]
    assert queue.sent == [("body 1", {}, "blog", "dedup-1")]


def test_a_failed_send_deletes_nothing_and_stops_the_run_with_every_message_released() -> None:
    failed = _produced("failed")
    source = _Source([_dead(1, failed), _dead(2, failed)])

    class _Down(_Recorder):
        def send_raw_grouped(self, *_args: object) -> None:
            raise ConnectionError("SQS unreachable")

    with pytest.raises(RedriveFailed) as caught:
        redrive(source, _Down(), RedriveOptions())  # type: ignore[arg-type]
    assert caught.value.sent is False and caught.value.decision.message.message_id == "m001"
    assert sorted(source.messages) == ["m001", "m002"] and not source.hidden
