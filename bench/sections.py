"""Sections of docs/benchmarks.md that their own benchmark writes (between ``<!-- NAME:begin -->`` and
``<!-- NAME:end -->``): each is replaced in place by its benchmark and kept when `bench.full_build` rewrites the
rest of the document."""

from __future__ import annotations

import re

from bench.tools import ROOT

DOC = ROOT / "docs" / "benchmarks.md"
KEPT = ("urls", "local", "webhooks", "bootstrap", "partitions", "scale")  # in the order full_build appends them


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def kept(text: str, name: str) -> list[str]:
    """The lines of section ``name`` of a benchmarks document, markers included; [] when it has none."""
    begin, end = markers(name)
    found = re.search(re.escape(begin) + r".*?" + re.escape(end), text, re.DOTALL)
    return found.group(0).splitlines() if found else []


def write(name: str, body: list[str]) -> None:
    """Put section ``name`` (its lines without markers) into the document: in place, or appended."""
    begin, end = markers(name)
    block = "\n".join([begin, *body, "", end])
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Benchmarks\n"
    old = "\n".join(kept(text, name))
    DOC.write_text(text.replace(old, block) if old else text.rstrip("\n") + "\n\n" + block + "\n", encoding="utf-8")
