"""GET as a crawler does, for ``verify``: gzip accepted, redirects followed on the allowed hosts only, the body
capped (a sitemap file may hold 52,428,800 bytes uncompressed; more is read no further), and the whole request,
from connecting to its last byte, held to a deadline: a server that sends a byte a second never trips a socket's
own timeout, so every read is given only the time left. Whatever the server sends, the answer is a ``Fetched`` or
an OSError naming what was wrong (``Unreachable`` when no connection could be made)."""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

from sitemap_updater.ports import Fetched, Unreachable

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "sitemap-updater verify"


class BrokenAnswer(OSError):
    """An answer a client cannot read as HTTP, or a URL it cannot send."""


class WebFetcher:
    """The ``Fetch`` port over http.client; ``hosts`` are the ``host[:port]`` a redirect may lead to."""

    def __init__(
        self, hosts: set[str], max_bytes: int = 52_428_800 + 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._hosts = hosts
        self._max = max_bytes
        self._clock = clock

    def __call__(self, url: str, timeout: float) -> Fetched:
        deadline = self._clock() + timeout
        for _ in range(MAX_REDIRECTS + 1):
            fetched = self._get(url, deadline)
            location = fetched.headers.get("location")
            if fetched.status not in _REDIRECTS or location is None:
                return fetched
            target = urljoin(url, location)
            if urlsplit(target).netloc.lower() not in self._hosts:
                return fetched  # not followed: verify reports it
            url = target
        raise BrokenAnswer(f"more than {MAX_REDIRECTS} redirects on the site's host")

    def _get(self, url: str, deadline: float) -> Fetched:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise BrokenAnswer(f"not a URL that can be requested: {exc}") from exc
        kind = {"https": http.client.HTTPSConnection, "http": http.client.HTTPConnection}.get(parts.scheme)
        if kind is None:
            raise BrokenAnswer(f"not an http(s) URL: {url}")
        wait = self._left(deadline)
        connection = kind(parts.hostname or "", port, timeout=wait)
        connection.response_class = _response_class(deadline, self._clock)
        try:
            try:
                connection.connect()
            except ssl.SSLError as exc:  # the server answered, with a TLS the client cannot finish
                raise BrokenAnswer(f"TLS: {exc}") from exc
            except TimeoutError as exc:
                if connection.sock is not None:  # connected, and then the TLS handshake was too slow: an answer
                    raise
                raise Unreachable(f"no connection within {wait:.1f} s") from exc
            except (OSError, UnicodeError) as exc:  # name not found, refused, no route; a host IDNA cannot encode
                raise Unreachable(f"{type(exc).__name__}: {exc}") from exc
            return self._answer(connection, url, parts.path, parts.query)
        except (http.client.HTTPException, ValueError) as exc:  # ValueError: a URL http.client will not send
            raise BrokenAnswer(_broken(exc)) from exc
        finally:
            connection.close()

    def _answer(self, connection: http.client.HTTPConnection, url: str, path: str, query: str) -> Fetched:
        target = (path or "/") + (f"?{query}" if query else "")
        connection.request("GET", target, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"})
        response = connection.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        if response.status in _REDIRECTS and "location" in headers:
            return Fetched(url, response.status, headers, b"")
        body = response.read(self._max)
        cut = len(body) >= self._max
        if not cut and response.length:  # http.client returns a body cut short without a word
            raise BrokenAnswer(f"the answer ended after {len(body):,} of the {len(body) + response.length:,} bytes")
        return Fetched(url, response.status, headers, body, cut=cut)

    def _left(self, deadline: float) -> float:
        left = deadline - self._clock()
        if left <= 0:
            raise TimeoutError("the time for this request ran out")
        return left


def _broken(exc: Exception) -> str:
    """What was wrong with an answer, in words (http.client's exceptions name little themselves)."""
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without an answer"
    if isinstance(exc, http.client.BadStatusLine):
        return f"not an HTTP status line: {str(exc)[:200]!r}"
    if isinstance(exc, http.client.LineTooLong):
        return f"a line too long for a client: {exc}"
    if isinstance(exc, http.client.IncompleteRead):
        return f"the answer was cut short or its chunks are malformed ({len(exc.partial):,} bytes read of the last)"
    return f"{type(exc).__name__}: {exc}"[:300]


def _response_class(deadline: float, clock: Callable[[], float]) -> type[http.client.HTTPResponse]:
    """An HTTPResponse whose every read of the socket is given only the time left before ``deadline``."""

    class Response(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            self.fp.close()  # the socket's own buffered reader, replaced by one over the same socket
            self.fp = io.BufferedReader(_DeadlineReader(sock, deadline, clock))

    return Response


class _DeadlineReader(io.RawIOBase):
    """The bytes of a socket, each read waiting at most until ``deadline``. It holds the socket open, as the
    socket's own reader does, until the response is closed (http.client closes the connection's socket as soon as
    the headers say the connection ends, and reads the body after)."""

    def __init__(self, sock: socket.socket, deadline: float, clock: Callable[[], float]) -> None:
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline
        self._clock = clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = self._deadline - self._clock()
        if left <= 0:
            raise TimeoutError("the time for this request ran out while the answer was read")
        self._sock.settimeout(left)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()
