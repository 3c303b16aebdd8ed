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
    try:
        lock = _lock_new(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    try:
        yield path
    finally:
        if keep is None or not keep(path):
            shutil.rmtree(path, ignore_errors=True)  # (only its owner writes there: nothing in it refuses)
        os.close(lock)


def _lock_new(path: Path) -> int:
    """Lock ``path`` as its owner's: the lock file gets its name only once locked, so that a sweep never sees it
    unlocked while its owner lives (a folder with no lock file is never swept)."""
    new = path / f"{_LOCK}.new"
    lock = os.open(new, os.O_CREAT | os.O_WRONLY)
    if _take(lock):  # else no locks on this file system: the folder is not named as sweepable
        new.replace(path / _LOCK)
    return lock


def _take(lock: int) -> bool:
    """Lock ``lock`` (a file descriptor) for this process; False when another holds it (or there are no locks)."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def sweep(parent: Path, prefix: str, before: Callable[[Path], None] | None = None) -> None:
    """Remove the scratch folders ``<parent>/<prefix>*`` whose owners are gone, each after ``before(folder)``;
    each is held locked meanwhile, so that two starts never clean up one folder together."""
    try:
        names = [path.name for path in parent.iterdir()]
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        try:
            lock = os.open(parent / name / _LOCK, os.O_RDONLY)
        except OSError:  # no lock file: being made, or not a folder of ours
            continue
        try:
            if _take(lock):
                if before is not None:
                    before(parent / name)
                shutil.rmtree(parent / name, ignore_errors=True)
        finally:
            os.close(lock)
