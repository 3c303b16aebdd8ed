"""DynamoDB: the published-file records (partition ``files``, sort key ``<section>#<range start as 16 hex>``):
their format version, range, sha256, lastmod, counts, state, the block of its snapshot. Part of ``ManifestStore``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters.dynamo_values import checked
from sitemap_updater.adapters.dynamo_values import conditional as _conditional
from sitemap_updater.adapters.dynamo_values import n as _n
from sitemap_updater.adapters.dynamo_values import s as _s
from sitemap_updater.core.formats import FILE_RECORDS
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.core.snapshots import PendingPut, SnapshotRef

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_FILES = "files"


class FileRecords:
    """The published-file records; the store's client and table are its own."""

    _client: DynamoDBClient
    table: str
    prefix: str  # the site's partition keys' prefix (core/site_keys.py)

    def files(self, section: str | None = None) -> list[PublishedFile]:
        """Published-file records, of one section or of all."""
        condition = "pk = :pk"
        values: dict[str, Any] = {":pk": _s(self.prefix + _FILES)}
        if section is not None:
            condition += " AND begins_with(sk, :section)"
            values[":section"] = _s(f"{section}#")
        found: list[PublishedFile] = []
        for page in self._client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        ):
            found.extend(_file_from_item(item) for item in page.get("Items", []))
        return [f for f in found if section is None or f.section == section]

    def put_file(self, published: PublishedFile) -> None:
        self._client.put_item(TableName=self.table, Item=file_item(published, self.prefix))

    def move_file_state(
        self, published: PublishedFile, from_state: str, to_state: str, at_us: int = 0, removals: bool | None = None
    ) -> bool:
        """Change a file record's state only if it is still ``from_state`` with the same content; moving it to
        ``unnamed`` records when (``at_us``); ``removals`` (when given) sets ``removals_pending``."""
        values = {":to": _s(to_state), ":from": _s(from_state), ":sha": _s(published.sha256), ":at": _n(at_us)}
        update = "SET #state = :to, unnamed_us = :at"
        if removals is not None:
            update += ", removals_pending = :removals"
            values[":removals"] = {"BOOL": removals}
        return self._update(published, update, "#state = :from AND sha256 = :sha", values, True)

    def mark_unsettled(
        self, published: PublishedFile, pending: PendingPut | None = None, shown: tuple[SnapshotRef, ...] = ()
    ) -> None:
        """New bytes are about to be put under this record's name (``pending``, with the blocks of bytes earlier
        attempts put, ``shown``), or were found there (reconciliation, without them): until the record is
        rewritten, the bucket may hold either, so no rebuild may skip the file because its content looks
        unchanged."""
        update, values = "SET unsettled = :true", dict[str, Any]({":true": {"BOOL": True}})
        if pending is not None:
            update += ", pending = :pending, shown = :shown"
            values |= {":pending": _s(pending.encode()), ":shown": {"L": [_s(ref.encode()) for ref in shown]}}
        self._update(published, update, "attribute_exists(pk)", values)

    def clear_pending_index(self, published: PublishedFile) -> bool:
        """The index has named this file and its path was invalidated (if it still has the same content)."""
        values = {":false": {"BOOL": False}, ":sha": _s(published.sha256)}
        return self._update(published, "SET pending_index = :false", "sha256 = :sha", values)

    def _update(
        self, published: PublishedFile, update: str, condition: str, values: dict[str, Any], state: bool = False
    ) -> bool:
        """One conditional UpdateItem of a file record (``state``: the expressions name ``#state``); False when
        its condition did not hold."""
        names: Any = {"ExpressionAttributeNames": {"#state": "state"}} if state else {}  # unused names are refused
        return _conditional(
            lambda: self._client.update_item(
                TableName=self.table,
                Key=_file_key(published, self.prefix),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                **names,
            )
        )

    def delete_file(self, published: PublishedFile, state: str) -> bool:
        """Delete a file record only if it is still in ``state``."""
        return _conditional(
            lambda: self._client.delete_item(
                TableName=self.table,
                Key=_file_key(published, self.prefix),
                ConditionExpression="#state = :state",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={":state": _s(state)},
            )
        )


def _file_key(published: PublishedFile, prefix: str = "") -> dict[str, Any]:
    return {"pk": _s(prefix + _FILES), "sk": _s(f"{published.section}#{published.key_range.start:016x}")}


def file_item(published: PublishedFile, prefix: str = "") -> dict[str, Any]:
    """The item of a published-file record (in the partition of the site of ``prefix``)."""
    r = published.key_range
    return {
        **_file_key(published, prefix),
        "v": _n(FILE_RECORDS),
        "section": _s(published.section),
        "start": _n(r.start),
        "end": _n(r.end),
        "depth": _n(r.depth),
        "name": _s(published.name),
        "sha256": _s(published.sha256),
        "lastmod_us": _n(published.lastmod_us),
        "url_count": _n(published.url_count),
        "entry_bytes": _n(published.entry_bytes),
        "state": _s(published.state),
        "news_until_us": _n(published.news_until_us),
        "pending_index": {"BOOL": published.pending_index},
        "unsettled": {"BOOL": published.unsettled},
        "published_us": _n(published.published_us),
        "prev_lastmod_us": _n(published.prev_lastmod_us),
        "unnamed_us": _n(published.unnamed_us),
        "snapshot": _s(published.snapshot.encode()),
        **({"pending": _s(published.pending.encode())} if published.pending is not None else {}),
        **({"shown": {"L": [_s(ref.encode()) for ref in published.shown]}} if published.shown else {}),
        **({"etag": _s(published.etag)} if published.etag else {}),
        **({"removals_pending": {"BOOL": True}} if published.removals_pending else {}),
    }


def _file_from_item(item: dict[str, Any]) -> PublishedFile:
    """A published-file record as read (UnknownFormat for one of another format version); ``pending`` and
    ``shown`` are written only while a rebuild publishes under its name."""
    checked(item, FILE_RECORDS, f"the file record {item['sk']['S']}")
    return PublishedFile(
        section=item["section"]["S"],
        key_range=KeyRange(int(item["start"]["N"]), int(item["end"]["N"]), int(item["depth"]["N"])),
        name=item["name"]["S"],
        sha256=item["sha256"]["S"],
        lastmod_us=int(item["lastmod_us"]["N"]),
        url_count=int(item["url_count"]["N"]),
        entry_bytes=int(item["entry_bytes"]["N"]),
        state=item["state"]["S"],
        news_until_us=int(item["news_until_us"]["N"]),
        pending_index=item["pending_index"]["BOOL"],
        unsettled=item["unsettled"]["BOOL"],
        published_us=int(item["published_us"]["N"]),
        prev_lastmod_us=int(item["prev_lastmod_us"]["N"]),
        unnamed_us=int(item["unnamed_us"]["N"]),
        snapshot=SnapshotRef.decode(item["snapshot"]["S"]),
        pending=PendingPut.decode(item["pending"]["S"]) if "pending" in item else None,
        shown=tuple(SnapshotRef.decode(ref["S"]) for ref in item.get("shown", {}).get("L", [])),
        etag=item.get("etag", {}).get("S", ""),
        removals_pending=item.get("removals_pending", {}).get("BOOL", False),
    )
