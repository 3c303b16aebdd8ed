"""A rebuild's files are read, rendered and put at once on Lambda (``wiring.pipeline.Threads``)."""

from __future__ import annotations

import threading
import time

import pytest

from sitemap_updater.service.pipeline import in_turn
from sitemap_updater.wiring.pipeline import Threads, render_threads


def test_tasks_run_at_once_and_answer_in_order() -> None:
    # Four tasks that each wait for all four: they finish only if they run at the same time.
    barrier = threading.Barrier(4, timeout=10)

    def task(item: int) -> int:
        barrier.wait()
        return item * item

    assert Threads(4)(task, [3, 1, 2, 0]) == [9, 1, 4, 0]


def test_a_failure_waits_for_the_others_and_raises_the_first_in_order() -> None:
    finished: list[int] = []

    def task(item: int) -> int:
        if item in (1, 2):
            raise ValueError(f"file {item}")
        time.sleep(0.05)  # still putting its file when the failures happen
        finished.append(item)
        return item

    with pytest.raises(ValueError, match="file 1"):
        Threads(4)(task, [0, 1, 2, 3])
    assert sorted(finished) == [0, 3]  # nothing is left writing once the rebuild has failed


def test_one_item_or_one_worker_runs_in_the_callers_thread() -> None:
    caller = threading.get_ident()
    assert Threads(8)(lambda _item: threading.get_ident(), ["only"]) == [caller]
    assert Threads(1)(lambda _item: threading.get_ident(), [1, 2]) == [caller, caller]


def test_the_simulations_fan_out_runs_in_turn() -> None:
    caller = threading.get_ident()
    assert in_turn(lambda item: (item, threading.get_ident()), [2, 1]) == [(2, caller), (1, caller)]


def test_larger_files_are_rendered_by_fewer_threads() -> None:
    # Each file in flight holds its XML, gzip and snapshot bytes: a function's memory bounds how many at once.
    assert [render_threads(n) for n in (1_000, 10_000, 25_000, 50_000)] == [8, 8, 4, 2]
