"""What ``local`` sends to the ingest queue: the events of a wave's file, and the SQS requests that carry them.

A JSONL file is read as ``build`` reads it (``core.lines``): line by line, each line on its own, so one line of
bytes that are not UTF-8 is rejected alone and a line longer than SQS could carry is counted, not held. Whatever
SQS cannot carry (past its message size, characters outside its set, not UTF-8) is not sent: ``parse_event``
words why it is rejected, as ``build`` and the pipeline would; the rest goes in SendMessageBatch requests within
SQS's limits of 10 messages and 1 MiB in all.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import BinaryIO

from sitemap_updater.core.lines import LongLine, decoded, export_lines

# SQS (API reference, SendMessage and SendMessageBatch, since 2025): a message of at most 1 MiB, a batch of at most
# 10 messages whose bodies add up to at most 1 MiB; both counted in UTF-8 bytes. A queue's MaximumMessageSize may
# lower the first (the runner reads it from the queue).
SQS_MAX_MESSAGE_BYTES = 1_048_576
SQS_MAX_BATCH_BYTES = 1_048_576
SQS_MAX_BATCH_MESSAGES = 10
# The characters SQS accepts in a body (#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF).
_NOT_CARRIED = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CHUNK = 1 << 20
_PREVIEW = 1_000  # characters of a body not sent, kept for the report

Body = str | bytes | LongLine  # a line of text, a line that is not UTF-8, or a line too long to keep


def wave_bodies(stream: BinaryIO) -> list[Body]:
    """The events of a JSON array or JSONL file, each as it will be sent (or a line that cannot be): a JSON
    array's items as JSON text, a JSONL file's non-blank lines as ``build`` splits them."""
    first = stream.read(_CHUNK)
    chunks: Iterable[bytes]
    if first.lstrip().startswith(b"["):
        raw = first + stream.read()
        try:
            return [json.dumps(item, ensure_ascii=False) for item in json.loads(raw)]
        except (ValueError, RecursionError):  # not a JSON array after all (or not UTF-8): read as lines
            chunks = [raw]
    else:
        chunks = itertools.chain([first], iter(lambda: stream.read(_CHUNK), b""))
    return [decoded(line) for _, line in export_lines(chunks, SQS_MAX_MESSAGE_BYTES)]


def body_bytes(body: str) -> int:
    """A body's size as SQS counts it."""
    return len(body.encode("utf-8", "surrogatepass"))


def carried(body: Body, max_message_bytes: int) -> str | None:
    """``body`` as SQS carries it unchanged, or None: not text, empty, past ``max_message_bytes``, or holding a
    character SQS does not accept."""
    if not isinstance(body, str) or not body or _NOT_CARRIED.search(body):
        return None
    return body if body_bytes(body) <= max_message_bytes else None


def escaped(body: str) -> str:
    """A JSON body with each character SQS does not accept written as a JSON escape (``\\uffff``): for an event
    that is valid as it is, such characters can only stand inside its strings, which read back the same."""
    return _NOT_CARRIED.sub(lambda found: f"\\u{ord(found.group()):04x}", body)


def preview(body: Body) -> str:
    """A body not sent, as the report shows it: its text (bytes that are not UTF-8 as ``\\xff``), cut."""
    if isinstance(body, LongLine):
        return f"(a line of {body.size:,} bytes, not read)"
    text = body if isinstance(body, str) else body.decode("utf-8", "backslashreplace")
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "..."


def sqs_batches(
    bodies: Sequence[str], max_bytes: int = SQS_MAX_BATCH_BYTES, max_messages: int = SQS_MAX_BATCH_MESSAGES
) -> Iterator[list[str]]:
    """The bodies in order, in batches of at most ``max_messages`` whose sizes add up to at most ``max_bytes``
    (each body is at most ``max_bytes`` itself)."""
    batch: list[str] = []
    size = 0
    for body in bodies:
        length = body_bytes(body)
        if batch and (len(batch) == max_messages or size + length > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(body)
        size += length
    if batch:
        yield batch
