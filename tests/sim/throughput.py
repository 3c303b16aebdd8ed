"""DynamoDB's throughput limits on an on-demand table, as the bench meter (``bench/meter.py``) and the simulation's
client (``tests/sim/dynamo.py``) apply them, per virtual second (looked up on 2026-11-26, docs/architecture.md,
"Partitions and throughput"):

- one partition serves at most 1,000 write units and 3,000 read units a second; a partition key's items are in one
  partition until DynamoDB splits it for heat (minutes later, and never below one item), so these are the limits of
  one partition key here. On-demand tables have no documented burst above them: none is modelled;
- a new on-demand table serves 4,000 write and 12,000 read units a second at once, and up to twice its previous peak;
  past that, throttling until its capacity has grown (up to 30 minutes). Here: a second's limit is the larger of the
  initial value and twice the busiest second at least 30 minutes before it.

A request over a limit is throttled (``ProvisionedThroughputExceededException``); botocore's standard retry mode
sends it again after a full-jitter backoff (up to 1, 2, 4 s: 0.5, 1 and 2 s on average, used here), four attempts
in all (``wiring/pipeline.py`` CLIENT_CONFIG), then raises it to the caller. Seconds are fixed one-second windows,
so the accounting does not depend on the order in which the calls of overlapping invocations are counted."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

PARTITION_UNITS = {"read": 3_000.0, "write": 1_000.0}
TABLE_INITIAL_UNITS = {"read": 12_000.0, "write": 4_000.0}
PEAK_WINDOW_S = 1_800
RETRY_WAITS_S = (0.5, 1.0, 2.0)  # botocore standard mode, 4 attempts: the mean of each full-jitter backoff


def spread(pk: str) -> bool:
    """Keys of one item per URL (a page's state, what a search engine accepted): no one of them is ever hot."""
    return pk.startswith(("page#", "sent#"))


@dataclass
class Throughput:
    """Units consumed per partition key and per table, second by second; what was throttled."""

    partition_units: dict[str, float] = field(default_factory=lambda: dict(PARTITION_UNITS))
    table_initial: dict[str, float] = field(default_factory=lambda: dict(TABLE_INITIAL_UNITS))
    used: defaultdict[tuple[str, int, str], float] = field(default_factory=lambda: defaultdict(float))
    table: defaultdict[tuple[int, str], float] = field(default_factory=lambda: defaultdict(float))  # (second, kind)
    throttled: Counter[str] = field(default_factory=Counter)  # "partition" / "table" -> throttled attempts
    failed: int = 0  # requests still throttled after botocore's last attempt
    _limits: dict[tuple[int, str], float] = field(default_factory=dict)

    def table_limit(self, second: int, kind: str) -> float:
        """The doubling rule: twice the busiest second at least ``PEAK_WINDOW_S`` before, at least the initial
        (worked out once per second: the seconds it looks at are half an hour past)."""
        limit = self._limits.get((second, kind))
        if limit is None:
            before = [units for (s, k), units in self.table.items() if k == kind and s <= second - PEAK_WINDOW_S]
            limit = self._limits[(second, kind)] = max(self.table_initial[kind], 2 * max(before, default=0.0))
        return limit

    def take(self, pk: str, kind: str, units: float, at_s: float) -> str:
        """Consume ``units`` of ``kind`` ("read"/"write") on ``pk`` in the second of ``at_s``; "" when served,
        else what throttled it ("partition" or "table"), and nothing is consumed."""
        second = math.floor(at_s)
        if not spread(pk) and self.used[(pk, second, kind)] + units > self.partition_units[kind]:
            return "partition"
        if self.table[(second, kind)] + units > self.table_limit(second, kind):
            return "table"
        if not spread(pk):
            self.used[(pk, second, kind)] += units
        self.table[(second, kind)] += units
        return ""

    def request(self, pk: str, kind: str, units: float, at_s: float) -> tuple[float, bool]:
        """One request as botocore makes it: up to four attempts with backoffs between them. Returns the seconds
        spent waiting on retries and whether an attempt was served (False: the caller gets the exception)."""
        waited = 0.0
        for attempt in range(len(RETRY_WAITS_S) + 1):
            limit = self.take(pk, kind, units, at_s + waited)
            if not limit:
                return waited, True
            self.throttled[limit] += 1
            if attempt < len(RETRY_WAITS_S):
                waited += RETRY_WAITS_S[attempt]
        self.failed += 1
        return waited, False

    def busiest(self, kind: str, top: int = 3) -> list[tuple[str, float]]:
        """The partition keys with the most units of ``kind`` in one second, and that second's units."""
        peaks: dict[str, float] = {}
        for (pk, _second, k), units in self.used.items():
            if k == kind:
                peaks[pk] = max(peaks.get(pk, 0.0), units)
        return sorted(peaks.items(), key=lambda item: -item[1])[:top]
