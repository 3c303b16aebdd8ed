"""What an adoption reports, in memory bounded whatever the input: problems and notes counted per kind with the
first few of each kept, and dropped fields counted per file and field with the first page; every line with its
control characters escaped, so that text from the network never forges a line or moves the cursor.

A million pages skipped for the same reason keep three lines and a count, not a million lines; a file that makes
up a new kind of problem for every page fills at most ``MAX_KINDS`` kinds, and the rest are counted together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sitemap_updater.service.adopt_limits import EXAMPLES, MAX_KINDS

_NO_DIGITS = str.maketrans("", "", "0123456789")
_VARYING = re.compile(r"'[^']*'|\w+://\S*")  # quoted values, URLs
_OTHER = "\0other"


def shown(text: str) -> str:
    """Text safe to print on a terminal: control characters (a line break forging a line, an escape sequence) and
    other unprintable ones written as Python escapes; text from the network or a file reaches lines only so."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def kind_of(text: str) -> str:
    """A reason with what varies from case to case (quoted values, URLs, numbers) left out."""
    return _VARYING.sub("", text).translate(_NO_DIGITS)


@dataclass(slots=True)
class _Kind:
    examples: list[str]
    count: int = 0


@dataclass(slots=True)
class Findings:
    """Lines of one sort, counted per kind; the first ``EXAMPLES`` of each kind kept as they were written."""

    examples: int = EXAMPLES
    max_kinds: int = MAX_KINDS
    count: int = field(default=0, init=False)
    _kinds: dict[str, _Kind] = field(default_factory=dict, init=False)

    def add(self, kind: str, text: str) -> None:
        if kind not in self._kinds and len(self._kinds) >= self.max_kinds:
            kind = _OTHER
        found = self._kinds.setdefault(kind, _Kind([]))
        found.count += 1
        self.count += 1
        if len(found.examples) < self.examples:
            found.examples.append(shown(text))

    @property
    def lines(self) -> list[str]:
        """Each kind's examples, then how many more there were like them."""
        lines: list[str] = []
        for kind, found in self._kinds.items():
            lines += found.examples
            more = found.count - len(found.examples)
            if more and kind == _OTHER:
                lines.append(f"... and {more:,} more, of {self.max_kinds:,}+ other kinds")
            elif more:
                lines.append(f"... and {more:,} more like the line above")
        return lines


@dataclass(slots=True)
class _Warning:
    text: str
    first_page: str
    count: int = 0


@dataclass(slots=True)
class Warnings:
    """Dropped fields: one line per file and kind of field and reason, with a count and the first page."""

    max_kinds: int = MAX_KINDS
    _found: dict[tuple[str, str], _Warning] = field(default_factory=dict, init=False)

    def add(self, where: str, name: str, why: str, page: str) -> None:
        key = (where, f"{name.translate(_NO_DIGITS)}: {kind_of(why)}")
        if key not in self._found and len(self._found) >= self.max_kinds:
            key, name, why = ("", _OTHER), "other fields", f"dropped or kept with a warning, {self.max_kinds:,}+ kinds"
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = _Warning(shown(f"{name}: {why}"), shown(page))
        found.count += 1

    @property
    def lines(self) -> list[str]:
        return [
            f"{shown(where) or '(other files)'}: warning: {w.count:,} page(s): {w.text} (first: {w.first_page})"
            for (where, _), w in sorted(self._found.items())
        ]

    def __len__(self) -> int:
        return len(self._found)
