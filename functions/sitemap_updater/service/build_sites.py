"""One export, several sites (``build --site A --site B``): each line goes to the site of its URL's host, and each
site is built apart from its own lines, as the deployed stack keeps one tree per site (``sites/<host>/``).

A line is read once here to find its host (plain events, EventBridge and SNS envelopes, as the ingest unwraps
them) and copied to its site's file, with its line number in the export kept, so a rejection later names the
export's line. A line whose host cannot be read (not JSON, no URL) goes to the first site, whose build rejects it
with today's reason; a line of a host no ``--site`` names is rejected here, naming the host.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitemap_updater.core.event_rules import oversized_body
from sitemap_updater.core.lines import LongLine, export_lines
from sitemap_updater.core.site_keys import object_prefix
from sitemap_updater.core.urls import Site, UrlError
from sitemap_updater.service.build import Rejection
from sitemap_updater.service.build_input import LONG_LINE

_READ = 1 << 20
_ORIGIN = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]*)")  # a URL's scheme and authority, as written
_URL = re.compile(rb'"url"\s*:\s*"\s*([A-Za-z][A-Za-z0-9+.-]*://[\x21-\x7e]*?)(?=[/?#"\\\s]|$)')
_HOSTS_KEPT = 10_000  # distinct hosts whose canonical form is remembered while splitting


@dataclass
class SiteLines:
    """One site's lines of the export: the file they were copied to, and each one's number in the export."""

    site: Site
    path: Path
    numbers: array[int] = field(default_factory=lambda: array("q"))

    def export_line(self, line: int) -> int:
        """The export's line number of line ``line`` of this site's file (numbered from 1)."""
        return self.numbers[line - 1] if 0 < line <= len(self.numbers) else line


@dataclass
class Split:
    sites: list[SiteLines]
    rejections: list[Rejection]
    lines: int = 0


def site_folder(out: Path, site: Site, first: Site) -> Path:
    """Where a site's tree is written: the first site's in ``out`` itself, every other one's under
    ``out/sites/<host>/``, the layout of the stack's bucket."""
    return out if site.netloc == first.netloc else out / object_prefix(site.netloc)


def split_by_site(source: Path, sites: Sequence[Site], folder: Path) -> Split:
    """Copy each line of ``source`` to its site's file in ``folder``."""
    parts = [SiteLines(site, folder / f"site-{i}.jsonl") for i, site in enumerate(sites)]
    by_host = {part.site.netloc: part for part in parts}
    listed = ", ".join(site.netloc for site in sites)
    split = Split(parts, [])
    canonical: dict[str, str | None] = {}
    handles = {id(part): part.path.open("wb") for part in parts}
    try:
        for number, line in export_lines(_chunks(source), LONG_LINE):
            split.lines = number
            if isinstance(line, LongLine):
                split.rejections.append(Rejection(number, f"(body): {oversized_body(line.size)}"))
                continue
            host = _host(line, canonical)
            part = parts[0] if host is None else by_host.get(host)
            if part is None:
                reason = f"url: host {host!r} is not one of the sites given with --site ({listed})"
                split.rejections.append(Rejection(number, reason))
                continue
            handles[id(part)].write(line + b"\n")
            part.numbers.append(number)
    finally:
        for handle in handles.values():
            handle.close()
    return split


def _chunks(source: Path) -> Iterator[bytes]:
    with source.open("rb") as handle:
        while chunk := handle.read(_READ):
            yield chunk


def _host(line: bytes, canonical: dict[str, str | None]) -> str | None:
    """The canonical host (and port) of the line's event URL, or None when it has none that can be read."""
    origin = _plain_origin(line)
    if origin is None:
        origin = _decoded_origin(line)
    if origin is None:
        return None
    if origin not in canonical:
        if len(canonical) >= _HOSTS_KEPT:
            canonical.clear()
        try:
            canonical[origin] = Site.parse(origin).netloc
        except UrlError:
            canonical[origin] = None
    return canonical[origin]


def _plain_origin(line: bytes) -> str | None:
    """The origin of a plain event's URL read from its bytes without decoding the JSON: only when ``"url"`` occurs
    once (a key of a nested object, or twice, takes the JSON path), no envelope is named, and the origin is
    written out whole (ended by ``/``, ``?``, ``#`` or the string's end, not an escape)."""
    if line.count(b'"url"') != 1 or b'"detail-type"' in line or b'"Notification"' in line:
        return None
    found = _URL.search(line)
    if found is None or line[found.end() : found.end() + 1] not in (b"/", b"?", b"#", b'"'):
        return None
    return found.group(1).decode("ascii")


def _decoded_origin(line: bytes) -> str | None:
    try:
        data: Any = json.loads(line.removeprefix(b"\xef\xbb\xbf"))
        for _ in range(3):  # EventBridge's detail, SNS's Message: as the ingest unwraps them
            if isinstance(data, dict) and "detail" in data and "detail-type" in data:
                data = data["detail"]
            elif isinstance(data, dict) and data.get("Type") == "Notification" and isinstance(data.get("Message"), str):
                data = json.loads(data["Message"])
            else:
                break
    except (ValueError, RecursionError):
        return None
    url = data.get("url") if isinstance(data, dict) else None
    found = _ORIGIN.match(url) if isinstance(url, str) else None
    return None if found is None else found.group(1)
