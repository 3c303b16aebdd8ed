"""The build's workers (``service/build_pool.py``) and scratch folders (``service/scratch.py``) in this process, where
the mutation runner sees them: ``tests/integration/test_build_interrupted.py`` stops whole builds in processes of
their own. A stopped build waits for no task; a worker leaves Ctrl-C to the build and dies with it; a folder is
swept only once its owner is gone."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from sitemap_updater.service import build_pool
from sitemap_updater.service.build_pool import pool
from sitemap_updater.service.scratch import scratch_folder, sweep

STOPS = {signal.SIGINT, signal.SIGTERM}
PR_GET_PDEATHSIG = 2


def nap_then_touch(path: str, seconds: float) -> None:
    time.sleep(seconds)
    Path(path).touch()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stopped_build_waits_for_no_task_and_leaves_no_worker(tmp_path: Path, workers: int) -> None:
    # Given tasks of 0.3 s each, three times as many as the workers, queued (1.8 s of work for one)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), pool(workers) as executor:
        pids = list(getattr(executor, "_processes", None) or {})
        for i in range(6):
            executor.submit(nap_then_touch, str(tmp_path / str(i)), 0.3)
        time.sleep(0.1)
        # When the build is stopped
        raise KeyboardInterrupt
    # Then it ends at once (a thread's running task ends first: a thread cannot be killed), no worker is left
    took = time.monotonic() - started
    assert took < (1.0 if workers == 1 else 0.6)
    assert len(pids) == (0 if workers == 1 else 2) and not any(alive(pid) for pid in pids)
    # And no task queued behind the running ones ever runs
    time.sleep(0.4)
    assert len(list(tmp_path.iterdir())) == (1 if workers == 1 else 0)


def test_the_workers_of_a_build_that_ends_end_with_it() -> None:
    with pool(2) as executor:
        pids = list(getattr(executor, "_processes", None) or {})
        assert executor.submit(os.getpid).result() in pids
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)


def worker_state() -> tuple[bool, bool, set[int], int, list[str]]:
    death = ctypes.c_int(0)
    prctl = build_pool._prctl()
    if prctl is not None:
        ctypes.CDLL(None).prctl(PR_GET_PDEATHSIG, ctypes.byref(death))
    return (
        signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
        signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
        set(signal.pthread_sigmask(signal.SIG_BLOCK, set())) & STOPS,
        death.value,
        [thread.name for thread in threading.enumerate()],
    )


def thread_mask() -> set[int]:
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, set())) & STOPS


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux's prctl")
def test_a_worker_leaves_ctrl_c_to_the_build_and_is_killed_when_the_build_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the build's process handling SIGTERM itself (as the command does: a forked worker inherits that)
    def terminate(_signum: int, _frame: FrameType | None) -> None:
        raise AssertionError("a worker ran the build's SIGTERM handler")

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        with pool(2) as executor:
            state = executor.submit(worker_state).result()
        with pool(1) as executor:
            mask = executor.submit(thread_mask).result()
        # And, where there is no prctl, a worker that watches for the build's end itself
        monkeypatch.setattr(build_pool, "_prctl", lambda: None)
        with pool(2) as executor:
            names = executor.submit(worker_state).result()[4]
    finally:
        signal.signal(signal.SIGTERM, before)
    # Then a worker ignores Ctrl-C (the build ends it), dies of SIGTERM, blocks neither, and is killed by the kernel
    # when the build's process ends; a worker thread leaves both signals to the build's thread
    assert state[:4] == (True, True, set(), signal.SIGKILL)
    assert not any("_end_with" in name for name in state[4])
    assert mask == STOPS
    assert any("_end_with" in name for name in names)


def exit_code_of_child(run: object, *args: int) -> int | None:
    """The exit code of a forked child that runs ``run(*args)`` (3 if it returns), or None after 2 s (killed)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            run(*args)  # type: ignore[operator]
        finally:
            os._exit(3)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def test_a_worker_whose_build_already_ended_ends_at_once() -> None:
    # A worker started after its build's process ended (its parent is not the build), with or without prctl
    assert exit_code_of_child(build_pool._worker_start, os.getpid() + 1_000_000) == 1
    assert exit_code_of_child(build_pool._end_with, os.getpid() + 1_000_000) == 1


def open_files() -> int:
    return len(list(Path("/proc/self/fd").iterdir()))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts this process's open files in /proc")
def test_only_scratch_folders_whose_owner_is_gone_are_swept(tmp_path: Path) -> None:
    opened = open_files()
    with scratch_folder(tmp_path, "s-") as live:
        # Given a folder in use, one whose owner is gone, one without a lock file, and one of another kind whose
        # owner is gone too
        with scratch_folder(tmp_path, "s-", keep=lambda _: True) as left:
            pass
        with scratch_folder(tmp_path, "t-", keep=lambda _: True) as other:
            pass
        (tmp_path / "s-made-by-hand").mkdir()
        # When the folders of the first kind are swept
        swept: list[Path] = []
        sweep(tmp_path, "s-", before=swept.append)
        # Then only the one whose owner is gone is removed
        assert swept == [left] and not left.exists()
        assert live.is_dir() and (tmp_path / "s-made-by-hand").is_dir() and other.is_dir()
    # And the folder in use goes with its use, leaving no file open
    assert not live.exists()
    assert open_files() == opened


def test_a_scratch_folder_whose_lock_cannot_be_made_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.open

    def no_lock_file(path: str | Path, flags: int, *args: int, **kwargs: Any) -> int:
        if str(path).endswith(".new"):
            raise PermissionError("no lock file here")
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_lock_file)
    with pytest.raises(PermissionError), scratch_folder(tmp_path, "s-"):
        pass
    assert list(tmp_path.iterdir()) == []
