"""Reading an export as a stream (``core.lines``, what ``import`` and ``local`` read): the lines and numbers
``build`` gives (``bytes.splitlines``, blank lines counted and skipped) whatever the chunks, and a bound on what one
line holds in memory."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Iterator

import pytest

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import body_too_large, parse_event
from sitemap_updater.core.lines import LongLine, decoded, export_lines
from sitemap_updater.core.urls import Site
from tests.conftest import BASE, HORIZON

_PIECES = [b"{}", b'{"a": "x\xe2\x80\xa8y"}', b"\r", b"\n", b"\r\n", b" ", b"\t", b"\x0b", b"\xff", b"\xef\xbb\xbf"]


def _chunked(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def _as_build_reads(data: bytes) -> list[tuple[int, bytes]]:
    """The oracle: build splits with bytes.splitlines, numbers every line and skips those bytes.strip empties."""
    return [(number, line) for number, line in enumerate(data.splitlines(), start=1) if line.strip()]


def test_lines_and_their_numbers_are_build_s_whatever_the_chunks() -> None:
    rng = random.Random(29)
    for _ in range(200):
        data = b"".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 30)))
        for size in (1, 2, 3, 7, len(data) or 1):
            assert list(export_lines(_chunked(data, size), keep=1 << 20)) == _as_build_reads(data), (data, size)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_line_past_the_bound_is_kept_only_as_its_size(bom: bytes) -> None:
    # Given lines of exactly the bound and one byte more (a byte order mark counts as the line's, not the event's)
    keep = 64
    at, past = bom + b"x" * (keep - len(bom)), bom + b"y" * (keep + 1 - len(bom))
    data = at + b"\n" + past + b"\r\n" + b"z"
    for size in (1, 5, len(data)):
        # Then the first is read, the second is its size without the mark, and the lines after it are read
        assert list(export_lines(_chunked(data, size), keep)) == [
            (1, at),
            (2, LongLine(keep + 1 - len(bom))),
            (3, b"z"),
        ]
    # And a line of white space past the bound is blank, as build skips it
    assert list(export_lines([b" " * (keep + 1), b"\n{}"], keep)) == [(2, b"{}")]


def test_a_long_line_s_rejection_is_parse_event_s_for_the_same_bytes() -> None:
    site = Site.parse(BASE, sections=None)
    for line in (b"x" * 262_145, b"\xef\xbb\xbf" + b" " * 262_145):
        [(_, long)] = export_lines([line], keep=1_000)
        assert isinstance(long, LongLine)
        with pytest.raises(EventRejected) as parsed:
            parse_event(line, site, HORIZON)
        assert str(body_too_large(long.size)) == str(parsed.value)


def test_a_line_of_4_mb_is_counted_without_being_held() -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"url": "a"}\n'
        for _ in range(64):
            yield b"x" * 65_536  # 4 MiB on one line
        yield b"\n{}\n"

    tracemalloc.start()
    try:
        found = list(export_lines(chunks(), keep=1 << 18))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == [(1, b'{"url": "a"}'), (2, LongLine(4 * 1024 * 1024)), (3, b"{}")]
    assert peak < 1 << 20  # the bound (256 KiB) and a chunk or two, not the 4 MiB line


def test_a_line_that_is_not_utf8_stays_bytes_for_parse_event_to_reject_alone() -> None:
    assert decoded(b'{"a": "\xc3\xa9"}') == '{"a": "\u00e9"}'
    assert decoded(b'{"a": "\xff"}') == b'{"a": "\xff"}'
    with pytest.raises(EventRejected, match=r"\(body\): not valid UTF-8"):
        parse_event(b'{"a": "\xff"}', Site.parse(BASE, sections=None), HORIZON)
