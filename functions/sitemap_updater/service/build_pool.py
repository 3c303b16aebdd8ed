"""The build's worker processes: started so that each ends with the build, however it ends, keeps the memory its
tasks free for the next, and leaves Ctrl-C to the build's own process."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from functools import cache


@contextlib.contextmanager
def pool(count: int) -> Iterator[Executor]:
    """The build's executor: ``count`` worker processes, or one thread in this process for one. When the build
    stops with an exception (Ctrl-C, SIGTERM, an error), the tasks not begun are cancelled and the workers killed
    at once, not waited for; a worker also ends when this process does, however it ends (``_worker_start``)."""
    executor: Executor
    if count == 1:
        executor = ThreadPoolExecutor(max_workers=1, initializer=_block_stops)  # so they interrupt the build's thread
    else:
        from concurrent.futures.process import ProcessPoolExecutor  # multiprocessing: only a pool's build needs it

        _mallopt()
        _prctl()
        executor = ProcessPoolExecutor(max_workers=count, initializer=_worker_start, initargs=(os.getpid(),))
        # The workers are forked at the first task, with the stopping signals blocked, so that none reaches a worker
        # before it has set how it takes them (_worker_start): this process gets them once they are forked.
        before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            executor.submit(os.getpid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
    try:
        yield executor
    except BaseException:
        # The workers are killed (the pool then finds them dead and ends), the tasks not begun cancelled; a thread's
        # task runs to its end (a few ms to a second): no thread is killed. The copy: the pool may clear its dict.
        for process in list((getattr(executor, "_processes", None) or {}).values()):
            process.kill()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


# glibc's mallopt parameters, and what a worker sets them to (see _keep_freed_memory).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 << 20  # glibc's largest
_TRIM_THRESHOLD = 256 << 20


_PR_SET_PDEATHSIG = 1  # Linux's prctl option: a signal for this process when its parent ends
_STOPS = {signal.SIGINT, signal.SIGTERM}


def _block_stops() -> None:
    """A worker thread's start: Ctrl-C and SIGTERM go to the build's own thread, which handles them."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)


def _worker_start(parent: int) -> None:
    """A worker process's start: it ends with the build's process, however that ends, and leaves Ctrl-C to it.

    The terminal sends Ctrl-C's SIGINT to every process of the group: the build's process ends the workers itself
    (``pool``), so a worker ignores it (rather than print a traceback of its own). SIGTERM ends a worker (the
    handler a forked worker inherits is the build's). On Linux the kernel kills a worker when the build's process
    ends (PR_SET_PDEATHSIG); elsewhere a thread checks for it twice a second."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # blocked while it was forked (pool)
    prctl = _prctl()
    if prctl is None or prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    elif os.getppid() != parent:  # the build ended before the signal was asked for
        os._exit(1)
    _keep_freed_memory()


def _end_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


@cache
def _prctl() -> Callable[[int, int], int] | None:
    """Linux's prctl, or None; looked up before the workers are forked, as ``_mallopt``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl: Callable[[int, int], int] = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _keep_freed_memory() -> None:
    """A worker process's start: have malloc keep the memory a task frees for the next task's use.

    A task allocates buffers of megabytes (a chunk, its spilled groups, a bucket's heads and bytes, a file's XML).
    By default glibc maps each such buffer afresh and unmaps it when freed, or gives the top of the heap back, so
    every task faults its pages in again: at 1,000,000 pages on 2 workers the build's processes took 360,000-420,000
    minor page faults and 1.2-1.3 s of system time, against about 85,000 and 0.5 s with this.
    Kept, a worker's memory is its largest task's (the peak is unchanged) and lives as long as the worker, which
    the build ends. Nothing else changes, so where mallopt is not glibc's (or missing) nothing is done."""
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


@cache
def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's mallopt, or None. Looked up by the build before its workers start, so that forked workers find it
    here instead of each importing ctypes as it starts (5-10 ms of a 50,000-page build, before any task)."""
    try:
        import ctypes

        mallopt: Callable[[int, int], int] = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    return mallopt
