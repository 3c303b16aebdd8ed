"""The event contract's plain rules: type aliases, bounds, the date window and W3C dates.

Kept apart from the pydantic models (``core.events``, which uses them) so that the build's fast path checks
events by the same rules without importing pydantic.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Literal

TYPE_ALIASES = {
    "upsert": "upsert",
    "publish": "upsert",
    "update": "upsert",
    "delete": "delete",
    "unpublish": "delete",
    "archive": "delete",
}
MAX_IMAGES = 1000
MAX_VIDEOS = 100
MAX_ALTERNATES = 1000
MAX_VERSION = 10**18
MAX_BODY_BYTES = 262_144  # SQS's message limit: a larger body cannot have come through the queue
MAX_INT_DIGITS = 4_300  # Python's own limit for reading an integer from text
MAX_SECTION_CHARS = 100
ChangeFreq = Literal["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]
# Every instant is stored as microseconds since 1970 and written as a UTC date: the window both can hold.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LAST = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
WINDOW_TEXT = "from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z (UTC)"


def in_window(value: date | datetime) -> bool:
    """True when ``value`` (a date, or an aware date-time) lies in the window; compared without converting
    to UTC, which overflows at the ends of the calendar (``9999-12-31T23:00-05:00``)."""
    if isinstance(value, datetime):
        return timedelta(0) <= value - _EPOCH <= _LAST - _EPOCH
    return value.year >= 1970


def w3c_datetime(value: object) -> object:
    """Accept a date (``2026-11-20``) or a date-time with a UTC offset, within the window; reject a naive
    date-time."""
    text: str | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("must be a W3C date or date-time string, not a number")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"{text!r} is not a W3C date (YYYY-MM-DD) or date-time with offset") from exc
        if isinstance(value, datetime) and value.tzinfo is None:
            raise ValueError(f"{text!r} has no UTC offset; add Z or +hh:mm")
    if isinstance(value, datetime) and value.tzinfo is None:
        raise ValueError("a date-time needs a UTC offset")
    if isinstance(value, date) and not in_window(value):
        shown = text if isinstance(text, str) else str(value)
        raise ValueError(f"{shown!r} is out of range: dates must be {WINDOW_TEXT}")
    return value


def parse_w3c(text: str) -> date | datetime:
    """Parse a W3C date or date-time with offset, as written in sitemaps."""
    value = w3c_datetime(text)
    assert isinstance(value, date)
    return value
