"""The bytes of one file adoption reads, as a stream: over HTTP(S) with redirects on the allowed hosts only and
within the file's and the adoption's time, gunzipped a chunk at a time, capped.

A server that sends a byte now and then (each within the socket's timeout) is cut off when the file's time or
the adoption's is up: a watchdog shuts the connection's socket down, which ends a read blocked on it.
"""

from __future__ import annotations

import hashlib
import http.client
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from sitemap_updater.core.urls import Site, UrlError, canonical_page_url, normalise_host

GZIP_MAGIC = b"\x1f\x8b"
MAX_REDIRECTS = 5
CHUNK = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FileError(Exception):
    """One file cannot be read (fully): the rest of the adoption goes on."""


class Stop(Exception):
    """The adoption cannot go on (a limit on the whole adoption)."""


@dataclass(frozen=True, slots=True)
class Timing:
    """How long reading may take: ``end`` of the whole adoption (a ``time.monotonic`` value, after
    ``total_seconds``), one file's ``file_seconds``, one network operation's ``socket_seconds``."""

    end: float
    total_seconds: float
    file_seconds: float
    socket_seconds: float

    def check(self) -> None:
        if time.monotonic() >= self.end:
            raise self.total_error()

    def total_error(self) -> Stop:
        return Stop(f"adoption stopped: it took {self.total_seconds:,g} s, the most an adoption takes (--max-seconds)")

    def file_error(self) -> FileError:
        return FileError(
            f"not read within {self.file_seconds:,g} s, the most one file may take (the server sends too slowly); "
            "the rest not read"
        )


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def host_of(url: str) -> str:
    """Host and port (when not the default), compared to decide whether a URL may be read."""
    parts = urlsplit(url)
    try:
        host, port = normalise_host(parts.hostname or ""), parts.port
    except (UrlError, ValueError):
        return ""
    return host if port in (None, 80, 443) else f"{host}:{port}"


def file_key(target: str, session_params: frozenset[str]) -> bytes:
    """A file's identity: its canonical URL (host in lower case, default port, percent-encoding and dot segments
    normalised, session IDs, an empty query and the fragment dropped, parameters in sorted order), or its path;
    as a 16-byte digest, so that 100,000 of them take a few MB."""
    key = target
    if is_url(target):
        parts = urlsplit(target)
        try:
            own = Site.parse(f"{parts.scheme}://{parts.netloc}", session_params=session_params)
            key = canonical_page_url(target, own)
        except (UrlError, ValueError):
            pass
        path, _, query = key.partition("?")
        key = path + ("?" + "&".join(sorted(query.split("&"))) if query else "")
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def http_chunks(url: str, hosts: set[str], timing: Timing) -> Iterator[bytes]:
    """The body of ``url``, following redirects on ``hosts`` only, within the file's time and the adoption's."""
    timing.check()
    started = time.monotonic()
    file_end = started + timing.file_seconds
    for _ in range(MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        left = min(file_end, timing.end) - time.monotonic()
        if left <= 0:
            raise timing.file_error() if file_end < timing.end else timing.total_error()
        connection = kind(parts.hostname or "", parts.port, timeout=min(timing.socket_seconds, left))
        watchdog = _Watchdog(connection, left, timing.file_error() if file_end < timing.end else timing.total_error())
        try:
            connection.connect()
            watchdog.check()
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            headers = {"User-Agent": "sitemap-updater adopt", "Accept-Encoding": "gzip"}
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
            if response.status in _REDIRECTS:
                location = urljoin(url, response.getheader("Location") or "")
                if not is_url(location) or host_of(location) not in hosts:
                    raise FileError(f"redirects to {location}, off the site's host: not followed")
                url = location
                continue
            if response.status != 200:
                raise FileError(f"HTTP {response.status} {response.reason}")
            while chunk := response.read1(CHUNK):
                watchdog.check()
                yield chunk
            watchdog.check()
            if response.length:  # http.client ends early, without an error, when the connection closes
                raise FileError(f"download cut short: {response.length:,} of the bytes announced never came")
            return
        except (OSError, http.client.HTTPException):
            watchdog.check()  # the time was up: that is the reason, whatever the socket said
            raise
        finally:
            watchdog.cancel()
            connection.close()
    raise FileError(f"more than {MAX_REDIRECTS} redirects")


class _Watchdog:
    """Shuts a connection's socket down once its time is up; ``check`` raises the limit's error from then on."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float, error: Exception) -> None:
        self.expired = False
        self._error = error
        self._end = time.monotonic() + seconds
        self._connection = connection
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        sock = self._connection.sock
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def check(self) -> None:
        # By the clock too: a socket timeout of the same length may end a read before the timer's thread runs.
        if self.expired or time.monotonic() >= self._end:
            raise self._error

    def cancel(self) -> None:
        self._timer.cancel()


def file_chunks(path: str) -> Iterator[bytes]:
    with Path(path).open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def peek_bytes(chunks: Iterator[bytes], count: int) -> tuple[bytes, Iterator[bytes]]:
    """The stream's first chunks, as few as give ``count`` bytes (fewer when it is shorter), and the whole
    stream again. No more is read than that: an error further on comes after the pages before it."""
    read: list[bytes] = []
    for chunk in chunks:
        read.append(chunk)
        if sum(map(len, read)) >= count:
            break
    first = b"".join(read)
    return first, chain(first, chunks)


def chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def capped(chunks: Iterator[bytes], limit: int, kind: str) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise FileError(f"more than {limit:,} bytes {kind}, the limit per file; read stopped there")
        yield chunk


def peek_head(chunks: Iterator[bytes], skip: bytes) -> tuple[bytes, Iterator[bytes]]:
    """The stream's first two bytes past any of ``skip`` (a byte order mark, white space; b"" when there are
    none), and the whole stream again."""
    read: list[bytes] = []
    for chunk in chunks:
        read.append(chunk)
        head = chunk.lstrip(skip)
        if head:
            return head[:2], chain(b"".join(read), chunks)
    return b"", iter(read)


def gunzip(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Gunzip a stream of one or more gzip members, never more than a chunk at a time; zero bytes or bytes
    that start no member after the last one (padding) are ignored, as gzip does. A later member that starts as
    one (gzip's magic number) but is damaged is an error, as gzip reports it."""
    inflate, finished, fed, produced, padding = zlib.decompressobj(wbits=31), 0, False, False, True
    head = b""  # the first bytes given to the member being read
    for data in chunks:
        while data or fed:
            if finished and not produced:
                padding = padding and not data.strip(b"\0")
            if len(head) < len(GZIP_MAGIC):
                head += data[: len(GZIP_MAGIC) - len(head)]
            try:
                piece = inflate.decompress(data, CHUNK)
            except zlib.error as exc:
                if finished and not produced and not head.startswith(GZIP_MAGIC):
                    return
                raise FileError(f"not valid gzip ({exc})") from None
            fed, produced = fed or bool(data), produced or bool(piece)
            if piece:
                yield piece
            if inflate.eof:
                data, finished = inflate.unused_data, finished + 1
                inflate, fed, produced, padding, head = zlib.decompressobj(wbits=31), False, False, True, b""
                continue
            data = inflate.unconsumed_tail
            if not data and len(piece) < CHUNK:
                break
    if fed and not (finished and not produced and padding):
        raise FileError("gzip data cut short")
