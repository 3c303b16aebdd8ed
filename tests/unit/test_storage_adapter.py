"""The S3 adapter (``SitemapBucket``) on moto for what the simulation's fake S3 answers in its place: the IndexNow
key file written once and never over another's, a missing object read as none, names listed by prefix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.adapters.storage import SitemapBucket

BUCKET = "sitemaps"


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_a_file_put_if_absent_never_replaces_one_already_there(s3: Any) -> None:
    # Given the key file another invocation wrote
    s3.put_object(Bucket=BUCKET, Key="key.txt", Body=b"theirs")
    sent: list[bytes] = []
    s3.meta.events.register(
        "before-send.s3.PutObject", lambda request, **_: sent.append(request.headers.get("If-None-Match", b""))
    )
    # When this one writes it if absent, then again
    bucket = SitemapBucket(s3, BUCKET)
    assert bucket.put_if_absent("key.txt", b"ours") is False
    assert bucket.put_if_absent("key.txt", b"ours") is False  # known to be there: not asked again
    # Then the object is theirs, asked for with the only If-None-Match value S3 accepts, once
    assert bucket.read("key.txt") == b"theirs" and sent == [b"*"]
    assert bucket.put_if_absent("new.txt", b"ours") is True and bucket.read("new.txt") == b"ours"


def test_a_missing_object_reads_as_none_and_names_are_listed_by_prefix(s3: Any) -> None:
    bucket = SitemapBucket(s3, BUCKET)
    assert bucket.read("sitemap.xml") is None and bucket.version("sitemap.xml") is None
    for name in ("sitemap.xml", "sitemap-blog-00000000.xml.gz", "_state/snapshots/a", "_state/feed.json"):
        s3.put_object(Bucket=BUCKET, Key=name, Body=b"x")
    assert sorted(bucket.names("_state/")) == ["_state/feed.json", "_state/snapshots/a"]
    assert len(bucket.names()) == 4


def test_a_rewrite_is_one_put_if_match_the_etag_its_record_kept_and_reads_the_object_only_when_it_changed(
    s3: Any,
) -> None:
    calls: list[str] = []
    for operation in ("HeadObject", "PutObject"):
        s3.meta.events.register(f"before-send.s3.{operation}", lambda request, _o=operation, **_: calls.append(_o))
    bucket = SitemapBucket(s3, BUCKET)
    # Given a file put once, its ETag kept (as its record keeps it)
    first = bucket.publish_over("sitemap-blog.xml.gz", b"one", 10, "")
    assert first is not None and calls == ["HeadObject", "PutObject"]  # no ETag known: the object is read first
    # When the next version is put over that ETag: one request, no HEAD, and the new bytes' ETag comes back
    calls.clear()
    second = bucket.publish_over("sitemap-blog.xml.gz", b"two", 20, first)
    assert second not in (None, first) and calls == ["PutObject"] and bucket.read("sitemap-blog.xml.gz") == b"two"
    # When a put over an ETag the object no longer has (a later version was put): the object is read, and the older
    # version is not written over the newer
    calls.clear()
    assert bucket.publish_over("sitemap-blog.xml.gz", b"old", 15, first) is None
    assert calls == ["PutObject", "HeadObject"] and bucket.read("sitemap-blog.xml.gz") == b"two"
    # And over a deleted object, If-Match finds none (404): it is written as new
    s3.delete_object(Bucket=BUCKET, Key="sitemap-blog.xml.gz")
    assert bucket.publish_over("sitemap-blog.xml.gz", b"three", 30, str(second)) is not None
    assert bucket.read("sitemap-blog.xml.gz") == b"three" and bucket.version("sitemap-blog.xml.gz") == 30
