"""The documentation's own rules (docs/testing.md, "Documentation"): a README a newcomer reads in ten minutes, every
command line option in the CLI reference, links that lead somewhere, and no dated sentences about the project's past
outside CHANGELOG.md."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sitemap_updater.cli_parser import command_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
WORD_BUDGET = 1_800

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`]*`")
# A date alone (a date-time is a value: an event's field, a rule's bound)
_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d(?:-[0-3]\d)?\b(?![-T\d])")
# A date on a line that says what was measured or looked up when is a measurement's date, which stays.
_MEASUREMENT = re.compile(r"(?i)\b(measured (by|on|with)|looked up on|the run of)\b")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def prose(text: str) -> list[str]:
    """The lines of a Markdown text with code blocks blanked (line numbers kept) and inline code removed."""
    blank = lambda m: "\n" * m.group(0).count("\n")  # noqa: E731
    return _CODE.sub(blank, _FENCE.sub(blank, text)).split("\n")


def dated_lines(text: str) -> list[str]:
    return [line for line in prose(text) if _DATE.search(line) and not _MEASUREMENT.search(line)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    lines = _FENCE.sub("", path.read_text(encoding="utf-8")).split("\n")
    return {slug(line.lstrip("#")) for line in lines if line.startswith("#")}


def test_the_readme_is_read_in_ten_minutes() -> None:
    words = len(README.read_text(encoding="utf-8").split())
    assert words <= WORD_BUDGET, f"README.md has {words:,} words; the budget is {WORD_BUDGET:,}: move detail to docs/"


def test_the_readme_lists_its_sections_in_its_contents() -> None:
    text = README.read_text(encoding="utf-8")
    headings = [line[3:] for line in prose(text) if line.startswith("## ") and line != "## Contents"]
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"- \[([^\]]+)\]\(#([^)]+)\)", contents) == [(h, slug(h)) for h in headings]


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_no_dated_sentence_about_the_past_outside_the_changelog(path: Path) -> None:
    assert dated_lines(path.read_text(encoding="utf-8")) == []


def test_the_dated_sentence_rule_sees_history_and_keeps_measurements() -> None:
    assert dated_lines("about 60 s (80 s before 2026-11-25)\n")
    assert dated_lines("| 1 event/s | before (2026-11-22) | 5.71 |\n")
    assert dated_lines("Stacks from before 2026-11-25 kept one object per file\n")
    assert not dated_lines("Measured by `make bench` on 2026-11-25: x86_64, 2 cores\n")
    assert not dated_lines('an event `{"occurred_at": "2026-11-20T10:00:00Z"}`\n')
    assert not dated_lines('```json\n{"occurred_at": "2026-11-20T10:00:00Z"}\n```\n')


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(path: Path) -> None:
    broken = []
    for target in _LINK.findall("\n".join(prose(path.read_text(encoding="utf-8")))):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists() or (anchor and where.suffix == ".md" and anchor not in anchors(where)):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_every_image_says_what_it_shows_and_is_a_small_png_beside_its_doc(path: Path) -> None:
    """A figure (`make bench` draws those of docs/benchmarks.md) has alt text for a reader who cannot see it, and is a
    PNG of at most 100 KB that the repository holds (the link check above finds a missing file)."""
    wrong = []
    for alt, target in _IMAGE.findall("\n".join(prose(path.read_text(encoding="utf-8")))):
        where = (path.parent / target).resolve()
        png = where.is_file() and where.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if len(alt.split()) < 4 or re.match(r"[a-z]+:", target) or not png or where.stat().st_size > 100_000:
            wrong.append(target)
    assert wrong == []


def test_the_image_rule_sees_a_missing_alt_text_and_a_file_that_is_no_png(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "b.png").write_text("not a picture", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text("![Build wall time by site size](a.png)\n![](a.png)\n![Cost by AWS service, stacked](b.png)\n")
    with pytest.raises(AssertionError, match=r"'a.png', 'b.png'"):
        test_every_image_says_what_it_shows_and_is_a_small_png_beside_its_doc(doc)


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = command_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_cli_reference_names_every_command_and_option_in_its_section() -> None:
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", reference, re.MULTILINE | re.DOTALL))
    missing = []
    for name, parser in _commands().items():
        assert name in sections, f"docs/cli.md has no section '## {name}'"
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help" and f"`{option}" not in sections[name]:
                    missing.append(f"{name} {option}")
    assert missing == []
