"""The copy of a local run's published files into ``--out``, in an order a reader of that folder can follow.

Each file is written beside its name and renamed over it (a reader sees the old bytes or the new, never part of
a file); the sitemap files come first, then the further index files, ``sitemap.xml`` last; files of an earlier
run that the site no longer has are deleted only after that. A copy that stops anywhere (an interrupt, a full
disk) leaves an index whose every file is there, and the record of what local runs wrote there names every file
of theirs still present, so the next run replaces or removes them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sitemap_updater.core.render import index_name, is_further_index

WRITTEN = ".sitemap-updater-local.json"  # in --out: the files a local run wrote there (the only ones it replaces)
_PART = ".sitemap-updater-part"  # suffix of a file being written (``.<name><suffix>``), renamed once whole
_LEFT_PART = re.compile(rf"\..+{re.escape(_PART)}")


def copy_out(files: dict[str, bytes], out_dir: Path) -> list[str]:
    """Copy ``files`` (name -> bytes) into ``out_dir``; returns their names. Only files an earlier local run wrote
    there (listed in :data:`WRITTEN`) are replaced or removed; any other file in the way stops the copy before
    anything is written (FileExistsError)."""
    record = out_dir / WRITTEN
    previous = set(json.loads(record.read_text(encoding="utf-8"))) if record.is_file() else set()
    in_the_way = sorted(name for name in files if (out_dir / name).exists() and name not in previous)
    if in_the_way:
        raise FileExistsError(f"{out_dir} holds files a local run did not write: {', '.join(in_the_way)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    for left in out_dir.iterdir():  # parts of a copy that stopped
        if _LEFT_PART.fullmatch(left.name) and left.is_file():
            left.unlink()
    _write(out_dir, WRITTEN, _names(previous | set(files)))  # every file of ours present during the copy
    for name in sorted(files, key=_order):
        _write(out_dir, name, files[name])
    for gone in sorted(previous - set(files)):
        (out_dir / gone).unlink(missing_ok=True)
    _write(out_dir, WRITTEN, _names(set(files)))
    return sorted(files)


def _order(name: str) -> tuple[int, str]:
    """Sitemap files (and any other file) first, then the further index files, then ``sitemap.xml``."""
    return (2 if name == index_name(0) else 1 if is_further_index(name) else 0), name


def _names(names: set[str]) -> bytes:
    return (json.dumps(sorted(names)) + "\n").encode()


def _write(out_dir: Path, name: str, data: bytes) -> None:
    part = out_dir / f".{name}{_PART}"
    part.write_bytes(data)
    part.replace(out_dir / name)
