"""Deterministic synthetic exports whose URLs have the shapes real sites' have (`bench/url_shapes.py` times them).

Each is ``bench/pages.py``'s export (8 sections, 10% of pages with an image, the same dates) with the URL's path
and query made another way:

- ``query``: every URL has a query string, ``?ref=a&b=c``; 0.4% also hold ``'``, ``<``, ``>`` or a character above
  ASCII in the query (issue 31's export);
- ``percent``: every path holds percent-escapes of UTF-8, most upper-case (``caf%C3%A9``), a tenth lower-case
  (``%c3%a9``, which the rules upper-case), some of an unreserved character (``%7E``, which the rules decode);
- ``unicode``: every path holds characters above ASCII as written (``über-straße``, ``日本``), which the rules
  percent-encode;
- ``mixed``: a site's mix: 55% plain paths, 25% with a query string (some with a session ID to strip, ``'`` or
  ``<``), 8% percent-escaped, 6% above ASCII, 3% with a fragment, 2% ``..`` segments or a default port, 1% upper-case
  scheme and host.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bench.pages import SECTIONS

BASE = "https://www.example.com"
WORDS = ("über", "straße", "café", "niño", "日本", "доступ", "ελλάδα", "smörgåsbord")
ESCAPED = ("caf%C3%A9", "%C3%BCber", "stra%C3%9Fe", "ni%C3%B1o", "%E6%97%A5%E6%9C%AC", "a%20b", "50%25-off")


def _query(i: int) -> str:
    odd = i % 250  # 0.4%: one of four odd characters in the query
    if odd == 0:
        return f"/{SECTIONS[i % 8]}/page-{i}?ref=a&b=c&q='{i}'"
    if odd == 1:
        return f"/{SECTIONS[i % 8]}/page-{i}?ref=a&b=<c>"
    if odd == 2:
        return f"/{SECTIONS[i % 8]}/page-{i}?ref=a&b=c&q=größe"
    if odd == 3:
        return f"/{SECTIONS[i % 8]}/page-{i}?ref=a&b=c>d"
    return f"/{SECTIONS[i % 8]}/page-{i}?ref=a&b=c"


def _percent(i: int) -> str:
    word = ESCAPED[i % len(ESCAPED)]
    if i % 10 == 3:
        word = word.lower()  # lower-case hex: the rules upper-case it
    if i % 50 == 7:
        word += "-%7Euser"  # an escape of an unreserved character: the rules decode it
    return f"/{SECTIONS[i % 8]}/{word}-{i}"


def _unicode(i: int) -> str:
    return f"/{SECTIONS[i % 8]}/{WORDS[i % len(WORDS)]}-{i}"


def _mixed(i: int) -> str:
    share = i % 100
    section = SECTIONS[i % 8]
    if share < 55:
        return f"/{section}/page-{i}"
    if share < 75:
        return f"/{section}/page-{i}?ref=a&b=c"
    if share < 77:
        return f"/{section}/page-{i}?utm_source=news&id={i}"
    if share == 77:
        return f"/{section}/page-{i}?sid={i}&ref=a"  # a session ID: stripped with a warning
    if share == 78:
        return f"/{section}/page-{i}?q='{i}'&r=<x>"
    if share == 79:
        return f"/{section}/page-{i}?q={WORDS[i % len(WORDS)]}"
    if share < 88:
        return _percent(i)
    if share < 94:
        return _unicode(i)
    if share < 97:
        return f"/{section}/page-{i}#top"
    if share == 97:
        return f"/{section}/a/../page-{i}"
    if share == 98:
        return f":443/{section}/page-{i}"
    return f"/{section.upper()}/Page-{i}"  # the path's case is kept; the scheme and host's are not


SHAPES: dict[str, Callable[[int], str]] = {
    "query": _query,
    "percent": _percent,
    "unicode": _unicode,
    "mixed": _mixed,
}


def url_of(shape: str, i: int) -> str:
    """The URL of page ``i`` of an export of ``shape``, as the export writes it."""
    rest = SHAPES[shape](i)
    if shape == "mixed" and i % 100 == 99:
        return "HTTPS://WWW.EXAMPLE.COM" + rest
    return BASE + rest


def write_shape(path: Path, shape: str, count: int) -> Path:
    """Write ``count`` upsert events with URLs of ``shape``, unless the file already holds exactly them."""
    marker = path.with_suffix(".count")
    stamp = f"{count} of {shape}, v1"
    if path.exists() and marker.exists() and marker.read_text() == stamp:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            body: dict[str, object] = {
                "type": "upsert",
                "url": url_of(shape, i),
                "occurred_at": "2026-11-20T10:00:00Z",
                "version": 1,
                "lastmod": f"2026-{1 + i % 10:02d}-{1 + i % 28:02d}",  # before the tests' now (2026-11-21)
            }
            if i % 10 == 0:
                body["images"] = [{"loc": f"https://cdn.example.com/img/{i}.jpg"}]
            out.write(json.dumps(body, ensure_ascii=False))
            out.write("\n")
    marker.write_text(stamp)
    return path
