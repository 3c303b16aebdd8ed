"""The build's byte ranges of an export (``service/build_input.py``): the file's lines, as ``bytes.splitlines`` splits
them, each in one range; a line too long to be an event set apart with its size, never read whole."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_updater.core.event_rules import MAX_BODY_BYTES
from sitemap_updater.service import build_input
from sitemap_updater.service.build_input import LONG_LINE, ranges

PIECES = [b"a", b"bb", b"x" * 9, b"\n", b"\r", b"\r\n", b"\n\n", b"\xef\xbb\xbf", b"{}"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=60),
    target=st.integers(1, 40),
    long_line=st.integers(4, 30),
    scan=st.integers(1, 8),
)
def test_ranges_hold_the_files_lines_and_set_apart_each_line_too_long(
    tmp_path: Path, pieces: list[bytes], target: int, long_line: int, scan: int
) -> None:
    # Given any file of lines ending in \n, \r\n or \r (byte order marks too), read in blocks of a few bytes
    data = b"".join(pieces)
    path = tmp_path / "export.jsonl"
    path.write_bytes(data)
    blocks = build_input._SCAN_BYTES, build_input._FIRST_SCAN
    build_input._SCAN_BYTES = build_input._FIRST_SCAN = scan
    try:
        found = list(ranges(path, target, long_line))
    finally:
        build_input._SCAN_BYTES, build_input._FIRST_SCAN = blocks
    # Then the ranges cover the file in order, none empty, and their lines are the file's lines
    assert [r.start for r in found] == [0, *[r.end for r in found[:-1]]][: len(found)]
    assert all(r.end > r.start for r in found)
    assert (found[-1].end if found else 0) == len(data)
    lines: list[bytes] = []
    for start, end, oversized in found:
        part = data[start:end].splitlines()
        if oversized is not None:
            # a range set apart is one line, longer than long_line less a byte order mark, sized as parse_event sizes it
            assert len(part) == 1
            assert oversized == len(part[0].removeprefix(b"\xef\xbb\xbf")) > long_line - 4
        else:
            assert end - start <= target + long_line + 1
        lines += part
    assert lines == data.splitlines()


def test_a_line_of_16_mib_is_set_apart_without_being_read_whole(tmp_path: Path) -> None:
    # Given a line 64 times the largest event between two short ones
    path = tmp_path / "export.jsonl"
    with path.open("wb") as out:
        out.write(b"{}\r\n\xef\xbb\xbf" + b"x" * (16 << 20) + b"\r\n{}\n")
    # When it is cut into ranges of 4 MiB
    tracemalloc.start()
    try:
        found = list(ranges(path, 4 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Then the long line is a range of its own with its size, and no more than a few blocks were held at once
    assert [(r.start, r.end, r.oversized) for r in found] == [(0, 4, None), (4, 7 + (16 << 20) + 2, 16 << 20), (
        9 + (16 << 20), 12 + (16 << 20), None)]  # fmt: skip
    assert peak < 3 << 20
    assert LONG_LINE > MAX_BODY_BYTES + 3  # a line set apart is over the limit, byte order mark or not


@pytest.mark.parametrize(("size", "apart"), [(MAX_BODY_BYTES, False), (MAX_BODY_BYTES + 1, True)])
def test_a_line_is_set_apart_only_past_the_largest_event_byte_order_mark_aside(
    tmp_path: Path, size: int, apart: bool
) -> None:
    # Given a line starting where a range would be cut, behind a byte order mark (which parse_event takes off)
    path = tmp_path / "export.jsonl"
    path.write_bytes(b"a" * 99 + b"\n" + b"\xef\xbb\xbf" + b"x" * size + b"\n{}\n")
    # When the file is cut into ranges of 100 bytes
    found = list(ranges(path, 100))
    # Then a line of the largest size an event may have is read as any other, and one a byte longer is set apart
    assert [r.oversized for r in found if r.oversized is not None] == ([size] if apart else [])
    assert found[-1].end == path.stat().st_size


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a\r" + b"b" * 50 + b"\n", [(0, 2), (2, 53)]),  # a lone \r right at the cut ends the range there
        (b"a\n" + b"b" * 50 + b"\r\n", [(0, 2), (2, 54)]),  # so does a \n, though a \r comes later in the block
        (b"a\r\n" + b"b" * 50 + b"\r", [(0, 3), (3, 54)]),  # a \r\n is one break
    ],
)
def test_a_range_ends_at_the_first_line_break_after_its_cut(tmp_path: Path, data: bytes, expected: list[Any]) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(data)
    assert [(r.start, r.end) for r in ranges(path, 1)] == expected
