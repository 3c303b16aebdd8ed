"""Backoff with jitter for the retries the SDK leaves to the caller (unprocessed batch items): botocore's own
standard-mode backoff (truncated binary exponential with full jitter) and a bounded number of attempts. ``sleep``
and ``rand`` are injectable, so tests never wait."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.retries.standard import ExponentialBackoff, RetryContext, ThrottlingErrorDetector


class _Throttled(ThrottlingErrorDetector):
    """Tells botocore's backoff to use its throttling base (1 s) rather than its error base (25-50 ms)."""

    def __init__(self) -> None:  # no event adapter: every error it is asked about is a throttle
        pass

    def is_throttling_error_from_context(self, _context: Any) -> bool:
        return True


@dataclass
class Backoff:
    """``pause(n)`` waits before attempt ``n + 1``; ``attempts`` bounds the tries (the first one included). The
    items were refused for capacity, so it backs off from 1 s, as the SDK does for a throttling error."""

    attempts: int = 6
    max_backoff_s: int = 4
    sleep: Callable[[float], None] = time.sleep
    rand: Callable[[], float] = random.random
    _delays: ExponentialBackoff = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._delays = ExponentialBackoff(
            max_backoff=self.max_backoff_s,
            random=self.rand,
            service_name="dynamodb",
            throttling_detector=_Throttled(),
        )

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        return float(self._delays.delay_amount(RetryContext(attempt_number=attempt)))

    def pause(self, attempt: int) -> None:
        self.sleep(self.delay(attempt))
