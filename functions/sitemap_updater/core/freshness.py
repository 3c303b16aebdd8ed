"""The freshness setting: how long after an event is accepted the CDN may still serve the file without it.

A section's freshness ``F`` (``FreshnessSeconds``, or its ``SectionFreshness`` override) is spent on the ingest
event source's batching window, the ingest and rebuild invocations, the rebuild's wait and the CDN's cache
lifetime after the put. So the wait is what is left, its *hold*: a rebuild starts at the latest when its oldest
change, as ingest recorded it, is ``hold`` seconds old:

    hold = F - ingest window - cdn_max_age - INVOCATION_ALLOWANCE_SECONDS

A section rebuilt less than ``hold`` ago waits until that rebuild's start plus ``hold`` (so a busy section is
rebuilt about once per hold, each file once for every change of that time); a quiet section rebuilds a lone
change at once and waits only for the rest of a burst (:data:`BURST_SETTLE_SECONDS`). A change to a page that
carries a Google News item is never held past the news hold (:data:`NEWS_FRESHNESS_SECONDS`), whatever its
section's setting. Pure: the rebuild's batch use case (``service/batches.py``) applies it."""

from __future__ import annotations

from collections.abc import Mapping

from sitemap_updater.core.urls import EVERY_SEGMENT, parse_sections

# The ingest event source's MaximumBatchingWindowInSeconds by default (IngestWindowSeconds in template.yaml, which
# also gives it to the functions as INGEST_WINDOW_SECONDS; a test holds the defaults equal). At most SQS's 300 s.
INGEST_WINDOW_SECONDS = 5
MAX_INGEST_WINDOW_SECONDS = 300
# What the ingest and rebuild invocations and the receives between them may take of the budget: measured at
# 0.3-3 s for a rebuild of up to 16 files of 10,000 URLs (docs/benchmarks.md), so 10 s leaves a margin.
INVOCATION_ALLOWANCE_SECONDS = 10
# A change to a page with a news item (news:news) is on the CDN within this, whatever its section's setting:
# Google asks for a news sitemap updated "as articles are published", and a news section is expected within
# a minute.
NEWS_FRESHNESS_SECONDS = 60
# A burst in a quiet section (a first rebuild request naming this many changed pages, or from an ingest batch
# that recorded as many) waits this long for the rest of itself, at most its hold: 9 s kept a 1,000-event
# burst's files written once each (docs/benchmarks.md).
BURST_PAGES = 10
BURST_SETTLE_SECONDS = 9
# The largest setting: a wait is a ChangeMessageVisibility on the rebuild queue, which SQS allows up to 12 hours
# from the receive; an hour leaves that far and keeps a changed page within an hour of its event.
MAX_FRESHNESS_SECONDS = 3600


class FreshnessError(ValueError):
    """A freshness setting that cannot be honoured or read; the message says which and why."""


def floor_seconds(cdn_max_age: int, window: int = INGEST_WINDOW_SECONDS) -> int:
    """The smallest freshness that can be honoured with this CDN cache lifetime and ingest batching window (its
    hold is 0)."""
    return window + cdn_max_age + INVOCATION_ALLOWANCE_SECONDS


def hold_seconds(freshness: int, cdn_max_age: int, window: int = INGEST_WINDOW_SECONDS) -> int:
    """How old a section's oldest change may get before its rebuild starts (0: freshness off, rebuild at once)."""
    return max(0, freshness - floor_seconds(cdn_max_age, window)) if freshness else 0


def check_freshness(
    freshness: int, cdn_max_age: int, name: str = "FreshnessSeconds", window: int = INGEST_WINDOW_SECONDS
) -> None:
    """Refuse a freshness that is neither 0 (off) nor between the floor and :data:`MAX_FRESHNESS_SECONDS`."""
    floor = floor_seconds(cdn_max_age, window)
    if freshness and not floor <= freshness <= MAX_FRESHNESS_SECONDS:
        raise FreshnessError(
            f"{name} {freshness}: must be 0 (publish every change at once) or {floor} to {MAX_FRESHNESS_SECONDS} s "
            f"(the ingest window {window} s, the CDN lifetime {cdn_max_age} s and "
            f"{INVOCATION_ALLOWANCE_SECONDS} s for the functions' runs come first)"
        )


def parse_section_freshness(text: str) -> dict[str, int]:
    """The ``SectionFreshness`` setting: ``section=seconds`` pairs, comma-separated (``news=30,products=900``;
    ``root`` is the pages of no listed section). Raises FreshnessError naming the pair that is wrong."""
    found: dict[str, int] = {}
    for pair in (p.strip() for p in text.split(",") if p.strip()):
        section, sep, seconds = (part.strip() for part in pair.partition("="))
        if not sep or not seconds.isdigit() or section == EVERY_SEGMENT:
            raise FreshnessError(f"SectionFreshness {pair!r}: expected section=seconds, such as news=30")
        try:
            parse_sections(section)
        except ValueError as exc:
            raise FreshnessError(f"SectionFreshness {pair!r}: {exc}") from None
        if section in found:
            raise FreshnessError(f"SectionFreshness names {section!r} twice")
        found[section] = int(seconds)
    return found


def section_freshness(section: str, default: int, overrides: Mapping[str, int]) -> int:
    return overrides.get(section, default)


def section_hold(freshness: int, cdn_max_age: int, news: bool, window: int = INGEST_WINDOW_SECONDS) -> int:
    """The hold of a rebuild request: its section's, or the news hold when it names a page with a news item (the
    ingest window counted as it is, but at most what the news freshness leaves room for)."""
    hold = hold_seconds(freshness, cdn_max_age, window)
    if news:
        hold = min(hold, hold_seconds(NEWS_FRESHNESS_SECONDS, cdn_max_age, window))
    return hold


def index_wait_seconds(freshness: int, cdn_max_age: int, news: bool) -> int:
    """How long after a section rebuild's puts its index request may wait when it only moves the lastmods of
    files the index already names (0: at once): the section's freshness (the news freshness for a page with a
    news item) less what the index still needs, the index queue's delay and the index's own cache lifetime (each
    ``cdn_max_age``) and :data:`INVOCATION_ALLOWANCE_SECONDS` for the index rebuild. So the index names a file's
    new lastmod at most the section's freshness after the file's bytes were published (and the bytes themselves
    are on the CDN within the freshness of the event). A request that adds or removes a file never waits."""
    if not freshness:
        return 0
    if news:
        freshness = min(freshness, NEWS_FRESHNESS_SECONDS)
    return max(0, freshness - 2 * cdn_max_age - INVOCATION_ALLOWANCE_SECONDS)


def ready_at_us(oldest_us: int, now_us: int, began_us: int | None, hold: int, burst: bool) -> int:
    """When a section's rebuild should start (``now_us`` or earlier: at once), given its oldest waiting change,
    when its latest rebuild began (None: never) and its hold. Never later than the oldest change plus the hold.

    - busy (its latest rebuild began less than ``hold`` ago): that start plus the hold, so the section is rebuilt
      about once per hold whatever the rate;
    - quiet, a burst: the oldest change plus :data:`BURST_SETTLE_SECONDS` (at most the hold), for the rest of it;
    - quiet, a lone change: now (a wait would save no rewrite: no rebuild of its section is due to follow)."""
    hold_us = hold * 1_000_000
    if not hold_us:
        return now_us
    if began_us is not None and now_us - began_us < hold_us:
        return min(began_us + hold_us, oldest_us + hold_us)
    if burst:
        return oldest_us + min(BURST_SETTLE_SECONDS, hold) * 1_000_000
    return now_us
