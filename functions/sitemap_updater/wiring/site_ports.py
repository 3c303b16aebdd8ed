"""A site's view of the stack's ports (issue 32): the same Protocols (ports.py), each scoped to one site's tree
(core/site_keys.py). The services stay single-site: a site's pipeline is the stack's with these ports.

- ``SiteBucket``: every object name under ``sites/<host>/``; listings see the site's objects only, by the names
  the services know. (The stack's own site's bucket, ``SitemapBucket(hide="sites/")``, lists every object but
  the other sites'.)
- ``SiteQueue``: every message names its site (``site`` in its body, core/messages.py), its FIFO group starts with
  the host and its deduplication ID is the site's own. Bodies sent again as they are (a dead letter, a parked
  request) already carry all three.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from sitemap_updater.core.messages import Message, with_site
from sitemap_updater.core.site_keys import SITE_OBJECT_PREFIX, site_dedup, site_group
from sitemap_updater.core.snapshots import SnapshotRef
from sitemap_updater.ports import Bucket, Queue


class SiteBucket:
    """The ``Bucket`` port of a site added at run time: ``prefix`` (``sites/<host>/``) before every name."""

    def __init__(self, bucket: Bucket, prefix: str) -> None:
        if not prefix.startswith(SITE_OBJECT_PREFIX):
            raise ValueError(f"a site's objects are under {SITE_OBJECT_PREFIX}<host>/, not {prefix!r}")
        self._bucket = bucket
        self.prefix = prefix

    def publish(self, name: str, data: bytes, seq: int, unless_same: bool = False, max_age: int | None = None) -> bool:
        return self._bucket.publish(self.prefix + name, data, seq, unless_same, max_age)

    def publish_over(self, name: str, data: bytes, seq: int, etag: str) -> str | None:
        return self._bucket.publish_over(self.prefix + name, data, seq, etag)

    def version(self, name: str) -> int | None:
        return self._bucket.version(self.prefix + name)

    def put_if_absent(self, name: str, data: bytes) -> bool:
        return self._bucket.put_if_absent(self.prefix + name, data)

    def read_snapshot(self, at: SnapshotRef) -> bytes | None:
        return self._bucket.read_snapshot(replace(at, key=self.prefix + at.key))

    def write_snapshots(self, key: str, blocks: list[bytes]) -> None:
        self._bucket.write_snapshots(self.prefix + key, blocks)

    def delete(self, name: str) -> None:
        self._bucket.delete(self.prefix + name)

    def read(self, name: str) -> bytes | None:
        return self._bucket.read(self.prefix + name)

    def names(self, prefix: str = "") -> list[str]:
        return [name[len(self.prefix) :] for name in self._bucket.names(self.prefix + prefix)]

    def objects(self, start_after: str = "") -> Iterator[tuple[str, int]]:
        for name, written in self._bucket.objects(self.prefix + start_after if start_after else self.prefix):
            if not name.startswith(self.prefix):
                return  # past this site's names (a listing is in name order)
            yield name[len(self.prefix) :], written


class SiteQueue:
    """The ``Queue`` port of one site (``host``; never the stack's own site, whose messages are as they were)."""

    def __init__(self, queue: Queue, host: str) -> None:
        self._queue = queue
        self.host = host
        self.url = queue.url
        self.fifo = queue.fifo

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        self._queue.send(
            with_site(body, self.host),
            None if group is None else site_group(self.host, group),
            None if dedup is None else site_dedup(self.host, dedup),
        )

    def send_batch(self, messages: Sequence[Message]) -> None:
        host = self.host
        ours = [
            Message(with_site(m.body, host), site_group(host, m.group), site_dedup(host, m.dedup)) for m in messages
        ]
        self._queue.send_batch(ours)

    def send_raw(self, body: str, attributes: dict[str, str]) -> None:
        self._queue.send_raw(body, attributes)

    def send_raw_grouped(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None) -> None:
        self._queue.send_raw_grouped(body, attributes, group, dedup)

    def defer(self, receipts: list[str], seconds: int) -> None:
        self._queue.defer(receipts, seconds)
