"""The DynamoDB calls the simulation fakes at the client level, so the real ``ManifestStore`` code runs on them:
``TransactWriteItems`` (conditions, cancellation reasons), and the batch calls (partial results). Every write
passes DynamoDB's size limits: partition key 2,048 bytes, sort key 1,024 bytes, item 400 KB. A page whose URL
is in ``FakeStore.refused_urls`` is refused on every write (a fault that persists)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters.manifest import page_pk, page_record
from sitemap_updater.core.pages import SentRecord
from tests.sim.faults import aws_error

if TYPE_CHECKING:
    from tests.sim.fakes import FakeStore

MAX_PARTITION_KEY = 2048
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


def check_item(item: dict[str, Any], operation: str) -> None:
    check_key(item, operation)
    if item_size(item) > MAX_ITEM:
        raise aws_error("ValidationException", operation, 400, "Item size has exceeded the maximum allowed size")


class FakeDynamoClient:
    """The client-level calls, applied to a :class:`FakeStore`'s dictionaries, one atomic step each."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store

    def transact_write_items(self, TransactItems: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803
        return dict(self._store._call("transact_write_items", lambda: self._transact(TransactItems)))

    def _transact(self, actions: list[dict[str, Any]]) -> dict[str, Any]:
        store = self._store
        reasons: list[dict[str, str]] = []
        for action in actions:
            ((kind, spec),) = action.items()
            check_key(spec.get("Item") or spec["Key"], "TransactWriteItems")
            if kind == "Put" and spec["Item"]["pk"]["S"].startswith("page#"):
                assert spec["Item"]["pk"]["S"] == page_pk(spec["Item"]["url"]["S"]), "a page state under another key"
            if kind == "Put" and spec["Item"].get("url", {}).get("S") in store.refused_urls:
                message = "One or more parameter values were invalid: refused by the simulation"
                raise aws_error("ValidationException", "TransactWriteItems", 400, message)
            if kind == "Put" and item_size(spec["Item"]) > MAX_ITEM:
                reasons.append(
                    {"Code": "ValidationError", "Message": "Item size has exceeded the maximum allowed size"}
                )
            elif kind == "Put" and "ConditionExpression" in spec and not self._holds(spec):
                reasons.append({"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"})
            else:
                reasons.append({"Code": "None"})
        if any(r["Code"] != "None" for r in reasons):
            codes = ", ".join(r["Code"] for r in reasons)
            message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"
            raise aws_error("TransactionCanceledException", "TransactWriteItems", 400, message,
                            CancellationReasons=reasons)  # fmt: skip
        for action in actions:
            ((kind, spec),) = action.items()
            pk = (spec.get("Item") or spec["Key"])["pk"]["S"]
            prefix, _, name = pk.partition("#")
            if kind == "Put" and prefix == "page":
                url = spec["Item"]["url"]["S"]
                store.pages[url] = page_record(url, spec["Item"])
            elif kind == "Put" and prefix == "sec":
                store.manifest.setdefault(name, {})[spec["Item"]["sk"]["S"]] = spec["Item"]["record"]["B"]
            elif kind == "Delete" and prefix == "sec":
                store.manifest.get(name, {}).pop(spec["Key"]["sk"]["S"], None)
            elif kind == "Update" and prefix == "seq":
                store.seqs[name] = store.seqs.get(name, 0) + 1
            else:
                raise AssertionError(f"the fake does not know {kind} on {pk}")
        return {}

    def _holds(self, spec: dict[str, Any]) -> bool:
        page = self._store.pages.get(spec["Item"]["url"]["S"])
        if spec["ConditionExpression"] == "attribute_not_exists(pk)":
            return page is None
        assert spec["ConditionExpression"] == "#rank = :expected"
        return page is not None and page.rank == spec["ExpressionAttributeValues"][":expected"]["S"]

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
                    items.append({**key, **numbers, "digest": {"S": sent.digest}, **rank})
            unprocessed = {table: {**request, "Keys": keys[len(keys) - left :]}} if left else {}
            return {"Responses": {table: items}, "UnprocessedKeys": unprocessed}

        return dict(self._store._call("batch_get_item", read))
