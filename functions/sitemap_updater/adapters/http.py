"""HTTP for notifications: a small client over urllib, so tests can point it at a local receiver."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from sitemap_updater.ports import HttpResponse


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
