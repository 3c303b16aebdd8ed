"""Webhook secrets: read again after their TTL (a rotation without a redeploy), stale rather than down."""

from __future__ import annotations

import pytest

from sitemap_updater.adapters.secrets import CachedSecrets
from sitemap_updater.ports import SecretsUnavailable


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_secrets_are_read_again_after_their_ttl_and_a_failed_read_keeps_the_last_value() -> None:
    values = ['{"ghost": "one"}', '{"ghost": ["one", "two"]}']
    reads: list[int] = []

    def read() -> str:
        reads.append(1)
        if len(reads) == 3:
            raise ConnectionError("secrets manager unreachable")
        return values[min(len(reads), 2) - 1]

    clock = Clock()
    clock.now = 1_000.0  # a monotonic clock starts anywhere
    cache = CachedSecrets(read, ttl_s=300, clock=clock)
    assert cache.secrets("ghost") == ("one",)
    clock.now = 1_299
    assert cache.secrets("ghost") == ("one",) and len(reads) == 1
    clock.now = 1_300
    assert cache.secrets("ghost") == ("one", "two")
    clock.now = 1_600
    assert cache.secrets("ghost") == ("one", "two") and cache.last_error  # stale but serving
    assert cache.secrets("sanity") == ()


def test_a_mismatch_reads_again_at_most_once_per_interval_and_no_secret_at_all_is_unavailable() -> None:
    reads: list[int] = []

    def read() -> str:
        reads.append(1)
        return "{}"

    clock = Clock()
    clock.now = 1_000.0
    cache = CachedSecrets(read, ttl_s=300, min_refresh_s=10, clock=clock)
    cache.secrets("ghost")
    clock.now = 1_009
    assert not cache.refresh()
    clock.now = 1_010
    assert cache.refresh() and len(reads) == 2

    def fail() -> str:
        raise ConnectionError("down")

    with pytest.raises(SecretsUnavailable):
        CachedSecrets(fail).secrets("ghost")
