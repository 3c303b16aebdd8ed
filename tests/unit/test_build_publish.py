"""The build's publish step (``service/build_publish.py``) when its undo is itself stopped: a second Ctrl-C while the
first one's undo puts files back. ``tests/integration/test_build_interrupted.py`` stops whole builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemap_updater.service.build_publish import RECORD, publish, recover, unfinished
from sitemap_updater.service.scratch import scratch_folder

SITE = "https://www.example.com"
STAGING = ".sitemap-build-"


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_an_undo_stopped_half_way_is_finished_by_the_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a published site (a file replaced by the next publish, one it removes) and the next publish staged
    out = tmp_path / "out"
    out.mkdir()
    with scratch_folder(out, STAGING) as staging:
        for name in ("sitemap-a-00000000.xml.gz", "sitemap-b-00000000.xml.gz", "sitemap.xml"):
            (staging / name).write_bytes(b"old " + name.encode())
        publish(staging, out, ["sitemap-a-00000000.xml.gz", "sitemap-b-00000000.xml.gz"], ["sitemap.xml"], SITE)
    before = files(out)
    assert RECORD in before
    # And a Ctrl-C at the second file moved in, then another at the second file its undo puts back
    real, into_out = Path.replace, []

    def replace(self: Path, target: str | Path) -> Path:
        if Path(target).parent == out:
            into_out.append(self.name)
            if len(into_out) in (2, 4):
                raise KeyboardInterrupt
        return real(self, target)

    monkeypatch.setattr(Path, "replace", replace)
    with pytest.raises(KeyboardInterrupt), scratch_folder(out, STAGING, keep=unfinished) as staging:
        for name in ("sitemap-a-00000000.xml.gz", "sitemap-c-00000000.xml.gz", "sitemap.xml"):
            (staging / name).write_bytes(b"new " + name.encode())
        publish(staging, out, ["sitemap-a-00000000.xml.gz", "sitemap-c-00000000.xml.gz"], ["sitemap.xml"], SITE)
    monkeypatch.undo()
    # Then the staging folder is left for the next build, which finishes the undo: every file as it was
    assert files(out) != before
    assert len(list(out.glob(f"{STAGING}*"))) == 1
    assert recover(out, STAGING)
    assert files(out) == before
    assert list(out.glob(f"{STAGING}*")) == []
    # And a recovery with nothing to undo changes nothing
    assert not recover(out, STAGING)
    assert files(out) == before
