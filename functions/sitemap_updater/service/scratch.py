"""Scratch folders a process owns while it runs (the build's staging and spill folders, a copy of standard input).

Each holds a lock file, locked (``flock``) for as long as its owner lives: the kernel lets go of the lock when the
owner ends, however it ends (a SIGKILL, the OOM killer), so the next start tells a folder left behind from one in
use by another process and sweeps it. A folder whose lock cannot be taken is in use, or on a file system without
locks, and is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

_LOCK = ".owner"


@contextlib.contextmanager
def scratch_folder(parent: Path, prefix: str, keep: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """A new folder ``<parent>/<prefix>XXXXXXXX``, locked while in use and removed afterwards, unless ``keep``
    says it still holds what the next start needs (it is unlocked then, for that start's sweep)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    lock = -1
    try:
        lock = _lock_new(path)
        yield path
    finally:
        if keep is None or not keep(path):
            shutil.rmtree(path, ignore_errors=True)
        if lock >= 0:
            os.close(lock)


def _lock_new(path: Path) -> int:
    """Lock ``path`` as its owner's: the lock file gets its name only once locked, so that a sweep never sees it
    unlocked while its owner lives (a folder with no lock file is never swept)."""
    new = path / f"{_LOCK}.new"
    lock = os.open(new, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    except OSError:  # no locks on this file system: the folder is not named as sweepable
        return lock
    new.replace(path / _LOCK)
    return lock


@contextlib.contextmanager
def _abandoned(path: Path) -> Iterator[bool]:
    """Whether the scratch folder ``path`` was left by an owner that is gone (its lock held meanwhile)."""
    try:
        lock = os.open(path / _LOCK, os.O_RDONLY)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(lock)


def sweep(parent: Path, prefix: str, before: Callable[[Path], None] | None = None) -> list[Path]:
    """Remove the scratch folders ``<parent>/<prefix>*`` whose owners are gone, each after ``before(folder)``."""
    try:
        found = sorted(parent.glob(f"{prefix}*"))
    except OSError:
        return []
    removed = []
    for path in found:
        with _abandoned(path) as left:
            if left:
                if before is not None:
                    before(path)
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed
