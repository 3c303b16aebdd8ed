"""The build's publish step (``service/build_publish.py``) when its undo is itself stopped: a second Ctrl-C while the
first one's undo puts files back. ``tests/integration/test_build_interrupted.py`` stops whole builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_updater.service.build_publish import publish, recover, unfinished
from sitemap_updater.service.scratch import scratch_folder

SITE = "https://www.example.com"
STAGING = ".sitemap-build-"


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


class Killed(BaseException):
    """Stands for SIGKILL: nothing of the publish runs after it (its undo is made to do nothing)."""


OLD = {"sitemap-a-00000000.xml.gz": b"old a", "sitemap-b-00000000.xml.gz": b"old b", "sitemap.xml": b"old index"}
NEW = {"sitemap-a-00000000.xml.gz": b"new a", "sitemap-c-00000000.xml.gz": b"new c", "sitemap.xml": b"new index"}


def stage(staging: Path, contents: dict[str, bytes]) -> None:
    for name, data in contents.items():
        (staging / name).write_bytes(data)
    publish(staging, staging.parent, sorted(n for n in contents if n != "sitemap.xml"), ["sitemap.xml"], SITE)


def published_site(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    out = tmp_path / "out"
    out.mkdir()
    (out / "robots.txt").write_bytes(b"not ours")
    with scratch_folder(out, STAGING) as staging:
        stage(staging, OLD)
    return out, files(out)


@pytest.mark.parametrize("second", ["restoring", "ending"])  # while it puts back a file; as it ends
def test_an_undo_stopped_half_way_is_finished_by_the_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: str
) -> None:
    # Given a published site, and the next publish stopped by Ctrl-C at its second move (c, new, moved in)
    out, before = published_site(tmp_path)
    real_replace, real_unlink, into_out = Path.replace, Path.unlink, []

    def replace(self: Path, target: str | Path) -> Path:
        if Path(target).parent == out:
            into_out.append(self.name)
            if len(into_out) == 2 or (second == "restoring" and len(into_out) == 4):
                raise KeyboardInterrupt
        return real_replace(self, target)

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if second == "ending" and self.name == "journal.json" and len(into_out) > 2:
            raise KeyboardInterrupt
        real_unlink(self, missing_ok)

    # And another Ctrl-C while its undo runs: at the second file it puts back, or as it ends (c removed already)
    monkeypatch.setattr(Path, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(KeyboardInterrupt), scratch_folder(out, STAGING, keep=unfinished) as staging:
        stage(staging, NEW)
    monkeypatch.undo()
    # Then the staging folder is left for the next build, which finishes the undo: every file as it was
    assert len(list(out.glob(f"{STAGING}*"))) == 1
    assert recover(out, STAGING)
    assert files(out) == before
    assert list(out.glob(f"{STAGING}*")) == []
    # And a recovery with nothing to undo changes nothing
    assert not recover(out, STAGING)
    assert files(out) == before


@pytest.mark.parametrize("stop", [1, 2, 3, 4])  # before each move: c (new), a (replaced), the index, the record
def test_a_publish_stopped_at_any_move_is_undone_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: int
) -> None:
    # Given a published site, and a publish (c new, a replaced, b removed) stopped by Ctrl-C before its stop-th move
    out, before = published_site(tmp_path)
    real, moved = Path.replace, []

    def replace(self: Path, target: str | Path) -> Path:
        if Path(target).parent == out and self.parent.name.startswith(STAGING):
            moved.append(self.name)
            if len(moved) == stop:
                raise KeyboardInterrupt
        return real(self, target)

    monkeypatch.setattr(Path, "replace", replace)
    with pytest.raises(KeyboardInterrupt), scratch_folder(out, STAGING, keep=unfinished) as staging:
        stage(staging, NEW)
    # Then the new file went first, the replaced one next; and every file is as it was, no staging folder left
    assert moved[:2] == ["sitemap-c-00000000.xml.gz", "sitemap-a-00000000.xml.gz"][: len(moved)]
    assert files(out) == before
    assert list(out.glob(f"{STAGING}*")) == []


@pytest.mark.parametrize("stop", [1, 2, 3, 4, 5])  # before each move, and before the file no longer named goes
def test_a_publish_killed_at_any_step_names_no_missing_file_and_the_next_build_undoes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: int
) -> None:
    # Given a published site, and a publish killed before its stop-th step (nothing of it runs after that)
    out, before = published_site(tmp_path)
    real_replace, real_unlink, steps = Path.replace, Path.unlink, []

    def step(path: Path) -> None:
        steps.append(path.name)
        if len(steps) == stop:
            raise Killed

    def replace(self: Path, target: str | Path) -> Path:
        if Path(target).parent == out and self.parent.name.startswith(STAGING):
            step(self)
        return real_replace(self, target)

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.parent == out:
            step(self)
        real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "replace", replace)
    monkeypatch.setattr(Path, "unlink", unlink)
    monkeypatch.setattr("sitemap_updater.service.build_publish.roll_back", lambda staging, out_dir: False)
    with pytest.raises(Killed), scratch_folder(out, STAGING, keep=unfinished) as staging:
        stage(staging, NEW)
    monkeypatch.undo()
    # Then the index in --out names only files that are there (the old one: b; the new one: c)
    index = (out / "sitemap.xml").read_bytes()
    assert (
        out / ("sitemap-b-00000000.xml.gz" if index == OLD["sitemap.xml"] else "sitemap-c-00000000.xml.gz")
    ).exists()
    # And the next build puts every file back as it was, and leaves no staging folder
    assert recover(out, STAGING)
    assert files(out) == before
    assert list(out.glob(f"{STAGING}*")) == []


def test_a_folder_left_before_its_publish_began_is_removed_and_nothing_is_put_back(tmp_path: Path) -> None:
    out, before = published_site(tmp_path)
    with scratch_folder(out, STAGING, keep=lambda _: True) as staging:  # as a build killed while it parsed leaves
        (staging / "sitemap-a-00000000.xml.gz").write_bytes(b"half")
    assert not recover(out, STAGING)
    assert files(out) == before
    assert list(out.glob(f"{STAGING}*")) == []


def test_without_hard_links_the_files_replaced_are_kept_as_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a file system without hard links, and a publish stopped by Ctrl-C once it replaced a file
    out, before = published_site(tmp_path)

    def no_links(*_args: object) -> None:
        raise OSError("hard links are not supported here")

    real, moved = Path.replace, []

    def replace(self: Path, target: str | Path) -> Path:
        if Path(target).parent == out and self.parent.name.startswith(STAGING):
            moved.append(self.name)
            if len(moved) == 3:
                raise KeyboardInterrupt
        return real(self, target)

    monkeypatch.setattr("os.link", no_links)
    monkeypatch.setattr(Path, "replace", replace)
    with pytest.raises(KeyboardInterrupt), scratch_folder(out, STAGING, keep=unfinished) as staging:
        stage(staging, NEW)
    # Then the file it replaced is put back from its copy
    assert files(out) == before


def test_a_journal_naming_files_outside_the_folder_is_not_followed(tmp_path: Path) -> None:
    # Given files beside --out, and a staging folder left in it whose journal names them (edited, or planted)
    out, before = published_site(tmp_path)
    (tmp_path / "outside.txt").write_text("mine")
    (tmp_path / "victim.txt").write_text("mine")
    with scratch_folder(out, STAGING, keep=lambda _: True) as staging:
        (staging / "previous").mkdir()
        (staging / "victim.txt").write_text("planted")  # what previous/../victim.txt names
        (staging / "journal.json").write_text(json.dumps({"moves": ["../outside.txt"], "kept": ["../victim.txt"]}))
    # When the next build recovers the folder, then nothing outside it is touched
    recover(out, STAGING)
    assert (tmp_path / "outside.txt").read_text() == (tmp_path / "victim.txt").read_text() == "mine"
    assert files(out) == before
