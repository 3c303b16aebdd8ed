"""HTTP for notifications: a small client over urllib, so tests can point it at a local receiver; and one bounded
GET over http.client for the sweep's robots.txt check."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.ports import HttpResponse

_CHUNK = 64 * 1024


class HttpClient:
    """Sends requests with an ``OpenerDirector`` (injectable); never raises for an HTTP status."""

    timeout: float = 20.0  # seconds a request may wait on the network (per socket operation)

    def __init__(self, opener: urllib.request.OpenerDirector | None = None, timeout: float = 20.0) -> None:
        self._opener = opener or urllib.request.build_opener()
        self.timeout = timeout

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        """Send ``body`` as JSON (UTF-8) when given. Endpoints come from configuration only."""
        if not url.startswith(("https://", "http://")):
            raise ValueError(f"not an http(s) endpoint: {url!r}")
        data = None
        all_headers = dict(headers or {})
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode()
            all_headers["Content-Type"] = "application/json; charset=utf-8"
        request = urllib.request.Request(url, data=data, headers=all_headers, method=method)  # noqa: S310
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return HttpResponse(response.status, dict(response.headers), response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace") if error.fp else ""
            return HttpResponse(error.code, dict(error.headers or {}), text)

    def get(self, url: str, max_bytes: int, seconds: float) -> HttpResponse:
        """The ``WebGet`` port: one GET, no redirect followed, at most ``max_bytes`` of the body read, all within
        ``seconds`` (a server sending a byte now and then is cut off when the time is up)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise OSError(f"not an http(s) URL: {url!r}")
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        try:
            connection = kind(parts.hostname, parts.port, timeout=max(min(self.timeout, seconds), 0.001))
        except ValueError as exc:  # a port that is no number
            raise OSError(f"not an http(s) URL: {url!r} ({exc})") from None
        watchdog = _Watchdog(connection, seconds)
        try:
            connection.connect()
            watchdog.check()
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            connection.request("GET", target, headers={"User-Agent": "sitemap-updater robots check"})
            response = connection.getresponse()
            headers = {name.lower(): value for name, value in response.getheaders()}
            body = bytearray()
            while len(body) <= max_bytes and (chunk := response.read1(min(_CHUNK, max_bytes + 1 - len(body)))):
                body += chunk
                watchdog.check()
            watchdog.check()
            if len(body) <= max_bytes and response.length:  # http.client ends early, silently, when it closes
                raise OSError(f"the answer was cut short: {response.length:,} of the bytes announced never came")
            text = bytes(body[:max_bytes]).decode("utf-8", "replace")
            return HttpResponse(response.status, headers, text, cut=len(body) > max_bytes)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            watchdog.check()  # the time was up: that is the reason, whatever the socket said
            if isinstance(exc, OSError):
                raise
            raise OSError(f"{type(exc).__name__}: {exc}") from None
        finally:
            watchdog.cancel()
            connection.close()


class _Watchdog:
    """Shuts a connection's socket down once its time is up: a read blocked on a server that sends a byte now and
    then (each within the socket's timeout) ends there, and ``check`` raises TimeoutError from then on."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._connection = connection
        self._timer = threading.Timer(max(seconds, 0.0), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        sock = self._connection.sock
        if sock is not None:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def check(self) -> None:
        if self.expired:
            raise TimeoutError(f"no whole answer within {self.seconds:g} s")

    def cancel(self) -> None:
        self._timer.cancel()
