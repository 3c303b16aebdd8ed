"""What a deployed stack does with data of a format version it does not read (written by another version of
sitemap-updater): through the real handlers on moto, the message that meets it ends in its dead-letter queue with
the reason, and everything else still publishes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.adapters.manifest import ManifestStore, page_pk
from sitemap_updater.core.formats import UnknownFormat
from sitemap_updater.local.stack import session
from sitemap_updater.service.ingest import ingest
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory, bodies
from tests.integration.test_dead_letters import _dead_letters

READS = "; this version of sitemap-updater reads version 1 only"


def test_an_item_and_a_message_of_another_version_are_dead_lettered_with_their_reason(
    local_run: LocalRunFactory,
) -> None:
    # Given a published page whose page state was written by a version of another format
    run = local_run()
    old = f"{BASE}/blog/a"
    ingest(json.dumps(event(old, version=1)), run.pipeline)
    store = run.pipeline.store
    assert isinstance(store, ManifestStore)
    store._client.update_item(
        TableName=store.table, Key={"pk": {"S": page_pk(old)}, "sk": {"S": "state"}},
        UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "2"}},
    )  # fmt: skip
    # and a rebuild request of that format on the rebuild queue
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    newer = json.dumps({"v": 2, "section": "blog", "key": "0000000000000000"})
    sqs.send_message(QueueUrl=run.stack.queue_url("RebuildQueue"), MessageBody=newer, MessageGroupId="blog",
                     MessageDeduplicationId="newer")  # fmt: skip
    # When a deletion of that page (which reads its page state: an update that stays in its section writes its entry
    # alone) and an event for another page arrive
    report = run.send_wave(bodies([event(old, version=2, type="delete"), event(f"{BASE}/blog/b", version=1)]))
    # Then the event is dead-lettered, after its receives, with the reason naming the item and the versions
    [dead_event] = _dead_letters(run, "IngestDeadLetterQueue")
    reason = dead_event["MessageAttributes"]["reason"]["StringValue"]
    assert reason.endswith(f": UnknownFormat: the page state of {old} is of format version 2{READS}")
    assert reason.startswith("failed on all ") and json.loads(dead_event["Body"])["version"] == 2
    # and so is the request, as it came
    [dead_request] = _dead_letters(run, "RebuildDeadLetterQueue")
    assert dead_request["Body"] == newer
    reason = dead_request["MessageAttributes"]["reason"]["StringValue"]
    assert reason.endswith(f"receives: UnknownFormat: a rebuild request is of format version 2{READS}")
    # And the other page, and the first version of the page, were published
    assert sorted(set(report.changed_urls)) == [old, f"{BASE}/blog/b"]  # old: its first version
    assert {error.split(":")[0] for error in run.errors} == {"IngestFunction"}  # its receives before the last
    assert [d for p in run.stack.policies.values() for d in p.denied] == []


def test_an_update_never_overwrites_an_entry_of_another_version(local_run: LocalRunFactory) -> None:
    # Given a page whose manifest entry was written by a version of another format
    run = local_run()
    url = f"{BASE}/blog/a"
    ingest(json.dumps(event(url, version=1)), run.pipeline)
    store = run.pipeline.store
    assert isinstance(store, ManifestStore)

    def entries() -> list[Any]:
        return store._client.query(TableName=store.table, KeyConditionExpression="pk = :pk",
                                   ExpressionAttributeValues={":pk": {"S": "sec#blog"}})["Items"]  # fmt: skip

    [entry] = entries()
    store._client.update_item(
        TableName=store.table, Key={"pk": entry["pk"], "sk": entry["sk"]},
        UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "2"}},
    )  # fmt: skip
    # When an update that stays in its section arrives, it is refused with the reason naming the entry
    with pytest.raises(UnknownFormat, match=f"the blog entry of {url} is of format version 2"):
        ingest(json.dumps(event(url, version=2, title="x")), run.pipeline)
    # and the entry is left as the other version wrote it
    [after] = entries()
    assert after == {**entry, "v": {"N": "2"}}
