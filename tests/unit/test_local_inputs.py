"""What ``local`` sends SQS: batches within SendMessageBatch's limits (10 messages, 1 MiB of bodies in UTF-8 bytes,
per the SQS API reference since 2025), and only bodies SQS accepts (its character set, its message size)."""

from __future__ import annotations

import io
import json

import pytest

from sitemap_updater.core.lines import LongLine
from sitemap_updater.local.inputs import carried, escaped, sqs_batches, wave_bodies

MIB = 1_048_576


def _sizes(batches: list[list[str]]) -> list[list[int]]:
    return [[len(body.encode()) for body in batch] for batch in batches]


def test_a_batch_holds_at_most_1_mib_of_bodies_counted_in_bytes() -> None:
    # Given bodies that add up to exactly 1 MiB, then to 1 MiB and one byte (the last character takes two bytes)
    exact = ["a" * (MIB // 4)] * 4
    over = ["a" * (MIB // 4)] * 3 + ["a" * (MIB // 4 - 1) + "\u00e9"]
    # Then the first go in one request and the second in two, in their order
    assert _sizes(list(sqs_batches(exact))) == [[MIB // 4] * 4]
    assert _sizes(list(sqs_batches(over))) == [[MIB // 4] * 3, [MIB // 4 + 1]]
    # And ten bodies of 120 KB (1.2 MB) go in two requests, none past the limit
    ten = list(sqs_batches(["x" * 120_000] * 10))
    assert [len(batch) for batch in ten] == [8, 2]


@pytest.mark.parametrize(("count", "requests"), [(10, [10]), (11, [10, 1]), (21, [10, 10, 1])])
def test_a_batch_holds_at_most_10_messages(count: int, requests: list[int]) -> None:
    assert [len(batch) for batch in sqs_batches(["{}"] * count)] == requests


def test_sqs_carries_a_body_within_its_message_size_and_character_set() -> None:
    assert carried("a" * 100, 100) == "a" * 100
    assert carried("a" * 101, 100) is None
    assert carried("\u00e9" * 50, 100) is not None and carried("\u00e9" * 51, 100) is None  # bytes, not characters
    for refused in ("\x00", "\x1f", "\ufffe", "\uffff", "\ud800", ""):
        assert carried(f"a{refused}b" if refused else refused, MIB) is None, repr(refused)
    for accepted in ("\t", "\n", "\r", "\u2028", "\ufffd", "\U0001f600", "\ue000"):
        assert carried(f"a{accepted}b", MIB) is not None, repr(accepted)


def test_a_valid_event_with_a_character_sqs_refuses_reads_back_the_same_once_escaped() -> None:
    body = json.dumps({"url": "https://www.example.com/a", "note": "x\ufffey\uffff"}, ensure_ascii=False)
    sent = escaped(body)
    assert carried(sent, MIB) == sent and json.loads(sent) == json.loads(body)


def test_a_wave_file_s_lines_are_read_one_by_one() -> None:
    # Given a JSONL file with a line that is not UTF-8 and one longer than SQS carries, among good lines
    data = b'{"a": 1}\n{"b": "\xff"}\n' + b"x" * (MIB + 1) + b'\n\n{"c": "\xc3\xa9"}'
    # Then each line is read alone: text, the bytes that are not UTF-8, the long line by its size
    assert wave_bodies(io.BytesIO(data)) == ['{"a": 1}', b'{"b": "\xff"}', LongLine(MIB + 1), '{"c": "\u00e9"}']
    # And a JSON array is read as its items
    assert wave_bodies(io.BytesIO(b' [{"a": 1}, {"b": "\xc3\xa9"}]')) == ['{"a": 1}', '{"b": "\u00e9"}']
