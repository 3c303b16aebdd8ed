"""The DynamoDB calls the simulation fakes at the client level, so the real ``ManifestStore`` code runs on them:
ingest's conditional ``PutItem`` calls (a failed condition is ``ConditionalCheckFailedException``, as AWS answers,
and is billed like a write by ``bench/meter.py``) and ``GetItem`` of an entry's rank, and the batch calls (partial
results). Every write passes DynamoDB's size limits: partition key 2,048 bytes, sort key 1,024 bytes, item 400 KB.
A page whose URL is in ``FakeStore.refused_urls`` is refused on every write (a fault that persists). With a
``FakeStore.throughput`` (``tests/sim/throughput.py``), ingest's writes and reads of single items take their units
from their partition key's and the table's limits at the virtual time of the call: a throttled attempt waits
botocore's backoff (virtual time passes), and one throttled on the fourth attempt raises
``ProvisionedThroughputExceededException`` as the client would."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters.manifest import entry_pk, page_pk, page_record, url_id
from sitemap_updater.core.pages import SentRecord
from sitemap_updater.core.site_keys import SECTIONS_PK, SITE_PK_PREFIX
from tests.sim.faults import aws_error

if TYPE_CHECKING:
    from tests.sim.fakes import FakeStore

MAX_PARTITION_KEY = 2048
_ON_FAILURE = "ReturnValuesOnConditionCheckFailure"
MAX_SORT_KEY = 1024
MAX_ITEM = 400 * 1024


def _value_size(value: dict[str, Any]) -> int:
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(raw.encode())
    if kind == "B":
        return len(raw)
    if kind == "N":
        return len(raw.lstrip("-").replace(".", "")) // 2 + 1
    if kind == "L":  # 3 bytes, and each element's size and 1 byte
        return 3 + sum(_value_size(element) + 1 for element in raw)
    if kind == "M":
        return 3 + sum(len(name.encode()) + _value_size(element) + 1 for name, element in raw.items())
    return 1  # BOOL, NULL


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB's item size: the UTF-8 length of each attribute name plus the size of its value."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def check_key(key: dict[str, Any], operation: str) -> None:
    """A key over DynamoDB's limits is refused before anything is written."""
    if len(key["pk"]["S"].encode()) > MAX_PARTITION_KEY:
        message = "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of 2048 bytes"  # noqa: E501
        raise aws_error("ValidationException", operation, 400, message)
    if len(key["sk"]["S"].encode()) > MAX_SORT_KEY:
        message = "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes"  # noqa: E501
        raise aws_error("ValidationException", operation, 400, message)


def section_of(pk: str, sk: str, partitions: int) -> str:
    """The section of a manifest item's partition key, which must be the one its readers query for its key
    (``entry_pk``): an entry under any other key would be missing from its file, whatever the fakes' dictionaries
    (keyed by section) hold."""
    assert pk.startswith("sec#"), pk
    section = pk[4:] if partitions == 1 else pk[4:-3]
    assert pk == entry_pk(section, int(sk[:16], 16), partitions), f"{sk} written under {pk}, which no reader queries"
    return section


def check_item(item: dict[str, Any], operation: str) -> None:
    check_key(item, operation)
    if item_size(item) > MAX_ITEM:
        raise aws_error("ValidationException", operation, 400, "Item size has exceeded the maximum allowed size")


class FakeDynamoClient:
    """The client-level calls, applied to a :class:`FakeStore`'s dictionaries, one atomic step each."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store

    def _throttle(self, pk: str, kind: str, units: float, operation: str) -> None:
        """Take ``units`` from the limits of ``pk`` and the table, as botocore's attempts would (see the module)."""
        throughput = self._store.throughput
        if throughput is None:
            return
        waited, served = throughput.request(pk, kind, units, self._store.clock.now)
        self._store.sleep(waited)
        if not served:
            message = "The level of configured provisioned throughput for the table was exceeded."
            raise aws_error("ProvisionedThroughputExceededException", operation, 400, message)

    def _local(self, item: dict[str, Any]) -> dict[str, Any]:
        """An item or key with its site's prefix taken off its partition key (each site's store is a FakeStore of
        its own); a key without the prefix would be another site's, which the store must never write."""
        prefix = self._store.prefix
        if not prefix:
            assert not item["pk"]["S"].startswith(SITE_PK_PREFIX), f"the stack's own site wrote {item['pk']['S']}"
            return item
        assert item["pk"]["S"].startswith(prefix), f"{item['pk']['S']} written by the store of {prefix}"
        return {**item, "pk": {"S": item["pk"]["S"][len(prefix) :]}}

    def _record_section(self, section: str) -> dict[str, Any]:
        self._store.sections.add(section)
        return {}

    def put_item(self, TableName: str, Item: dict[str, Any], **condition: Any) -> dict[str, Any]:  # noqa: N803
        self._throttle(Item["pk"]["S"], "write", max(1, math.ceil(item_size(Item) / 1024)), "PutItem")
        check_item(Item, "PutItem")
        local = self._local(Item)
        if local["pk"]["S"] == SECTIONS_PK:  # a site records a section it writes (adapters/site_records.py)
            return dict(self._store._call("put_item", lambda: self._record_section(local["sk"]["S"])))
        return dict(self._store._call("put_item", lambda: self._put(local, condition)))

    def _put(self, item: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
        """Ingest's conditional puts: a page state (compare-and-swap on its rank) or a section's item of a page
        (an entry or a removal marker, only where there is no item or one of a lower rank)."""
        store = self._store
        check_item(item, "PutItem")
        prefix = item["pk"]["S"].partition("#")[0]
        expression, values = condition.get("ConditionExpression"), condition.get("ExpressionAttributeValues", {})
        if prefix == "page":
            url = item["url"]["S"]
            assert item["pk"]["S"] == page_pk(url), "a page state under another key"
            current = store.pages.get(url)
            if expression == "attribute_not_exists(pk)":
                holds = current is None
            else:
                assert expression == "#rank = :expected", expression
                holds = current is not None and current.rank == values[":expected"]["S"]
        else:
            assert prefix == "sec", f"the fake does not know PutItem on {item['pk']['S']}"
            section = section_of(item["pk"]["S"], item["sk"]["S"], store.aws.partitions)
            url = next((u for u in store.refused_urls if item["sk"]["S"].endswith(f"#{url_id(u)}")), "")
            ranked = store.entry_ranks.get((section, item["sk"]["S"]))  # None: no item
            old = self.entry(section, item["sk"]["S"])
            if expression == "attribute_exists(#current) AND #rank < :rank AND #v = :v":  # an update written alone
                holds = (old is not None and "current" in old and old["rank"]["S"] < values[":rank"]["S"]
                         and old.get("v") == values[":v"])  # fmt: skip
            else:
                assert expression == "attribute_not_exists(pk) OR #rank < :rank", expression
                holds = ranked is None or ranked < values[":rank"]["S"]
        if url in store.refused_urls:
            message = "One or more parameter values were invalid: refused by the simulation"
            raise aws_error("ValidationException", "PutItem", 400, message)
        if not holds:
            found = {"Item": old} if prefix == "sec" and old is not None and condition.get(_ON_FAILURE) else {}
            raise aws_error("ConditionalCheckFailedException", "PutItem", 400, "The conditional request failed",
                            **found)  # fmt: skip
        if prefix == "page":
            store.pages[url] = page_record(url, item)
            return {}
        sk = item["sk"]["S"]
        store.manifest.setdefault(section, {})[sk] = item.get("record", {}).get("B", b"")
        store.entry_ranks[(section, sk)] = item["rank"]["S"]
        store.entry_tags[(section, sk)] = ("current" in item, item.get("outbox", {}).get("S", ""))
        return {"Attributes": old} if old is not None and condition.get("ReturnValues") == "ALL_OLD" else {}

    def entry(self, section: str, sk: str) -> dict[str, Any] | None:
        """A section's item of a page as DynamoDB would return it, or None."""
        store = self._store
        if sk not in store.manifest.get(section, {}):
            return None
        record = store.manifest[section][sk]
        current, outbox = store.entry_tags.get((section, sk), (False, ""))
        return {"v": {"N": "1"}, "rank": {"S": store.entry_ranks[(section, sk)]},
                **({"record": {"B": record}} if record else {}), **({"current": {"BOOL": True}} if current else {}),
                **({"outbox": {"S": outbox}} if outbox else {})}  # fmt: skip

    def get_item(self, TableName: str, Key: dict[str, Any], **options: Any) -> dict[str, Any]:  # noqa: N803
        """A section's item of a page, as ``entry_rank`` asks for it (its key and rank)."""
        self._throttle(Key["pk"]["S"], "read", 1, "GetItem")

        def get() -> dict[str, Any]:
            check_key(Key, "GetItem")
            assert options.get("ConsistentRead"), "the fake reads only a section's item of a page, strongly"
            local = self._local(Key)
            section = section_of(local["pk"]["S"], local["sk"]["S"], self._store.aws.partitions)
            found = self.entry(section, local["sk"]["S"])
            return {} if found is None else {"Item": found}

        return dict(self._store._call("get_item", get))

    def batch_write_item(self, RequestItems: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:  # noqa: N803
        def write() -> dict[str, Any]:
            ((table, requests),) = RequestItems.items()
            for request in requests:
                check_item(request["PutRequest"]["Item"], "BatchWriteItem")
            left = self._store._sched.faults.unprocessed(self._store._sched.faults_on(), len(requests))
            for request in requests[: len(requests) - left]:
                item = request["PutRequest"]["Item"]
                sent = SentRecord(int(item["quiet_until"]["N"]), item["digest"]["S"], item.get("rank", {}).get("S", ""))
                self._store.sent[(item["pk"]["S"], item["sk"]["S"])] = (int(item["expires_at"]["N"]), sent)
            return {"UnprocessedItems": {table: requests[len(requests) - left :]} if left else {}}

        return dict(self._store._call("batch_write_item", write))

    def batch_get_item(self, RequestItems: dict[str, dict[str, Any]]) -> dict[str, Any]:  # noqa: N803
        def read() -> dict[str, Any]:
            ((table, request),) = RequestItems.items()
            keys = request["Keys"]
            left = self._store._sched.faults.unprocessed(self._store._sched.faults_on(), len(keys))
            items = []
            for key in keys[: len(keys) - left]:
                check_key(key, "BatchGetItem")
                found = self._store.sent.get((key["pk"]["S"], key["sk"]["S"]))
                if found is not None:
                    expires, sent = found
                    numbers = {"expires_at": {"N": str(expires)}, "quiet_until": {"N": str(sent.quiet_until_s)}}
                    rank = {"rank": {"S": sent.rank}} if sent.rank else {}
                    items.append({**key, "v": {"N": "1"}, **numbers, "digest": {"S": sent.digest}, **rank})
            unprocessed = {table: {**request, "Keys": keys[len(keys) - left :]}} if left else {}
            return {"Responses": {table: items}, "UnprocessedKeys": unprocessed}

        return dict(self._store._call("batch_get_item", read))
