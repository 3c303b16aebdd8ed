"""Adopt an existing sitemap (or index): its URLs become upsert events, so a site can switch without a CMS export.

XML is parsed with entity resolution and network access off. An index is followed to its sitemaps on the same
host only.
"""

from __future__ import annotations

import gzip
import json
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from lxml import etree

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
IMAGE = "{http://www.google.com/schemas/sitemap-image/1.1}"
MAX_DOWNLOAD = 100 * 1024 * 1024
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True, load_dtd=False)


def fetch(location: str) -> bytes:
    """The bytes of a sitemap from a path or an http(s) URL (at most 100 MiB), gunzipped when needed."""
    if location.startswith(("http://", "https://")):
        request = urllib.request.Request(location, headers={"User-Agent": "sitemap-updater import"})  # noqa: S310
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - http(s) checked above
            data = bytes(response.read(MAX_DOWNLOAD + 1))
        if len(data) > MAX_DOWNLOAD:
            raise ValueError(f"{location}: larger than {MAX_DOWNLOAD:,} bytes")
    else:
        data = Path(location).read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def sitemap_events(location: str, now: datetime | None = None, read: Callable[[str], bytes] = fetch) -> Iterator[str]:
    """Upsert events (as JSON) for every URL of a sitemap, or of every sitemap an index names."""
    moment = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    root = etree.fromstring(read(location), _PARSER)
    if root.tag == f"{NS}sitemapindex":
        host = urlsplit(location).netloc
        for loc in root.iterfind(f"{NS}sitemap/{NS}loc"):
            child = (loc.text or "").strip()
            if host and urlsplit(child).netloc != host:
                continue  # only sitemaps on the same host
            yield from sitemap_events(child if host else str(Path(location).parent / Path(child).name), now, read)
        return
    if root.tag != f"{NS}urlset":
        raise ValueError(f"{location}: not a sitemap (root element {root.tag})")
    for url in root.iterfind(f"{NS}url"):
        event: dict[str, object] = {"type": "upsert", "url": (url.findtext(f"{NS}loc") or "").strip()}
        lastmod = (url.findtext(f"{NS}lastmod") or "").strip()
        event["occurred_at"] = lastmod if "T" in lastmod else moment
        if lastmod:
            event["lastmod"] = lastmod
        for name in ("changefreq", "priority"):
            text = (url.findtext(f"{NS}{name}") or "").strip()
            if text:
                event[name] = text
        images = [{"loc": (i.text or "").strip()} for i in url.iterfind(f"{IMAGE}image/{IMAGE}loc")]
        if images:
            event["images"] = images
        yield json.dumps(event, ensure_ascii=False)
