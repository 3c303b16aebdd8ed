"""The build's publish step: the files staged beside ``--out`` moved in, the index last, undone whole if it stops.

The files keep the names the stack gives them (a file the deployed functions rebuild must have the bytes ``build``
wrote, name included), so a file that changes is replaced under its name. Before anything moves, every file the
publish will replace or remove is kept, as it was, in the staging folder (a hard link: no copy), and a journal
there lists the moves. The files move by ``rename``, so a reader never sees part of a file: the files of names the
old index does not know first, then the files it names, then the index files (which name sitemap files only), so
no index names a file that is not there yet; files no longer part of the site go last. A publish that stops
half-way (an error, SIGTERM, Ctrl-C) is undone at once from what was kept; one that was killed (SIGKILL, power
loss) is undone by the next build into the same folder, before it does anything else (``recover``).

A record in ``--out`` lists, per site, the files its builds wrote there: a build removes only files an earlier build
of the same site wrote, never another file of the folder.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from sitemap_updater.service.scratch import sweep

RECORD = ".sitemap-updater-build.json"  # in --out: {"sites": {site: [the files its last build wrote]}}
_JOURNAL = "journal.json"  # in the staging folder, while a publish moves files: what it moves and removes
_KEPT = "previous"  # in the staging folder: the files the publish replaces or removes, as they were


def written(out_dir: Path) -> dict[str, list[str]]:
    """The files each site's builds wrote in ``out_dir`` (from its record; none without one)."""
    try:
        record: Any = json.loads((out_dir / RECORD).read_text(encoding="utf-8"))
        return {site: [name for name in names if _plain(name)] for site, names in record["sites"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not a record of ours: nothing is removed
        return {}


def _plain(name: str) -> bool:
    """A name of a file in the folder itself: a record or journal naming ../x or a/b is not followed (a TypeError
    for what is not a string)."""
    return "/" not in name


class Published(NamedTuple):
    removed: list[str]  # files an earlier build of the site wrote that are no longer part of it
    unchanged: list[str]  # files whose bytes were already in --out: left as they were (their time included)


def publish(staging: Path, out_dir: Path, files: list[str], indexes: list[str], site: str) -> Published:
    """Move ``files`` then ``indexes`` (each index file names sitemap files only) from ``staging`` into ``out_dir``,
    except those whose bytes ``out_dir`` already has (left untouched, so a sync or a Last-Modified sees only what
    changed); remove the files an earlier build of ``site`` wrote that are not among them."""
    before = written(out_dir)
    names = {*files, *indexes}
    unchanged = [name for name in [*files, *indexes] if _same(staging / name, out_dir / name)]
    files = [name for name in files if name not in unchanged]
    indexes = [name for name in indexes if name not in unchanged]
    stale = sorted(n for n in before.get(site, ()) if n not in names and (out_dir / n).is_file())
    # the files this build writes are no longer another site's
    sites = {other: [n for n in owned if n not in names] for other, owned in before.items()}
    sites[site] = sorted(names)
    (staging / RECORD).write_text(json.dumps({"sites": sites}) + "\n", encoding="utf-8")
    known = {n for n in files if (out_dir / n).exists()}
    moves = [*(n for n in files if n not in known), *(n for n in files if n in known), *indexes, RECORD]
    (staging / _KEPT).mkdir()
    kept = [name for name in [*moves, *stale] if (out_dir / name).is_file()]
    for name in kept:
        _keep(out_dir / name, staging / _KEPT / name)
    _write_json(staging / _JOURNAL, {"moves": moves, "kept": kept})  # the files removed are among those kept
    try:
        for name in moves:
            (staging / name).replace(out_dir / name)
        for name in stale:
            (out_dir / name).unlink()
    except BaseException:
        roll_back(staging, out_dir)
        raise
    (staging / _JOURNAL).unlink()
    return Published(stale, unchanged)


def _same(staged: Path, published: Path) -> bool:
    """Whether ``published`` is a regular file with the bytes of ``staged`` (compared in full)."""
    try:
        return published.is_file() and not published.is_symlink() and filecmp.cmp(staged, published, shallow=False)
    except OSError:
        return False


def unfinished(staging: Path) -> bool:
    """Whether ``staging`` holds a publish that was neither finished nor undone (its undo was itself stopped): the
    folder must then stay for the next build to undo it."""
    return (staging / _JOURNAL).exists()


def recover(out_dir: Path, prefix: str) -> bool:
    """Sweep the staging folders ``<out_dir>/<prefix>*`` that builds which ended left; first undo the publish any
    of them was doing. Returns whether one was undone."""
    undone: list[bool] = []
    sweep(out_dir, prefix, before=lambda staging: undone.append(roll_back(staging, out_dir)))
    return any(undone)


def roll_back(staging: Path, out_dir: Path) -> bool:
    """Undo the publish the journal in ``staging`` describes, if any: every file it moved in or removed is as it
    was before (each kept file is put back, each file that was new is removed). Undoing again (after an undo that
    was itself stopped) changes nothing more. Returns whether there was a publish to undo."""
    try:
        journal: Any = json.loads((staging / _JOURNAL).read_text(encoding="utf-8"))
        moves = [name for name in journal["moves"] if _plain(name)]
        kept = {name for name in journal["kept"] if _plain(name)}
    except FileNotFoundError:
        return False
    for name in kept:
        if (staging / _KEPT / name).exists():
            (staging / _KEPT / name).replace(out_dir / name)
    for name in moves:
        if name not in kept and not (staging / name).exists():  # a file the old output did not have, moved in
            (out_dir / name).unlink(missing_ok=True)
    (staging / _JOURNAL).unlink()
    return True


def _keep(path: Path, copy: Path) -> None:
    try:
        os.link(path, copy)
    except OSError:  # a file system without hard links
        shutil.copy2(path, copy)


def _write_json(path: Path, value: object) -> None:
    """Write ``path`` whole or not at all (a reader never finds part of it)."""
    new = path.with_name(f"{path.name}.new")
    new.write_text(json.dumps(value), encoding="utf-8")
    new.replace(path)
