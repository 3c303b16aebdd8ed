"""The export's byte ranges for the build's parse tasks, found with bounded memory whatever the lines' lengths.

Each range is about a chunk of whole lines (a line ends at \\n, \\r\\n or a lone \\r, as ``bytes.splitlines`` splits
them, so the ranges' lines are the file's). A line too long to be an event is a range of its own, marked with its
size, that no task reads: a 2 GB line costs a scan for its end in blocks of a megabyte, not 2 GB of memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from sitemap_updater.core.event_rules import MAX_BODY_BYTES

_SCAN_BYTES = 1 << 20  # read at a time while looking for a line's end or start
_FIRST_SCAN = 1 << 16  # read first (then twice as much each time, up to _SCAN_BYTES)
_BOM = b"\xef\xbb\xbf"
# A line with no break within this many bytes of a point in it holds more than MAX_BODY_BYTES, even once a byte
# order mark (which parse_event does not count) is taken off.
LONG_LINE = MAX_BODY_BYTES + len(_BOM) + 1


class Range(NamedTuple):
    start: int
    end: int
    oversized: int | None  # a line of its own too long to be an event: its size as parse_event counts it


def ranges(path: Path, target: int, long_line: int = LONG_LINE) -> Iterator[Range]:
    """Ranges of about ``target`` bytes that start and end on line boundaries; where the line a range would end in
    has no break within ``long_line`` bytes, that line alone, marked, and the lines before it as a range."""
    size = path.stat().st_size
    start = 0
    with path.open("rb") as handle:
        while start < size:
            cut = start + target
            end = _line_end(handle, cut, size, long_line)  # the file's end, where the cut is at or past it
            if end is not None:
                yield Range(start, end, None)
                start = end
                continue
            first = _line_start(handle, start, cut)
            if first > start:
                yield Range(start, first, None)
            end = _line_end(handle, cut + long_line, size, None)
            assert end is not None
            yield Range(first, end, _body_size(handle, first, end))
            start = end


def _line_end(handle: BinaryIO, at: int, size: int, within: int | None) -> int | None:
    """Where the line holding byte ``at`` ends, after its break (``size`` at the end of the file); None when no
    break lies within ``within`` bytes from ``at``."""
    pos = at
    stop = size if within is None else min(size, at + within)
    while pos < stop:
        handle.seek(pos)
        block = handle.read(min(_SCAN_BYTES, max(_FIRST_SCAN, pos - at), stop - pos))  # a line's end is near, mostly
        found = _first_break(block)
        if found >= 0:
            end = pos + found + 1
            if block[found] == 0x0D:  # \r: with a \n after it, one break
                handle.seek(end)
                if handle.read(1) == b"\n":
                    end += 1
            return end
        pos += len(block)
    return size if stop == size else None


def _first_break(block: bytes) -> int:
    """The index of the first \\n or \\r in ``block``, or -1 (two memchr scans: a regular expression's class took
    25 s over a 1 GB line)."""
    newline = block.find(b"\n")
    carriage = block.find(b"\r", 0, newline if newline >= 0 else len(block))
    return carriage if carriage >= 0 else newline


def _line_start(handle: BinaryIO, start: int, at: int) -> int:
    """Where the line holding byte ``at`` starts, reading back no further than ``start`` (a line start)."""
    pos = at
    while pos > start:
        low = max(start, pos - _SCAN_BYTES)
        handle.seek(low)
        block = handle.read(pos - low)
        last = max(block.rfind(b"\n"), block.rfind(b"\r"))
        if last >= 0:
            return low + last + 1
        pos = low
    return start


def _body_size(handle: BinaryIO, start: int, end: int) -> int:
    """The size of the line in ``[start, end)`` as ``parse_event`` counts it: no break, no byte order mark."""
    handle.seek(max(start, end - 2))
    tail = handle.read(end - max(start, end - 2))
    handle.seek(start)
    head = handle.read(len(_BOM))
    size = end - start - (2 if tail.endswith(b"\r\n") else 1 if tail[-1:] in (b"\n", b"\r") else 0)
    return size - (len(_BOM) if head == _BOM else 0)
