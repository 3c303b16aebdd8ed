"""The event contract's plain rules: type aliases, bounds, the date window and W3C dates.

Kept apart from the pydantic models (``core.events``, which uses them) so that the build's fast path checks
events by the same rules without importing pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Literal

from sitemap_updater.core.moments import to_micros

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
MAX_BODY_BYTES = 262_144  # an event's bytes at most (SQS's message limit until 2025, now 1 MiB)


def oversized_body(size: int) -> str:
    """Why a body of ``size`` bytes (over MAX_BODY_BYTES) is rejected; its field is ``(body)``."""
    return f"{size:,} bytes; an event may be at most {MAX_BODY_BYTES:,} bytes"


MAX_INT_DIGITS = 4_300  # Python's own limit for reading an integer from text
MAX_SECTION_CHARS = 100
ChangeFreq = Literal["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]
# Every instant is stored as microseconds since 1970 and written as a UTC date: the window both can hold.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LAST = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
_LAST_US = 253_402_300_799_999_999  # _LAST in microseconds since 1970
WINDOW_TEXT = "from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z (UTC)"
# How far past now an event's occurred_at and lastmod may be: clocks differ by a few minutes (verify allows a
# published lastmod as much). The stack's EVENT_CLOCK_SKEW_SECONDS setting; build and local take this default.
FUTURE_SKEW_SECONDS = 300
# A date (no time) is in the future only where it has not begun anywhere yet: it begins first at UTC+14.
_FIRST_ZONE = timezone(timedelta(hours=14))
# occurred_at of a state whose time is unknown (adoption's, for a page its sitemap gave no lastmod or one in the
# future): it ranks below every other event, so its lastmod is kept as the source gave it.
UNKNOWN_TIME = _EPOCH


@dataclass(frozen=True, slots=True)
class Horizon:
    """The latest moment an event may name: now plus ``skew_s`` for clocks that differ.

    A later ``occurred_at`` would outrank every real change to its page until that moment (a delete made today
    would be stale, and the page pinned); a later ``lastmod`` would be published as a change that has not happened,
    which a sitemap must not show (Google reads lastmod as the page's last significant change; ``verify`` reports
    one in the future). ``now_us`` is microseconds since 1970: ``build``'s ``--as-of``, a pipeline's clock, a
    webhook's arrival."""

    now_us: int
    skew_s: int = FUTURE_SKEW_SECONDS
    _limit: datetime = field(init=False, repr=False, compare=False)
    _last_day: date = field(init=False, repr=False, compare=False)  # the latest date begun somewhere by the limit

    def __post_init__(self) -> None:
        limit = _EPOCH + timedelta(microseconds=min(self.limit_us, _LAST_US))
        try:
            last_day = limit.astimezone(_FIRST_ZONE).date()
        except OverflowError:  # past 9999-12-31 at UTC+14: every date has begun
            last_day = date.max
        object.__setattr__(self, "_limit", limit)
        object.__setattr__(self, "_last_day", last_day)

    @classmethod
    def at(cls, now: datetime, skew_s: int = FUTURE_SKEW_SECONDS) -> Horizon:
        return cls(to_micros(now), skew_s)

    @property
    def limit_us(self) -> int:
        return self.now_us + self.skew_s * 1_000_000

    def passes(self, value: date | datetime) -> bool:
        """True when ``value`` (an aware date-time, or a date) lies past the limit. Aware date-times compare as in
        UTC without being converted, so no value overflows at the ends of the calendar."""
        if isinstance(value, datetime):
            return value > self._limit
        return value > self._last_day

    def reason(self, value: date | datetime) -> str:
        """Why ``value`` (past the limit) is rejected: it, now, and the skew allowed."""
        now = (_EPOCH + timedelta(microseconds=self.now_us)).isoformat(timespec="seconds").replace("+00:00", "Z")
        if isinstance(value, datetime):
            return f"{value.isoformat()} is in the future: at most {self.skew_s:,} s past now ({now}) is accepted"
        return f"{value.isoformat()} is in the future: it has not begun anywhere yet (UTC+14) at {now}"


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
