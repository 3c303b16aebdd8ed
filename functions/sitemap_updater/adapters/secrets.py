"""Webhook secrets from Secrets Manager, cached with a time to live.

The value is JSON, one entry per CMS, a string or a list of strings (during a rotation both the old and the new
secret are valid): ``{"contentful": "...", "sanity": ["old", "new"], "strapi": "token"}``. A rotation takes
effect within the TTL without a redeploy, and at once when a signature fails: the value is then read again, at
most once per ``min_refresh_s``, so a flood of bad signatures cannot turn into a flood of reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from sitemap_updater.ports import SecretsUnavailable


def secret_reader(client: Any, secret_id: str) -> Callable[[], str]:
    """Read the secret's value from Secrets Manager (the store the template's policy grants the function)."""
    return lambda: str(client.get_secret_value(SecretId=secret_id)["SecretString"])


class CachedSecrets:
    """The secrets per CMS, read at first use and again after ``ttl_s``; a failed read keeps the last value."""

    def __init__(
        self,
        read: Callable[[], str],
        ttl_s: float = 300.0,
        min_refresh_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._ttl_s = ttl_s
        self._min_refresh_s = min_refresh_s
        self._clock = clock
        self._values: dict[str, tuple[str, ...]] | None = None
        self._read_at = 0.0
        self.last_error: str | None = None

    def secrets(self, cms: str) -> tuple[str, ...]:
        """The valid secrets for ``cms`` (empty when none is configured)."""
        if self._values is None or self._clock() - self._read_at >= self._ttl_s:
            self._load()
        assert self._values is not None
        return self._values.get(cms, ())

    def refresh(self) -> bool:
        """Read again now unless read within ``min_refresh_s``; True when the value was read."""
        if self._values is not None and self._clock() - self._read_at < self._min_refresh_s:
            return False
        self._load()
        return True

    def _load(self) -> None:
        try:
            values = _parse(self._read())
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            if self._values is None:
                raise SecretsUnavailable(self.last_error) from exc
            self._read_at = self._clock()  # keep the last value; try again after the TTL
            return
        self._values = values
        self._read_at = self._clock()
        self.last_error = None


def _parse(text: str) -> dict[str, tuple[str, ...]]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the webhook secret must be a JSON object of CMS names")
    values: dict[str, tuple[str, ...]] = {}
    for cms, value in data.items():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(item, str) for item in items):
            raise ValueError(f"{cms}: a secret must be a string or a list of strings")
        values[str(cms).lower()] = tuple(item for item in items if item)
    return values
