"""S3: publish sitemap files so that older bytes never replace newer ones.

Every object carries a version (``x-amz-meta-seq``): for sitemap files the manifest sequence it was rendered
from and the render time, for the index its generation. A put is a compare-and-swap: it reads the current
object's version and ETag, and writes with ``If-Match`` (or ``If-None-Match: *`` for a new object) only when
its own version is higher. A crash at any point leaves
either the old or the new object, and a retry converges.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from sitemap_updater.core.snapshots import SnapshotRef

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

CONTENT_TYPES = {
    ".xml.gz": "application/gzip",
    ".xml": "application/xml; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".atom": "application/atom+xml; charset=utf-8",
}
_MAX_ATTEMPTS = 8


class StalePublish(RuntimeError):
    """A newer version of the object was published while this one was being written."""


def content_type(name: str) -> str:
    for suffix, kind in CONTENT_TYPES.items():
        if name.endswith(suffix):
            return kind
    return "application/octet-stream"


class SitemapBucket:
    """The private bucket CloudFront serves the sitemaps from."""

    def __init__(self, client: S3Client, bucket: str, max_age_seconds: int = 0, hide: str = "") -> None:
        self._client = client
        self.bucket = bucket
        # Names a listing leaves out unless it asks for them: the other sites' trees (``sites/``) for the stack's
        # own site, whose files are at the root (core/site_keys.py). "": every name.
        self.hide = hide
        # What CloudFront and crawlers may cache; 0 where nothing caches (every request revalidates).
        self._cache_control = f"public, max-age={max_age_seconds}" if max_age_seconds else "no-cache"
        self._present: set[str] = set()  # names put_if_absent has seen in the bucket

    def _current(self, name: str) -> tuple[str, int] | None:
        try:
            head = self._client.head_object(Bucket=self.bucket, Key=name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return head["ETag"], int(head.get("Metadata", {}).get("seq", "0"))

    def publish(self, name: str, data: bytes, seq: int, unless_same: bool = False, max_age: int | None = None) -> bool:
        """Write ``data`` unless an object rendered from a sequence >= ``seq`` is already there (or, with
        ``unless_same``, one of the same bytes: its ETag, the MD5 of a single-part put without KMS, says so).
        ``max_age``: its own cache lifetime, instead of the bucket's.

        Returns True when written, False when a newer (or the same) state was already published.
        """
        return self._publish(name, data, seq, unless_same, max_age) is not None

    def publish_over(self, name: str, data: bytes, seq: int, etag: str) -> str | None:
        """``publish``, first as one put ``If-Match`` the ETag the object's last put answered (``etag``, which its
        record keeps): an object with that ETag is the one that put wrote, so with no HEAD first. When the object
        is another (412), being written (409) or gone (404), the compare-and-swap reads it as ``publish`` does.

        Returns the ETag of the bytes written, or None when a newer state was already published."""
        if etag:
            written = self._put(name, data, seq, {"IfMatch": etag})
            if written is not None:
                return written
        return self._publish(name, data, seq)

    def _publish(
        self, name: str, data: bytes, seq: int, unless_same: bool = False, max_age: int | None = None
    ) -> str | None:
        same = f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"' if unless_same else None
        for _ in range(_MAX_ATTEMPTS):
            current = self._current(name)
            if current is not None and (current[1] >= seq or current[0] == same):
                return None
            condition = {"IfNoneMatch": "*"} if current is None else {"IfMatch": current[0]}
            written = self._put(name, data, seq, condition, max_age)
            if written is not None:
                return written
            # someone wrote in between: look again
        raise StalePublish(f"{name}: the object kept changing during {_MAX_ATTEMPTS} attempts to publish it")

    def version(self, name: str) -> int | None:
        """The version the object under ``name`` was published as (``x-amz-meta-seq``); None when there is none."""
        current = self._current(name)
        return None if current is None else current[1]

    def put_if_absent(self, name: str, data: bytes) -> bool:
        """Write ``data`` unless an object of that name exists (``If-None-Match: *``); True when written.

        For a file whose content never changes under its name (the IndexNow key file). It makes no read, so
        it needs ``s3:PutObject`` only: without ``s3:ListBucket``, S3 answers 403, not 404, for a missing key.
        Once this process has seen the object there, it does not ask again."""
        if name in self._present:
            return False
        written = self._put(name, data, 0, {"IfNoneMatch": "*"})  # None: it exists, or a write of it is in flight
        self._present.add(name)
        return written is not None

    def _put(
        self, name: str, data: bytes, seq: int, condition: dict[str, str], max_age: int | None = None
    ) -> str | None:
        """One conditional put; its ETag, or None when its condition failed (412), a conflicting write was in flight
        (409) or, for an ``If-Match`` put, the object was deleted since it was read (S3 answers 404 NoSuchKey)."""
        try:
            answer = self._client.put_object(
                Bucket=self.bucket,
                Key=name,
                Body=data,
                ContentType=content_type(name),
                CacheControl=self._cache_control if max_age is None else f"public, max-age={max_age}",
                Metadata={"seq": str(seq)},
                **condition,  # type: ignore[arg-type]
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or (
                code == "NoSuchKey" and "IfMatch" in condition
            ):
                return None
            raise
        return str(answer["ETag"])

    def read_snapshot(self, at: SnapshotRef) -> bytes | None:
        """The snapshot block ``at`` names (one ranged GET); None when there is none (a block whose object was
        deleted, or cut short, is none either)."""
        try:
            found = self._client.get_object(
                Bucket=self.bucket, Key=at.key, Range=f"bytes={at.offset}-{at.offset + at.length - 1}"
            )["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "InvalidRange"):
                return None
            raise
        return found if len(found) == at.length else None

    def write_snapshots(self, key: str, blocks: list[bytes]) -> None:
        """Keep ``blocks`` (``core.snapshots.pack_block``) one after another as object ``key``, in one PUT."""
        self._client.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=b"".join(blocks),
            ContentType="application/octet-stream",
            Metadata={"seq": "0"},
        )

    def delete(self, name: str) -> None:
        self._client.delete_object(Bucket=self.bucket, Key=name)

    def read(self, name: str) -> bytes | None:
        try:
            return self._client.get_object(Bucket=self.bucket, Key=name)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                return None
            raise

    def objects(self, start_after: str = "") -> Iterator[tuple[str, int]]:
        """Every object after ``start_after`` in name order, with when it was last written (microseconds), read
        a page of up to 1,000 at a time as the caller goes on."""
        hidden = self.hide and not start_after.startswith(self.hide)
        for name, written in self._objects(start_after):
            if hidden and name.startswith(self.hide):  # skip past every hidden name at once (ASCII hosts)
                yield from self._objects(self.hide + "\U0010ffff")
                return
            yield name, written

    def _objects(self, start_after: str) -> Iterator[tuple[str, int]]:
        for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, StartAfter=start_after):
            for item in page.get("Contents", []):
                yield item["Key"], round(item["LastModified"].timestamp() * 1_000_000)

    def names(self, prefix: str = "") -> list[str]:
        """Every object name in the bucket (that starts with ``prefix``)."""
        names: list[str] = []
        paginator = self._client.get_paginator("list_objects_v2")
        pages = (
            paginator.paginate(Bucket=self.bucket, Prefix=prefix) if prefix else paginator.paginate(Bucket=self.bucket)
        )
        for page in pages:
            names += [item["Key"] for item in page.get("Contents", [])]
        if self.hide and not prefix.startswith(self.hide):
            return [name for name in names if not name.startswith(self.hide)]
        return names
