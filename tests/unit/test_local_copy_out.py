"""``local``'s copy into ``--out`` as a reader of that folder sees it: stopped at any step, every file an index
names is there and whole, and the next copy finishes the job."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.local.copy_out import WRITTEN, copy_out
from tests.conftest import BASE

KEY = "local-indexnow-key-0001.txt"


def _index(*names: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{BASE}/{name}</loc></sitemap>" for name in names)
    return f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex>{entries}</sitemapindex>'.encode()


# The first run published the blog; the second publishes only docs (the blog's pages were deleted), with a second
# index file, and the blog file changes its bytes under the same name in a third.
FIRST = {KEY: b"key", "sitemap-blog-00000000.xml.gz": b"blog v1", "sitemap.xml": _index("sitemap-blog-00000000.xml.gz")}
SECOND = {
    KEY: b"key",
    "sitemap-docs-00000000.xml.gz": b"docs v1",
    "sitemap-docs-80000000.xml.gz": b"docs v1 (2)",
    "sitemap-index-1.xml": _index("sitemap-docs-80000000.xml.gz"),
    "sitemap.xml": _index("sitemap-docs-00000000.xml.gz"),
}
VERSIONS = [FIRST, SECOND]


def _readable(out: Path) -> list[str]:
    """What a reader of ``out`` would find wrong: a file an index names that is missing, or not whole (its bytes
    none that a run published)."""
    known = {name: {v[name] for v in VERSIONS if name in v} for v in VERSIONS for name in v}
    wrong = []
    for index in [p for p in out.iterdir() if re.fullmatch(r"sitemap(-index-\d+)?\.xml", p.name)]:
        if index.read_bytes() not in known[index.name]:
            wrong.append(f"{index.name} is not whole")
            continue
        for name in re.findall(rf"<loc>{re.escape(BASE)}/([^<]+)</loc>", index.read_text(encoding="utf-8")):
            path = out / name
            if not path.is_file():
                wrong.append(f"{index.name} names {name}, which is missing")
            elif path.read_bytes() not in known[name]:
                wrong.append(f"{name} is not whole")
    return wrong


class _Stop(OSError):
    pass


def _stopping_at(step: int, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the ``step``-th change to ``out`` (a write, rename or delete) fail, as a full disk or an interrupt would."""
    count = [0]

    def wrap(name: str) -> None:
        original: Callable[..., Any] = getattr(Path, name)

        def changed(self: Path, *args: Any, **kwargs: Any) -> Any:
            if self.parent == out:
                count[0] += 1
                if count[0] == step:
                    if name == "write_bytes":  # half the bytes, then the failure
                        original(self, args[0][: len(args[0]) // 2])
                    raise _Stop(f"stopped at step {step}")
            return original(self, *args, **kwargs)

        monkeypatch.setattr(Path, name, changed)

    for name in ("write_bytes", "write_text", "replace", "rename", "unlink"):
        wrap(name)


def test_a_copy_stopped_at_any_step_leaves_an_index_whose_files_are_all_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = 1
    while True:
        out = tmp_path / f"out-{step}"
        copy_out(FIRST, out)
        assert _readable(out) == []
        # When the next copy stops at this step
        with monkeypatch.context() as patch:
            _stopping_at(step, out, patch)
            try:
                copy_out(SECOND, out)
                finished = True
            except _Stop:
                finished = False
        # Then a reader finds every file each index names, whole
        assert _readable(out) == [], f"stopped at step {step}"
        # And the next copy ends with the second run's files alone, nothing left of the stopped one
        copy_out(SECOND, out)
        assert sorted(p.name for p in out.iterdir()) == sorted([*SECOND, WRITTEN])
        assert all((out / name).read_bytes() == data for name, data in SECOND.items())
        assert json.loads((out / WRITTEN).read_text(encoding="utf-8")) == sorted(SECOND)
        if finished:
            break
        step += 1
    assert step > 5  # every write, rename and delete of a copy was stopped once


def test_files_a_local_run_did_not_write_stop_the_copy_and_others_are_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "robots.txt").write_text("User-agent: *\n", encoding="utf-8")
    copy_out(FIRST, out)
    copy_out(SECOND, out)
    assert (out / "robots.txt").read_text(encoding="utf-8") == "User-agent: *\n"
    (out / "sitemap-news-00000000.xml.gz").write_bytes(b"mine")
    with pytest.raises(FileExistsError, match=r"sitemap-news-00000000\.xml\.gz"):
        copy_out({**SECOND, "sitemap-news-00000000.xml.gz": b"news"}, out)
    assert (out / "sitemap-news-00000000.xml.gz").read_bytes() == b"mine"
