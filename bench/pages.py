"""Deterministic synthetic page exports for benchmarks: 10% with an image, some non-ASCII and '&' URLs."""

from __future__ import annotations

import json
from pathlib import Path

SECTIONS = ("blog", "products", "docs", "news", "help", "about", "shop", "guides")


def write_pages(path: Path, count: int, base: str = "https://www.example.com") -> Path:
    """Write ``count`` upsert events, one per line, unless the file already holds exactly them."""
    marker = path.with_suffix(".count")
    stamp = f"{count} dated before 2026-11-21"  # a file from before its lastmods were all in the past is made again
    if path.exists() and marker.exists() and marker.read_text() == stamp:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            section = SECTIONS[i % len(SECTIONS)]
            slug = f"page-{i}"
            if i % 97 == 0:
                slug += "-über-straße"
            if i % 89 == 0:
                slug += "?a=1&b=2"
            body: dict[str, object] = {
                "type": "upsert",
                "url": f"{base}/{section}/{slug}",
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
