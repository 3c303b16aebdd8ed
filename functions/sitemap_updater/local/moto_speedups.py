"""Make moto's in-memory AWS linear in the size of a local run, without changing what any call answers.

Three of moto's operations cost time proportional to everything stored, on every call, which makes a local
run of a site's first export quadratic (10,000 events did not finish in 15 minutes and took 10 GB):

- ``TransactWriteItems`` deep-copies every table it touches before applying the transaction, to roll back on
  a failed condition. Here the items the transaction names are copied instead and put back on failure.
- ``Query`` sorts every item of the table (every partition) and then keeps the queried partition. Here a
  query on the table's own key reads only that partition. Its answer (and GetItem's) is written as JSON
  directly instead of through moto's generic response serializer, which walks the API model per attribute.
- ``SendMessage`` and ``ReceiveMessage`` compute every attribute of the queue, counts of all its messages
  included, to read one setting (content-based deduplication per message sent, the retention period per
  message received). Here a queue's attributes are computed when they are read, one by one.

One more change brings moto closer to SQS instead of faster: for a FIFO queue SQS "first attempts to return
as many messages with the same message group ID as possible" (ReceiveMessage), while moto returns them in
arrival order across groups. Batches of one group are what the rebuild function coalesces.

:func:`apply` patches moto in this process (idempotent); it checks that the methods it wraps are there and
leaves moto as it is when they are not (a moto version that moved them), so a local run is then slower, not
wrong. Nothing here is imported by the Lambda handlers.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
from collections.abc import Callable, Iterator, MutableMapping
from types import ModuleType
from typing import Any

_state = {"applied": False}
_partition = threading.local()


class _CopyShallowTables(ModuleType):
    """``copy`` as moto's DynamoDB backend sees it: a table is not deep-copied for a rollback (the wrapper
    around ``transact_write_items`` keeps copies of the items the transaction names instead)."""

    def __init__(self, table_type: type) -> None:
        super().__init__("copy")
        self._table_type = table_type

    def deepcopy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, self._table_type):
            return value
        return copy.deepcopy(value, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def apply() -> bool:
    """Patch moto in this process; True when every patch is in place."""
    if _state["applied"]:
        return True
    try:
        from moto.dynamodb import models as dynamodb_models
        from moto.dynamodb.models.dynamo_type import DynamoType
        from moto.dynamodb.models.table import Table
        from moto.dynamodb.responses import DynamoResult
        from moto.sqs import models as sqs_models
    except ImportError:
        return False
    ddb: Any = dynamodb_models  # moto's internals are patched as untyped objects
    sqs: Any = sqs_models
    table: Any = Table
    needed = [
        (ddb.DynamoDBBackend, "transact_write_items"),
        (table, "query"),
        (table, "all_items"),
        (sqs.SQSBackend, "is_message_valid_based_on_retention_period"),
        (sqs.Queue, "messages"),
        (sqs.Queue, "attributes"),
        (sqs.Queue, "BASE_ATTRIBUTES"),
        (sqs.Queue, "FIFO_ATTRIBUTES"),
        (sqs.Queue, "KMS_ATTRIBUTES"),
        (DynamoResult, "execute_result"),
    ]
    if not all(hasattr(owner, name) for owner, name in needed) or getattr(ddb, "copy", None) is not copy:
        return False
    ddb.copy = _CopyShallowTables(Table)
    ddb.DynamoDBBackend.transact_write_items = _item_rollback(ddb.DynamoDBBackend.transact_write_items, DynamoType)
    table.query = _one_partition_query(table.query)
    table.all_items = _partition_items(table.all_items)
    sqs.SQSBackend.is_message_valid_based_on_retention_period = _retention_check
    sqs.Queue.messages = property(_group_first(sqs.Queue.messages.fget))
    sqs.Queue.attributes = property(_QueueAttributes)
    result: Any = DynamoResult
    result.execute_result = _plain_json(result.execute_result)
    _state["applied"] = True
    return True


def _key_of(table: Any, op: dict[str, Any]) -> dict[str, Any] | None:
    if "Key" in op:
        return dict(op["Key"])
    item = op.get("Item", {})
    names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
    return {name: item[name] for name in names} if all(name in item for name in names) else None


def _item_rollback(original: Callable[..., Any], dynamo_type: type) -> Callable[..., Any]:
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        saved: list[tuple[Any, Any, Any, Any]] = []
        for entry in transact_items:
            op: Any = next(iter(entry.values()), {}) if isinstance(entry, dict) else {}
            table = self.tables.get(op.get("TableName")) if isinstance(op, dict) else None
            key = _key_of(table, op) if table is not None else None
            if table is None or key is None:
                continue
            try:
                hash_value = dynamo_type(key[table.hash_key_attr])
                range_value = dynamo_type(key[table.range_key_attr]) if table.range_key_attr else None
                current = table.get_item(hash_value, range_value)
            except Exception:  # noqa: S112 - an invalid key: moto's own validation answers it below
                continue
            saved.append((table, hash_value, range_value, copy.deepcopy(current)))
        try:
            return original(self, transact_items)
        except Exception:
            for table, hash_value, range_value, item in reversed(saved):
                _restore(table, hash_value, range_value, item)
            raise

    return transact_write_items


def _restore(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    if range_value is None:
        if item is None:
            table.items.pop(hash_value, None)
        else:
            table.items[hash_value] = item
        return
    partition = table.items[hash_value]
    if item is None:
        partition.pop(range_value, None)
    else:
        partition[range_value] = item


def _one_partition_query(original: Callable[..., Any]) -> Callable[..., Any]:
    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        # Positional after hash_key: range_comparison, range_objs, limit, exclusive_start_key,
        # scan_index_forward, projection_expressions, index_name.
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None:
            return original(self, hash_key, *args, **kwargs)
        _partition.key = hash_key
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            _partition.key = None

    return query


def _partition_items(original: Callable[..., Any]) -> Callable[..., Any]:
    def all_items(self: Any) -> Any:
        key = getattr(_partition, "key", None)
        if key is None or not self.range_key_attr:
            return original(self)
        return sorted(self.items.get(key, {}).values(), key=lambda item: item.range_key)

    return all_items


_PLAIN_JSON = frozenset({"Query", "GetItem"})


def _plain_json(original: Callable[..., Any]) -> Callable[..., Any]:
    """Query and GetItem answers hold only items ({type: value} maps, bytes for binary) and counts."""

    def execute_result(self: Any, context: Any) -> Any:
        if context.operation_model.name not in _PLAIN_JSON:
            return original(self, context)
        body = json.dumps(_without_none(self.result), default=_base64, separators=(",", ":"))
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, body

    return execute_result


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _base64(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _retention_check(self: Any, queue_name: str, message: Any) -> bool:
    from moto.core.utils import unix_time

    retention = int(self.get_queue(queue_name).message_retention_period)
    return bool(retention + message.sent_timestamp / 1000 > unix_time())


def _group_first(original: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
    def messages(self: Any) -> list[Any]:
        found = original(self)
        if not self.fifo_queue or len(found) < 2:
            return found
        pending = self.pending_message_groups
        first = next((m.group_id for m in found if m.group_id not in pending), None)
        if first is None:
            return found
        return [m for m in found if m.group_id == first] + [m for m in found if m.group_id != first]

    return messages


_UNREAD = object()


class _QueueAttributes(MutableMapping[str, Any]):
    """A queue's attributes as moto's ``Queue.attributes`` gives them (the same names and values, booleans as
    ``"true"``/``"false"``), each computed when it is read."""

    def __init__(self, queue: Any) -> None:
        from moto.core.utils import camelcase_to_underscores

        self._queue = queue
        self._name = camelcase_to_underscores
        names = list(queue.BASE_ATTRIBUTES)
        if queue.fifo_queue:
            names += queue.FIFO_ATTRIBUTES
        if queue.kms_master_key_id:
            names += queue.KMS_ATTRIBUTES
        if queue.policy:
            names.append("Policy")
        if queue.redrive_policy:
            names.append("RedrivePolicy")
        self._values: dict[str, Any] = dict.fromkeys(names, _UNREAD)

    def __getitem__(self, name: str) -> Any:
        value = self._values[name]
        if value is _UNREAD:
            if name == "Policy":
                value = self._queue.policy
            elif name == "RedrivePolicy":
                value = json.dumps(self._queue.redrive_policy)
            else:
                value = getattr(self._queue, self._name(name))
            if isinstance(value, bool):
                value = str(value).lower()
            self._values[name] = value
        return value

    def __setitem__(self, name: str, value: Any) -> None:
        self._values[name] = value

    def __delitem__(self, name: str) -> None:
        del self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)
