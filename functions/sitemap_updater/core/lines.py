"""The lines of an export read as a stream of byte chunks, as ``build`` splits and numbers them, with a bound on
what one line may hold in memory (``import`` and ``local`` read their inputs so).

A line ends at \\n, \\r\\n or \\r (as ``bytes.splitlines``, not at a U+2028 inside a string); every line counts in
the numbering and a blank one (ASCII white space only, as ``bytes.strip`` sees it) is skipped. A line longer than
the bound is not kept: only its size is, and the reader that asked rejects it by that size, as ``build`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line past the bound: its size in bytes, without a leading byte order mark (as ``parse_event`` counts)."""

    size: int


def export_lines(chunks: Iterable[bytes], keep: int) -> Iterator[tuple[int, bytes | LongLine]]:
    """(number, line) for each non-blank line of the bytes ``chunks`` give, numbered from 1: its bytes without
    the line end, or a :class:`LongLine` when it holds more than ``keep`` bytes (never more is held at once)."""
    number = 0
    held = bytearray()
    head = b""  # the line's first bytes, for its byte order mark once it is no longer held
    size, blank, kept = 0, True, True
    after_cr = False  # the last chunk ended with \r: a \n first in the next one ends the same line
    for chunk in chunks:
        start = 0
        if after_cr and chunk.startswith(b"\n"):
            start = 1
        after_cr = False
        while True:
            found = _END.search(chunk, start)
            piece = chunk[start : found.start() if found else len(chunk)]
            if piece:
                if len(head) < len(_BOM):
                    head += piece[: len(_BOM) - len(head)]
                size += len(piece)
                blank = blank and piece.isspace()
                if kept and len(held) + len(piece) <= keep:
                    held += piece
                elif kept:
                    kept = False
                    held.clear()
            if found is None:
                break
            number += 1
            if not blank:
                yield number, bytes(held) if kept else LongLine(size - len(_BOM) if head == _BOM else size)
            held.clear()
            head, size, blank, kept = b"", 0, True, True
            start = found.end()
            if found.group() == b"\r" and start == len(chunk):
                after_cr = True
    if size:  # the last line, without a line end
        number += 1
        if not blank:
            yield number, bytes(held) if kept else LongLine(size - len(_BOM) if head == _BOM else size)


def decoded(line: bytes | LongLine) -> str | bytes | LongLine:
    """A line as its text, or as it is when it is not UTF-8 (``parse_event`` rejects it so, naming the body)."""
    if isinstance(line, LongLine):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line
