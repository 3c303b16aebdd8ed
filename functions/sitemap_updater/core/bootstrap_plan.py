"""How a bootstrap splits a site into ranges that separate workers render, and each range into files.

A section's files are the nodes of one binary key tree that a full build would pick (``plan_with``): a node
becomes a file once it fits the limits. A worker that holds only one node of that tree (a *range*) can make the
same choice for the files inside it whenever the range itself does not fit, because then neither does any node
above it: the build splits every one of them. So a section is cut into ranges expected to hold
``RANGE_FACTOR`` to twice that many files' worth of URLs (keys are uniform hashes, so a range of 40,000 expected
URLs never holds fewer than 10,000 in practice); a range that fits after all (a section mostly deleted) becomes
one file, within the limits but perhaps smaller than a build would make it, and a later rebuild merges it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import accumulate

from sitemap_updater.core.sharding import KEY_SPACE, KeyRange, Limits, plan_with

RANGE_FACTOR = 4  # a range is cut to hold at least this many full files' worth of URLs (expected)
MAX_RANGE_DEPTH = 24  # 16.7M ranges a section at most: far beyond Step Functions' item limits anyway


def range_depth(urls: int, limits: Limits) -> int:
    """How many times a section of about ``urls`` URLs is halved into ranges (0: one range, the whole section)."""
    depth = 0
    while depth < MAX_RANGE_DEPTH and urls >> (depth + 1) >= RANGE_FACTOR * limits.max_urls:
        depth += 1
    return depth


def render_ranges(counts: Mapping[str, int], limits: Limits) -> list[tuple[str, KeyRange]]:
    """Every range to render: for each section of ``counts`` (its live URLs; an estimate from above cuts ranges
    no smaller than they should be; a section of deletes alone, 0, is one range), its key space cut at
    ``range_depth``."""
    ranges: list[tuple[str, KeyRange]] = []
    for section in sorted(counts):
        depth = range_depth(max(0, counts[section]), limits)
        width = KEY_SPACE >> depth
        ranges += [(section, KeyRange(i * width, (i + 1) * width, depth)) for i in range(1 << depth)]
    return ranges


def plan_in_range(
    keys: Sequence[int], sizes: Sequence[int], within: KeyRange, limits: Limits, overhead: int
) -> list[KeyRange]:
    """The files of ``within`` from the sorted keys and rendered sizes of its live entries: the full build's
    choice when ``within`` does not fit one file, else ``within`` itself (see the module's note)."""
    prefix = [0, *accumulate(sizes)]

    def stats(start: int, end: int) -> tuple[int, int]:
        if end <= within.start or within.end <= start:
            return 0, 0  # another worker's
        if start <= within.start and within.end <= end and (start, end) != (within.start, within.end):
            return limits.max_urls + 1, 0  # above the range: split, as the build does for a node this large
        lo, hi = bisect_left(keys, start), bisect_left(keys, end)
        return hi - lo, prefix[hi] - prefix[lo]

    return plan_with(stats, limits, overhead)
