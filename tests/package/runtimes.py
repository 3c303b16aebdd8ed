"""The interpreters the built package is run on: this machine's, and Lambda's runtime (Python 3.12) where one
is installed here.

Lambda runs ``python3.12`` (template.yaml's ``Runtime``); the tests' virtual environment may be any Python from
3.11 on. The runtime's interpreter is looked for, in order: ``LAMBDA_PYTHON`` (a path), ``python3.12`` on
``PATH``, then pyenv's versions (``$PYENV_ROOT`` or ``~/.pyenv``, newest 3.12 first). A pyenv shim on ``PATH``
that answers for no installed 3.12 does not count: each candidate must report 3.12 itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LAMBDA_VERSION = (3, 12)


@dataclass(frozen=True, slots=True)
class Runtime:
    """An interpreter the package is installed for and run by (its own pip installs the wheels for it)."""

    label: str
    python: Path


def version_of(python: Path) -> tuple[int, int] | None:
    """The (major, minor) a Python executable reports, or None when it does not run."""
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30, env={**os.environ, "PYENV_VERSION": ""},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 2:
        return None
    return int(parts[0]), int(parts[1])


def _candidates() -> list[Path]:
    found = []
    if os.environ.get("LAMBDA_PYTHON"):
        found.append(Path(os.environ["LAMBDA_PYTHON"]))
    on_path = shutil.which("python3.12")
    if on_path:
        found.append(Path(on_path))
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found += sorted((root / "versions").glob("3.12*/bin/python3.12"), reverse=True)
    return found


def lambda_python() -> Path | None:
    """Lambda's Python (3.12) on this machine, or None."""
    for candidate in _candidates():
        if version_of(candidate) == LAMBDA_VERSION:
            return candidate
    return None


def this_python() -> Path:
    """The base interpreter under the tests' virtual environment (its site-packages are left out by -S)."""
    return Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"


MISSING = (
    "no Python 3.12 here (Lambda's runtime): the package ran on this machine's Python only; "
    "install 3.12 (pyenv install 3.12) or set LAMBDA_PYTHON to its path"
)
