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
