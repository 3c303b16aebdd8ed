"""One file as ``verify`` read it, and the checks of its bytes against what its headers say.

A client unpacks what ``Content-Encoding`` names and nothing else; a file whose name ends ``.gz`` (or sent as
``application/gzip``) is a gzip file, unpacked once more by whoever reads it; any other file is read as it comes.
So the headers, the name and the bytes must agree: gzip bytes behind a ``.xml`` without ``Content-Encoding: gzip``
are binary to a crawler, and ``Content-Encoding: gzip`` on bytes that are not gzip is an error to any client.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.core.sharding import MAX_BYTES_PER_FILE

_GZIP_TYPES = ("application/gzip", "application/x-gzip")
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(slots=True)
class FileCheck:
    """One file as read: what it answered, what it holds, and what is wrong with it."""

    url: str
    kind: str  # robots.txt, index, sitemap (XML), text sitemap
    status: int | None = None
    content_type: str = ""
    content_encoding: str = ""
    cache_control: str = ""
    bytes: int = 0  # uncompressed
    entries: int = 0  # URLs of a sitemap, sitemaps of an index
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_headers(check: FileCheck, types: tuple[str, ...], gzipped: bool) -> None:
    """Content-Type one of ``types`` (or a gzip type, for a gzip file), and the other headers a crawler minds."""
    media = check.content_type.partition(";")[0].strip().lower()
    if media in types or (gzipped and media in _GZIP_TYPES):
        pass
    elif media in ("", "application/octet-stream", "binary/octet-stream"):
        check.notes.append(f"Content-Type {media or '(none)'}: crawlers sniff the file, a specific type is safer")
    else:
        check.problems.append(f"Content-Type {check.content_type}: not a sitemap's")
    if check.content_encoding.strip().lower() == "gzip" and urlsplit(check.url).path.endswith(".gz"):
        check.notes.append("a .gz file sent with Content-Encoding gzip: some clients unpack it once only")
    if not check.cache_control:
        check.notes.append("no Cache-Control: CDNs and crawlers may keep it as long as they like")


def decoded(check: FileCheck, body: bytes) -> tuple[bytes, bool] | None:
    """The file as its name says it is, and whether it was a gzip file (its name or Content-Type says so, or
    its bytes are); None when it cannot be read (reported). What the headers say must match the bytes: a
    client unpacks what Content-Encoding names, and reads a .xml sent without one as it is."""
    data = body
    encoding = check.content_encoding.strip().lower()
    unpacked_once = encoding in ("gzip", "x-gzip")
    if unpacked_once:
        if data[:2] != _GZIP_MAGIC:
            check.problems.append(
                f"Content-Encoding {check.content_encoding}, but the body is not gzip: a client that unpacks it "
                "gets an error"
            )
            return None
        unpacked = _gunzip(check, data)
        if unpacked is None:
            return None
        data = unpacked
    elif encoding not in ("", "identity"):
        check.problems.append(
            f"Content-Encoding {check.content_encoding}: not asked for (Accept-Encoding: gzip), so not read"
        )
        return None
    media = check.content_type.partition(";")[0].strip().lower()
    says_gzip = urlsplit(check.url).path.endswith(".gz") or media in _GZIP_TYPES
    if data[:2] != _GZIP_MAGIC:
        if says_gzip and not unpacked_once:
            check.problems.append("named .gz or sent as gzip, but not gzip: a client that unpacks it gets an error")
        return data, False
    if unpacked_once and not says_gzip:
        check.problems.append("gzip inside Content-Encoding gzip, for a file not named .gz: a crawler reads binary")
    elif not says_gzip:
        check.problems.append(
            "gzip bytes without Content-Encoding gzip, a .gz name or a gzip Content-Type: a crawler reads binary"
        )
    unpacked = _gunzip(check, data)
    return None if unpacked is None else (unpacked, True)


def _gunzip(check: FileCheck, data: bytes) -> bytes | None:
    inflate = zlib.decompressobj(wbits=31)
    try:
        out = inflate.decompress(data, MAX_BYTES_PER_FILE + 1)
    except zlib.error as exc:
        check.problems.append(f"not valid gzip: {exc}")
        return None
    if len(out) > MAX_BYTES_PER_FILE or inflate.unconsumed_tail:
        check.problems.append(f"more than {MAX_BYTES_PER_FILE:,} bytes uncompressed: over the limit")
        return None
    return out
