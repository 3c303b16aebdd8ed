"""GET as a crawler does, for ``verify``: gzip accepted, redirects followed on the allowed hosts only, the body
capped (a sitemap file may hold 52,428,800 bytes uncompressed; more is read no further)."""

from __future__ import annotations

import http.client
from urllib.parse import urljoin, urlsplit

from sitemap_updater.ports import Fetched

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "sitemap-updater verify"


class WebFetcher:
    """The ``Fetch`` port over http.client; ``hosts`` are the ``host[:port]`` a redirect may lead to."""

    def __init__(self, hosts: set[str], max_bytes: int = 52_428_800 + 1, timeout: float = 30.0) -> None:
        self._hosts = hosts
        self._max = max_bytes
        self._timeout = timeout

    def __call__(self, url: str) -> Fetched:
        for _ in range(MAX_REDIRECTS + 1):
            parts = urlsplit(url)
            kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            connection = kind(parts.hostname or "", parts.port, timeout=self._timeout)
            try:
                target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                connection.request("GET", target, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"})
                response = connection.getresponse()
                headers = {name.lower(): value for name, value in response.getheaders()}
                if response.status in _REDIRECTS and "location" in headers:
                    location = urljoin(url, headers["location"])
                    if urlsplit(location).netloc.lower() not in self._hosts:
                        return Fetched(url, response.status, headers, b"")  # not followed: verify reports it
                    url = location
                    continue
                body = response.read(self._max)
                return Fetched(url, response.status, headers, body, cut=len(body) >= self._max)
            finally:
                connection.close()
        return Fetched(url, 310, {}, b"")  # too many redirects
