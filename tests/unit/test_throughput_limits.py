"""DynamoDB's throughput limits as the simulation and the bench meter apply them (``tests/sim/throughput.py``):
both sides of each limit, the on-demand table's doubling, botocore's attempts; and the simulation's client, which
answers a write throttled on every attempt with the error botocore raises, in virtual time."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.core.pages import PageWrite
from tests.conftest import BASE
from tests.sim.throughput import PEAK_WINDOW_S, RETRY_WAITS_S, Throughput
from tests.sim.world import Config, Simulation


def test_one_partition_key_takes_1000_write_and_3000_read_units_a_second() -> None:
    limits = Throughput()
    assert limits.take("sec#root", "write", 1_000, 10.0) == ""
    assert limits.take("sec#root", "write", 1, 10.9) == "partition"  # the same second: over the key's limit
    assert limits.take("sec#root#01", "write", 1, 10.9) == ""  # another key of the same section is not
    assert limits.take("sec#root", "write", 1_000, 11.0) == ""  # the next second
    assert limits.take("sec#root", "read", 3_000, 11.0) == ""  # reads have their own limit
    assert limits.take("sec#root", "read", 0.5, 11.5) == "partition"
    assert limits.take("page#https://www.example.com/a", "write", 900, 12.0) == ""  # one item per URL: no key limit
    assert limits.take("page#https://www.example.com/a", "write", 900, 12.0) == ""


def test_a_new_table_takes_4000_write_units_a_second_and_twice_its_peak_half_an_hour_later() -> None:
    limits = Throughput()
    for n in range(4):
        assert limits.take(f"sec#s{n}", "write", 1_000, 100.0) == ""
    assert limits.take("sec#s4", "write", 1, 100.0) == "table"
    assert limits.table_limit(100 + PEAK_WINDOW_S - 1, "write") == 4_000  # not yet: the peak is under 30 min old
    assert limits.table_limit(100 + PEAK_WINDOW_S, "write") == 8_000
    assert limits.table_limit(100, "read") == 12_000


def test_a_throttled_request_is_tried_four_times_with_botocore_s_backoffs() -> None:
    limits = Throughput(partition_units={"read": 3_000.0, "write": 1.0})
    assert limits.request("sec#a", "write", 1, 0.0) == (0.0, True)
    assert limits.request("sec#a", "write", 1, 0.2) == (RETRY_WAITS_S[0] + RETRY_WAITS_S[1], True)  # at 1.7 s
    assert limits.throttled["partition"] == 2
    assert limits.request("sec#b", "write", 2, 0.0) == (sum(RETRY_WAITS_S), False)  # never fits: the error
    assert limits.failed == 1 and limits.throttled["partition"] == 6


def test_the_adapter_gets_the_client_s_throttling_error_after_four_attempts_in_virtual_time() -> None:
    # Given the simulation's DynamoDB taking 1 write unit a second on a key, which other writers fill for 4 s
    simulation = Simulation(Config(3))
    store = simulation.store
    store.throughput = limits = Throughput(partition_units={"read": 3_000.0, "write": 1.0})
    second = _write(2)
    started = simulation.clock.now
    for ahead in range(4):
        assert limits.take("sec#blog", "write", 1, started + ahead) == ""
    # When an entry of the section is written now
    # Then botocore's four attempts are made over 3.5 virtual seconds, the last one throttled too: the real
    # adapter raises the client's error (not taken for a failed condition), and nothing was written
    with pytest.raises(ClientError) as raised:
        store.put_entry(second)
    assert raised.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert simulation.clock.now - started == pytest.approx(sum(RETRY_WAITS_S))
    assert limits.throttled["partition"] == 4 and limits.failed == 1
    assert store.entry_rank("blog", second.key, second.url) is None
    # and once the key has room, the same write is taken
    simulation.clock.now = started + 4
    assert store.put_entry(second) and limits.failed == 1


def _write(n: int) -> PageWrite:
    url = f"{BASE}/blog/p{n}"
    return PageWrite(url=url, rank=f"{n + 1:020d}:{0:020d}:0:d:blog", kind="live", section="blog", key=n << 60,
                     digest=f"d{n}", lastmod="2026-11-20", change="added", moved_from=(), record=b"r")  # fmt: skip
