"""The blocks a benchmark writes into a Markdown page (``--write``): its text between two marker comments,
replaced where the markers are, else appended under a heading of its own."""

from __future__ import annotations

import re
from pathlib import Path


def write_block(path: Path, begin: str, end: str, text: str, heading: str) -> None:
    """Put ``text`` between ``begin`` and ``end`` in ``path``: in place of the block there, or at the end of the
    page under ``## heading`` when it has none yet."""
    document = path.read_text(encoding="utf-8")
    block = f"{begin}\n{text}\n{end}"
    if begin in document:
        document = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _m: block, document, flags=re.S)
    else:
        document = document.rstrip() + f"\n\n## {heading}\n\n{block}\n"
    path.write_text(document, encoding="utf-8")
