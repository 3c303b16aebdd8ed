"""A single-site stack's whole footprint for one scenario: every DynamoDB item, every S3 object and every message
sent, through the deployed wiring (``connect_pipeline``) on moto's DynamoDB and S3 in this process.

It uses only what every version since 1.0 has, so that the same scenario run on the code before sites
(``python tests/sites_v1_scenario.py > tests/data/sites_v1_footprint.json`` from a checkout of that version)
gives the footprint tests/unit/test_sites.py compares this version's against: a stack with one ``SiteUrl`` keeps
exactly its keys, objects and messages."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import boto3
from moto import mock_aws

from sitemap_updater.service import marks
from sitemap_updater.service.batches import index_batch, rebuild_batch
from sitemap_updater.service.ingest import ingest_message
from sitemap_updater.settings import Settings
from sitemap_updater.wiring.pipeline import connect_pipeline

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
QUEUES = {"rebuild": "https://sqs/rebuild.fifo", "index": "https://sqs/index.fifo", "notify": "https://sqs/notify.fifo"}


class RecordingSqs:
    """SQS as the pipeline's MessageQueue calls it: each message kept, in order, with its group and ID."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **params: Any) -> dict[str, Any]:
        self.sent.append(params)
        return {"MessageId": f"m{len(self.sent)}"}

    def send_message_batch(self, **params: Any) -> dict[str, Any]:
        """Each entry kept as the one message it is (the footprint is the messages, not how they were sent)."""
        for entry in params["Entries"]:
            self.send_message(QueueUrl=params["QueueUrl"], **{k: v for k, v in entry.items() if k != "Id"})
        return {"Successful": [{"Id": entry["Id"]} for entry in params["Entries"]]}

    def change_message_visibility_batch(self, **params: Any) -> dict[str, Any]:
        return {"Successful": [{"Id": entry["Id"]} for entry in params["Entries"]]}


def _events() -> list[dict[str, Any]]:
    base = "https://www.example.com"
    at = "2026-11-21T10:00:00Z"
    pages = [f"{base}/blog/a", f"{base}/blog/b", f"{base}/news/x", f"{base}/about", f"{base}/blog/c", f"{base}/p/q"]
    events = [{"url": url, "type": "upsert", "occurred_at": at, "lastmod": at} for url in pages]
    events.append({"url": f"{base}/blog/b", "type": "delete", "occurred_at": "2026-11-21T11:00:00Z"})
    events.append({"url": f"{base}/about", "type": "upsert", "occurred_at": "2026-11-21T11:00:00Z"})
    return events


def footprint(site_url: str = "https://www.example.com") -> dict[str, Any]:
    """The scenario's items, objects and messages (see the module)."""
    marks._opened = itertools.count()  # outboxes are told apart by a count kept for the process: from 0, as run alone
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        dynamodb, s3 = session.client("dynamodb"), session.client("s3")
        dynamodb.create_table(
            TableName="manifest",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            BillingMode="PAY_PER_REQUEST",
        )
        s3.create_bucket(Bucket="sitemaps")
        sqs = RecordingSqs()
        settings = Settings(
            site_url=site_url, sections="blog,news", max_urls_per_file=2, text_sitemaps=True, feed_entries=5,
            indexnow_key="footprint-key-0001", manifest_table="manifest", bucket_name="sitemaps",
            rebuild_queue_url=QUEUES["rebuild"], index_queue_url=QUEUES["index"], notify_queue_url=QUEUES["notify"],
            ingest_dlq_url="https://sqs/ingest-dlq",
        )  # fmt: skip
        clients = {"dynamodb": dynamodb, "s3": s3, "sqs": sqs}
        pipeline = connect_pipeline(settings, lambda name, **_: clients[name], clock=lambda: NOW)
        for number, event in enumerate(_events()):
            ingest_message(json.dumps(event), f"event-{number}", pipeline)
        done = 0
        for _ in range(20):  # rebuild and index requests, in the order they were sent, until none is left
            batch = sqs.sent[done:]
            if not batch:
                break
            done = len(sqs.sent)
            for queue, run in (("rebuild", rebuild_batch), ("index", index_batch)):
                records = [
                    {"messageId": f"r{i}", "body": m["MessageBody"],
                     "attributes": {"MessageGroupId": m.get("MessageGroupId"), "ApproximateReceiveCount": "1"}}
                    for i, m in enumerate(batch) if m["QueueUrl"] == QUEUES[queue]
                ]  # fmt: skip
                if records:
                    run(records, pipeline)
        items = sorted(
            (i for page in dynamodb.get_paginator("scan").paginate(TableName="manifest") for i in page["Items"]),
            key=lambda item: (item["pk"]["S"], item["sk"]["S"]),
        )
        objects = {}
        for name in sorted(o["Key"] for o in s3.list_objects_v2(Bucket="sitemaps").get("Contents", [])):
            got = s3.get_object(Bucket="sitemaps", Key=name)
            body = got["Body"].read()
            objects[name] = {
                "sha256": hashlib.sha256(body).hexdigest(),
                "type": got.get("ContentType"),
                "cache": got.get("CacheControl"),
                "meta": got.get("Metadata"),
            }
        return {"items": _plain(items), "objects": objects, "messages": sqs.sent}


def _plain(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items as JSON can hold them (binary attributes as hex)."""
    return [{name: _value(value) for name, value in sorted(item.items())} for item in items]


def _value(value: dict[str, Any]) -> Any:
    ((kind, raw),) = value.items()
    if kind == "B":
        return {"B": bytes(raw).hex()}
    if kind == "L":
        return {"L": [_value(v) for v in raw]}
    if kind == "M":
        return {"M": {k: _value(v) for k, v in sorted(raw.items())}}
    return {kind: raw}


if __name__ == "__main__":
    print(json.dumps(footprint(), indent=1, sort_keys=True))
