"""Compare-and-swap under a real race: another writer puts an object between the publisher's read of the current
object (HEAD: its version and ETag) and its conditional PutObject, on the moto server (which answers a failed
``If-Match`` or ``If-None-Match: *`` with 412 PreconditionFailed, as S3 does).

The other writer is a wrapping client: it lets ``SitemapBucket.publish`` make its HEAD, then, before forwarding
the put, writes its own object with the real client. Without ``If-Match`` (or ``If-None-Match``) on the put, the
publisher's older bytes would silently replace the newer ones; these tests fail then."""

from __future__ import annotations

import gzip
import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.messages import DirtyMark
from sitemap_updater.core.sharding import page_key
from sitemap_updater.local.stack import session
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory, bodies

NAME = "sitemap-blog-0000000000000000.xml.gz"


class RacingClient:
    """An S3 client that runs ``before_put`` once, just before the first PutObject of ``name`` it forwards, and
    records how each of those puts ended (the error code S3 answered, or "written")."""

    def __init__(self, client: Any, before_put: Callable[[], None], name: str = NAME) -> None:
        self._client = client
        self._name = name
        self._before_put: Callable[[], None] | None = before_put
        self.puts: list[tuple[dict[str, str], str]] = []  # (the put's condition, how it ended)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def put_object(self, **kwargs: Any) -> Any:
        if kwargs["Key"] != self._name:
            return self._client.put_object(**kwargs)
        if self._before_put is not None:
            race, self._before_put = self._before_put, None
            race()
        condition = {k: v for k, v in kwargs.items() if k in ("IfMatch", "IfNoneMatch")}
        try:
            answer = self._client.put_object(**kwargs)
        except ClientError as exc:
            self.puts.append((condition, exc.response["Error"]["Code"]))
            raise
        self.puts.append((condition, "written"))
        return answer


@pytest.fixture
def s3(moto_endpoint: str) -> Iterator[tuple[Any, str]]:
    client = session().client("s3", endpoint_url=moto_endpoint)
    bucket = f"race-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    yield client, bucket
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)


def _other_writer(client: Any, bucket: str, data: bytes, seq: int) -> Callable[[], None]:
    """Another publisher's put of ``data`` rendered as ``seq`` (unconditional: it wins the race)."""
    return lambda: client.put_object(Bucket=bucket, Key=NAME, Body=data, Metadata={"seq": str(seq)})


def _published(client: Any, bucket: str) -> tuple[bytes, str]:
    found = client.get_object(Bucket=bucket, Key=NAME)
    return found["Body"].read(), found["Metadata"]["seq"]


def test_a_replacing_put_loses_to_a_newer_object_written_after_its_read(s3: tuple[Any, str]) -> None:
    # Given a published file (version 10), and a publisher of version 20 whose HEAD reads it
    client, bucket = s3
    client.put_object(Bucket=bucket, Key=NAME, Body=b"v10", Metadata={"seq": "10"})
    racing = RacingClient(client, _other_writer(client, bucket, b"v30", 30))
    # When version 30 is put between that read and the publisher's put
    written = SitemapBucket(racing, bucket).publish(NAME, b"v20", 20)  # type: ignore[arg-type]
    # Then S3 refuses the publisher's put (its If-Match names version 10's ETag), the publisher looks again, finds
    # a newer version and stops; version 30 stays
    assert racing.puts == [({"IfMatch": '"' + _md5(b"v10") + '"'}, "PreconditionFailed")]
    assert written is False
    assert _published(client, bucket) == (b"v30", "30")


def test_a_new_files_put_loses_to_a_newer_object_written_after_its_read(s3: tuple[Any, str]) -> None:
    # Given no object under the name when the publisher of version 20 reads it
    client, bucket = s3
    racing = RacingClient(client, _other_writer(client, bucket, b"v30", 30))
    # When version 30 is put between that read and the publisher's put
    written = SitemapBucket(racing, bucket).publish(NAME, b"v20", 20)  # type: ignore[arg-type]
    # Then S3 refuses the publisher's put (If-None-Match: *), and version 30 stays
    assert racing.puts == [({"IfNoneMatch": "*"}, "PreconditionFailed")]
    assert written is False
    assert _published(client, bucket) == (b"v30", "30")


def test_a_put_refused_for_an_older_object_written_after_its_read_is_retried_and_wins(s3: tuple[Any, str]) -> None:
    # Given a published file (version 10), and a publisher of version 20 whose HEAD reads it
    client, bucket = s3
    client.put_object(Bucket=bucket, Key=NAME, Body=b"v10", Metadata={"seq": "10"})
    racing = RacingClient(client, _other_writer(client, bucket, b"v15", 15))
    # When an older version (15) is put between that read and the publisher's put
    written = SitemapBucket(racing, bucket).publish(NAME, b"v20", 20)  # type: ignore[arg-type]
    # Then the first put is refused, the publisher reads again and puts against version 15's ETag: version 20 is
    # published, not the one that came in between
    assert racing.puts == [
        ({"IfMatch": '"' + _md5(b"v10") + '"'}, "PreconditionFailed"),
        ({"IfMatch": '"' + _md5(b"v15") + '"'}, "written"),
    ]
    assert written is True
    assert _published(client, bucket) == (b"v20", "20")


def test_a_replacing_put_whose_object_was_deleted_after_its_read_writes_it_as_new(s3: tuple[Any, str]) -> None:
    # Given a published file (version 10) read by a publisher of version 20
    client, bucket = s3
    client.put_object(Bucket=bucket, Key=NAME, Body=b"v10", Metadata={"seq": "10"})
    racing = RacingClient(client, lambda: client.delete_object(Bucket=bucket, Key=NAME))
    # When the object is deleted between that read and the put (S3 answers If-Match on no object with 404 NoSuchKey)
    written = SitemapBucket(racing, bucket).publish(NAME, b"v20", 20)  # type: ignore[arg-type]
    # Then the publisher looks again and writes its bytes as a new object, instead of failing the rebuild
    assert [code for _, code in racing.puts] == ["NoSuchKey", "written"]
    assert racing.puts[1][0] == {"IfNoneMatch": "*"}
    assert written is True
    assert _published(client, bucket) == (b"v20", "20")


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def test_a_rebuild_whose_put_races_a_newer_rebuild_leaves_the_newer_bytes(local_run: LocalRunFactory) -> None:
    # Given a published page, and its update (version 2) recorded but not yet rebuilt
    run = local_run()
    url, name = f"{BASE}/blog/raced", "sitemap-blog-00000000.xml.gz"
    run.send_wave(bodies([event(url, version=1, lastmod="2026-11-01")]))
    pipeline = run.pipeline
    ingest(json.dumps(event(url, version=2, lastmod="2026-11-02")), pipeline)

    def newer_rebuild() -> None:  # version 3 is recorded and published while version 2's rebuild is mid-put
        ingest(json.dumps(event(url, version=3, lastmod="2026-11-03")), pipeline)
        run.drain()

    racing = RacingClient(pipeline.bucket._client, newer_rebuild, name)  # type: ignore[attr-defined]
    pipeline.bucket._client = racing  # type: ignore[attr-defined]
    # When version 2's rebuild has read the file's current object (HEAD) and a newer rebuild publishes before its put
    rebuild_section(pipeline, "blog", [DirtyMark("blog", url=url, key=page_key(url), change="updated")])
    # Then the newer rebuild's put is written, S3 refuses the older one's, and the newer bytes stay
    assert [code for _, code in racing.puts] == ["written", "PreconditionFailed"]
    assert b"2026-11-03" in gzip.decompress(run.published()[name])
