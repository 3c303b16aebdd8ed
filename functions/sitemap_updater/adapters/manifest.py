"""DynamoDB: page states, per-section manifests and counters; the published-file records are in
``file_records`` (one class of both).

One table, keys ``pk`` (partition) and ``sk`` (sort); every item but the counters carries its format's version,
``v`` (``core/formats.py``), which its reader checks:

| item | pk | sk | what |
|---|---|---|---|
| page state | ``page#<url id>`` | ``state`` | URL, rank (an update may be newer), kind, section, lastmod, outbox |
| manifest entry | ``sec#<section>[#<nn>]`` | ``<key, 16 hex>#<url id>`` | rank, entry or tombstone, current |
| rebuild number | ``rebuilds#<section>`` | ``seq`` | a counter each rebuild of the section takes, and when it began |
| published file | ``files`` | ``<section>#<range start as 16 hex>`` | range, sha256, lastmod, counts, state, snapshot |
| index | ``index`` | ``index`` | sha256 and generation of the published ``sitemap.xml`` |
| outbox | ``outbox`` | ``<opened, 16 hex>#<batch>`` | the URLs an ingest batch may change, until its marks are sent |
| import running | ``import`` | ``import`` | exists while an import or a bootstrap holds it: execution, run, began |
| parked request | ``parked`` | ``<parked, 16 hex>#<message id>#<nn>`` | one request kept until the import ends |

A sitemap file's manifest is one paginated Query: ``pk = sec#<section> AND sk BETWEEN <start> AND <end>``.
Every key naming a URL takes it through ``url_id``, which keeps keys within DynamoDB's limits.

One partition key takes at most 1,000 write and 3,000 read units a second (docs/architecture.md, "Partitions"), so
a section's entries may be spread over ``partitions`` keys (``SectionPartitions``, a power of two up to 256) by key
range: partition ``nn`` (two hex digits) holds the keys whose top bits are ``nn``, ``sec#<section>#<nn>``. With
one partition (the default) the key is ``sec#<section>`` as in every earlier version. A file's range at depth d
lies in one partition once 2^d >= partitions, else it spans partitions / 2^d of them, read in key order.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sitemap_updater.adapters.backoff import Backoff
from sitemap_updater.adapters.dynamo_values import checked
from sitemap_updater.adapters.dynamo_values import conditional as _conditional
from sitemap_updater.adapters.dynamo_values import n as _n
from sitemap_updater.adapters.dynamo_values import s as _s
from sitemap_updater.adapters.file_records import FileRecords
from sitemap_updater.adapters.site_records import SiteRecords
from sitemap_updater.core.formats import ITEMS
from sitemap_updater.core.pages import EntryItem, PageRecord, PageWrite, SentRecord
from sitemap_updater.core.records import decode_states
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.ports import ImportHold

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_FILES = "files"
_OUTBOX = "outbox"
_PARKED = "parked"
_V = {"v": _n(ITEMS)}  # the format version every item but the counters carries


class StillUnprocessed(RuntimeError):
    """DynamoDB left batch items unprocessed (throughput) on every attempt; the caller's message is retried."""


# DynamoDB's key limits ("Constraints in Amazon DynamoDB", developer guide: partition key values at most 2,048
# bytes, sort key values at most 1,024 bytes, items at most 400 KB). A manifest entry's sort key is the page's key
# (16 hex digits and ``#``) and its URL id, so the id keeps within 1,000 bytes. A canonical URL may have 2,047.
URL_ID_BYTES = 1_000


def url_id(url: str) -> str:
    """How a URL appears in keys: itself up to URL_ID_BYTES bytes; a longer one as its first bytes, a space (which
    no canonical URL holds, so no short URL looks like it) and its SHA-256, so each URL keeps a key of its own."""
    raw = url.encode()
    if len(raw) <= URL_ID_BYTES:
        return url
    head = raw[: URL_ID_BYTES - 65].decode("utf-8", "ignore")
    return f"{head} {hashlib.sha256(raw).hexdigest()}"


def page_pk(url: str) -> str:
    """The partition key of a URL's page state."""
    return f"page#{url_id(url)}"


def sent_pk(url: str) -> str:
    """The partition key of what search engines accepted for a URL."""
    return f"sent#{url_id(url)}"


MAX_PARTITIONS = 256


def check_partitions(partitions: int) -> int:
    """A section's partition count: a power of two from 1 to MAX_PARTITIONS."""
    if not 1 <= partitions <= MAX_PARTITIONS or partitions & (partitions - 1):
        raise ValueError(f"section partitions must be a power of two from 1 to {MAX_PARTITIONS}, not {partitions}")
    return partitions


def _shift(partitions: int) -> int:
    return 64 - (partitions.bit_length() - 1)


def entry_pk(section: str, key: int, partitions: int = 1) -> str:
    """The partition key of a page's manifest entry in its section: ``sec#<section>`` with one partition, else
    ``sec#<section>#<nn>``, ``nn`` the top bits of its key."""
    if partitions == 1:
        return f"sec#{section}"
    return f"sec#{section}#{key >> _shift(partitions):02x}"


def range_partitions(section: str, key_range: KeyRange, partitions: int = 1) -> list[tuple[str, int, int]]:
    """The partition keys a key range of a section lies in, in key order, each with the part of the range
    (``start``, ``end``, half-open) it holds."""
    if partitions == 1:
        return [(f"sec#{section}", key_range.start, key_range.end)]
    shift = _shift(partitions)
    first, last = key_range.start >> shift, (key_range.end - 1) >> shift
    return [
        (f"sec#{section}#{n:02x}", max(key_range.start, n << shift), min(key_range.end, (n + 1) << shift))
        for n in range(first, last + 1)
    ]


def entry_sort_key(key: int, url: str) -> str:
    """The sort key of a page's manifest entry in its section: its key, so a file's range is one Query."""
    return f"{key:016x}#{url_id(url)}"


class ManifestStore(FileRecords, SiteRecords):
    """All DynamoDB access of the pipeline."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        sleep: Callable[[float], None] = time.sleep,
        partitions: int = 1,
        prefix: str = "",
    ) -> None:
        self._client = client
        self.table = table
        # What every partition key starts with: ``site#<host>#`` for a site added at run time, nothing for the
        # stack's own site (core/site_keys.py). A site's store records each section it writes (``sections``).
        self.prefix = prefix
        self._registered: set[str] = set()
        self.partitions = check_partitions(partitions)  # partition keys per section (SectionPartitions)
        # Throttled requests are retried inside the client (botocore's retry mode); these are the retries
        # DynamoDB leaves to the caller: unprocessed batch items.
        self._unprocessed = Backoff(sleep=sleep)
        self._sleep = sleep

    def for_site(self, prefix: str) -> ManifestStore:
        """The store of the site whose partition keys start with ``prefix`` (the same table and client)."""
        if prefix == self.prefix:
            return self
        return ManifestStore(self._client, self.table, sleep=self._sleep, partitions=self.partitions, prefix=prefix)

    # --- page states ---------------------------------------------------------------------------------
    def get_page(self, url: str) -> PageRecord | None:
        item = self._client.get_item(
            TableName=self.table, Key={"pk": _s(self.prefix + page_pk(url)), "sk": _s("state")}, ConsistentRead=True
        ).get("Item")
        return None if item is None else page_record(url, item)

    def _page_item(self, write: PageWrite, outbox: str, entry_rank: str = "") -> dict[str, Any]:
        self._register(write.section)
        kept = {"entry_rank": _s(entry_rank)} if entry_rank and entry_rank != write.rank else {}
        return {
            "pk": _s(self.prefix + page_pk(write.url)),
            "sk": _s("state"),
            **_V,
            "url": _s(write.url),
            "rank": _s(write.rank),
            "kind": _s(write.kind),
            "section": _s(write.section),
            "key": _s(f"{write.key:016x}"),
            "digest": _s(write.digest),
            "lastmod": _s(write.lastmod),
            "change": _s(write.change),
            **({"moved_from": {"L": [_s(left) for left in write.moved_from]}} if write.moved_from else {}),
            "outbox": _s(outbox),
            **({"section_named": {"BOOL": True}} if write.section_named else {}),
            **kept,
        }

    @staticmethod
    def _condition(expected_rank: str | None) -> dict[str, Any]:
        if expected_rank is None:
            return {"ConditionExpression": "attribute_not_exists(pk)"}
        return {
            "ConditionExpression": "#rank = :expected",
            "ExpressionAttributeNames": {"#rank": "rank"},
            "ExpressionAttributeValues": {":expected": _s(expected_rank)},
        }

    def put_state(self, write: PageWrite, expected_rank: str | None, outbox: str, entry_rank: str = "") -> bool:
        """The page state, if it still has ``expected_rank`` (None: no state yet); False when another writer
        changed the page first. Written before the page's manifest items, which it names (``moved_from``).
        ``entry_rank``: the rank of the entry the state keeps, when no entry is written (default: its own)."""
        item = self._page_item(write, outbox, entry_rank)
        return _conditional(
            lambda: self._client.put_item(TableName=self.table, Item=item, **self._condition(expected_rank))
        )

    def put_entry(self, write: PageWrite, outbox: str = "", current: bool = False) -> bool:
        """The page's manifest entry in its section, unless the item there has this rank or a newer one; naming the
        ingest batch's ``outbox``, and ``current`` when it is a live entry the page state names (a later update in
        the section may then replace it alone, ``update_entry``)."""
        return self.write_item(write.section, write, record=True, outbox=outbox, current=current)[0]

    def leave_section(self, section: str, write: PageWrite) -> bool:
        """Replace the page's item in a section it left by a removal marker of the write's rank (no ``record``,
        so no manifest read sees it), unless the item there has this rank or a newer one. A marker rather than a
        delete: an older event still writing its entry there finds a newer rank and changes nothing."""
        return self.write_item(section, write, record=False)[0]

    def _entry_key(self, section: str, key: int, url: str) -> dict[str, Any]:
        return {"pk": _s(self.prefix + entry_pk(section, key, self.partitions)), "sk": _s(entry_sort_key(key, url))}

    def _entry_attributes(self, write: PageWrite, record: bool, outbox: str, current: bool) -> dict[str, Any]:
        return {
            **({"record": {"B": write.record}} if record else {}),
            **({"current": {"BOOL": True}} if current else {}),
            **({"outbox": _s(outbox)} if outbox else {}),
        }

    def write_item(
        self, section: str, write: PageWrite, *, record: bool, outbox: str = "", current: bool = False
    ) -> tuple[bool, EntryItem | None]:
        """The page's item in ``section``: its entry (``record``; ``current`` when it is a live entry the page state
        already names, so that a later update in the section may replace it alone) or a removal marker, unless the
        item there has this rank or a newer one. Returns whether it was written and, when not, the item found."""
        self._register(section)
        item = {**self._entry_key(section, write.key, write.url), **_V, "rank": _s(write.rank)}
        item.update(self._entry_attributes(write, record, outbox, current))
        return self._put_entry_item(item, "attribute_not_exists(pk) OR #rank < :rank", write.rank, {})

    def update_entry(self, write: PageWrite, outbox: str) -> tuple[bool, EntryItem | None]:
        """An update that stays in its section, as one write: the page's entry, only if the item there is
        *current* (a live entry in the section the page state names) and of an older rank. The page state is not
        written: the entry's rank is then newer than the state's, and the entry names the batch's outbox.
        Returns whether it was written and the item it replaced or found (no read unit is billed for either)."""
        self._register(write.section)
        item = {**self._entry_key(write.section, write.key, write.url), **_V, "rank": _s(write.rank)}
        item.update(self._entry_attributes(write, True, outbox, True))
        # Only over an entry of this format: one of a newer version is refused, not overwritten (its reader raises).
        condition = "attribute_exists(#current) AND #rank < :rank AND #v = :v"
        where = f"the {write.section} entry of {write.url}"
        return self._put_entry_item(item, condition, write.rank, {"#current": "current", "#v": "v"}, where)

    def _put_entry_item(
        self, item: dict[str, Any], condition: str, rank: str, names: dict[str, str], where: str = ""
    ) -> tuple[bool, EntryItem | None]:
        try:
            response = self._client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#rank": "rank", **names},
                ExpressionAttributeValues={":rank": _s(rank), **({":v": item["v"]} if "#v" in names else {})},
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            found: Any = exc.response.get("Item")
            return False, None if not found else entry_item(found, where or item["sk"]["S"])
        old: Any = response.get("Attributes")
        return True, None if not old else entry_item(old, where or item["sk"]["S"])

    def entry_item(self, section: str, key: int, url: str) -> EntryItem | None:
        """The page's item in ``section`` (strongly consistent): None when there is none."""
        item = self._client.get_item(
            TableName=self.table, Key=self._entry_key(section, key, url), ConsistentRead=True
        ).get("Item")
        return None if item is None else entry_item(item, f"the {section} entry of {url}")

    def entry_rank(self, section: str, key: int, url: str) -> str | None:
        """The rank of the page's item in ``section`` (strongly consistent): None when there is none."""
        item = self._client.get_item(
            TableName=self.table,
            Key=self._entry_key(section, key, url),
            ConsistentRead=True,
            ProjectionExpression="v, #rank",
            ExpressionAttributeNames={"#rank": "rank"},
        ).get("Item")
        return None if item is None else str(checked(item, ITEMS, f"the {section} entry of {url}")["rank"]["S"])

    def scan_pages(
        self, segment: int, total: int, cursor: dict[str, str] | None, limit: int | None = None
    ) -> tuple[list[PageRecord], dict[str, str] | None]:
        """One page of segment ``segment`` of ``total`` of a parallel Scan of the table, its page states: DynamoDB
        reads up to 1 MB of items (every kind; eventually consistent, half a read unit per 4 KB) and returns the
        page states among them, with where the next page starts (None: the segment is done); ``limit``: at most
        that many items read."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "Segment": segment,
            "TotalSegments": total,
            "FilterExpression": "sk = :state",
            "ExpressionAttributeValues": {":state": _s("state")},
        }
        if limit is not None:
            request["Limit"] = limit
        if cursor is not None:
            request["ExclusiveStartKey"] = {"pk": _s(cursor["pk"]), "sk": _s(cursor["sk"])}
        response = self._client.scan(**request)
        states = f"{self.prefix}page#"  # this site's page states (another site's keys start with site#)
        items = response.get("Items", [])
        records = [page_record(i["url"]["S"], i) for i in items if "url" in i and i["pk"]["S"].startswith(states)]
        last = response.get("LastEvaluatedKey")
        return records, None if not last else {"pk": last["pk"]["S"], "sk": last["sk"]["S"]}

    # --- outboxes: the changes of an ingest batch whose rebuild marks may not have been sent ---------------
    def open_outbox(self, outbox: str, urls: list[str]) -> None:
        """Before an ingest batch records its first change: the URLs it may change (its page states will name
        ``outbox``). While the item exists, those page states' marks may not have been sent."""
        self._client.put_item(
            TableName=self.table,
            Item={"pk": _s(self.prefix + _OUTBOX), "sk": _s(outbox), **_V, "urls": _s("\n".join(urls))},
        )

    def outbox_open(self, outbox: str) -> bool:
        """Whether the batch that wrote ``outbox`` has yet to send its marks (it died, or it is still running)."""
        item = self._client.get_item(
            TableName=self.table,
            Key={"pk": _s(self.prefix + _OUTBOX), "sk": _s(outbox)},
            ConsistentRead=True,
            ProjectionExpression="pk",
        ).get("Item")
        return item is not None

    def close_outbox(self, outbox: str) -> None:
        """The batch's marks are sent."""
        self._client.delete_item(TableName=self.table, Key={"pk": _s(self.prefix + _OUTBOX), "sk": _s(outbox)})

    def outboxes(self, opened_before: str) -> list[tuple[str, list[str]]]:
        """Outboxes still open that were opened before ``opened_before`` (a sort key), with their URLs: one
        Query of one partition, O(open outboxes) whatever the size of the site."""
        found: list[tuple[str, list[str]]] = []
        paginator = self._client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :outbox AND sk < :before",
            ExpressionAttributeValues={":outbox": _s(self.prefix + _OUTBOX), ":before": _s(opened_before)},
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                urls = checked(item, ITEMS, f"outbox {item['sk']['S']}")["urls"]["S"]
                found.append((item["sk"]["S"], urls.split("\n") if urls else []))
        return found

    def import_pages(self, writes: list[PageWrite]) -> None:
        """Bulk-load pages (a site's first import): page states and manifest entries in batches of 25. Not
        conditional: run it before events flow."""
        items: list[dict[str, Any]] = []
        for write in writes:
            items.append(self._page_item(write, ""))
            items.append(
                {
                    "pk": _s(self.prefix + entry_pk(write.section, write.key, self.partitions)),
                    "sk": _s(entry_sort_key(write.key, write.url)),
                    **_V,
                    "rank": _s(write.rank),
                    "record": {"B": write.record},
                    **({"current": {"BOOL": True}} if write.kind == "live" else {}),
                }
            )
        self._batch_write(items)

    # --- manifests ----------------------------------------------------------------------------------
    def entries(self, section: str, key_range: KeyRange) -> list[PageState]:
        """The manifest of one key range of a section (live entries and tombstones), sorted by key and URL: one
        paginated Query of each partition the range lies in, in key order."""
        states: list[PageState] = []
        paginator = self._client.get_paginator("query")
        for pk, start, end in range_partitions(section, key_range, self.partitions):
            low, high = f"{start:016x}#", f"{end - 1:016x}#\x7f"
            for page in paginator.paginate(
                TableName=self.table,
                KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
                ExpressionAttributeValues={":pk": _s(self.prefix + pk), ":low": _s(low), ":high": _s(high)},
                ConsistentRead=True,
            ):
                for item in page.get("Items", []):
                    if "record" in checked(item, ITEMS, f"the {section} entry {item['sk']['S']}"):  # not a marker
                        states.extend(decode_states(item["record"]["B"]))
        return states

    def entries_for(self, section: str, pages: list[tuple[int, str]]) -> list[PageState]:
        """The manifest entries of the given (key, URL) pages of a section, those that exist (BatchGetItem)."""
        keys = [
            {"pk": _s(self.prefix + entry_pk(section, key, self.partitions)), "sk": _s(entry_sort_key(key, url))}
            for key, url in pages
        ]
        items = (checked(item, ITEMS, f"the {section} entry {item['sk']['S']}") for item in self._batch_get(keys))
        found = [item["record"]["B"] for item in items if "record" in item]
        return [state for record in found for state in decode_states(record)]

    def _batch_get(self, keys: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The items of ``keys`` that exist (strongly consistent), 100 keys a request; unprocessed keys are asked
        again with backoff, a bounded number of times."""
        for start in range(0, len(keys), 100):
            request: Any = {self.table: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
            for attempt in range(1, self._unprocessed.attempts + 1):
                response = self._client.batch_get_item(RequestItems=request)
                yield from response.get("Responses", {}).get(self.table, [])
                request = response.get("UnprocessedKeys") or None
                if not request:
                    break
                if attempt == self._unprocessed.attempts:
                    raise StillUnprocessed(f"batch_get_item left keys unprocessed {attempt} times")
                self._unprocessed.pause(attempt)

    # --- notifications ------------------------------------------------------------------------------
    def sent_records(self, urls: list[str], channel: str, now_s: int) -> dict[str, SentRecord]:
        """What ``channel`` last accepted for each URL (records past their expiry are ignored)."""
        found: dict[str, SentRecord] = {}
        by_pk = {self.prefix + sent_pk(url): url for url in urls}
        for item in self._batch_get([{"pk": _s(pk), "sk": _s(channel)} for pk in by_pk]):
            url = by_pk[item["pk"]["S"]]
            if int(checked(item, ITEMS, f"what {channel} accepted for {url}")["expires_at"]["N"]) > now_s:
                found[url] = SentRecord(
                    int(item["quiet_until"]["N"]), item["digest"]["S"], item.get("rank", {}).get("S", "")
                )
        return found

    def mark_sent(
        self,
        digests: dict[str, str],
        channel: str,
        quiet_until_s: int,
        expires_at_s: int,
        ranks: dict[str, str] | None = None,
    ) -> None:
        """Remember which content of each URL ``channel`` accepted (its digest, and the rank of the page state that
        showed it), and until when not to send it again; ``expires_at_s`` is also the table's TTL attribute."""
        ranks = ranks or {}
        items = [
            {"pk": _s(self.prefix + sent_pk(url)), "sk": _s(channel), **_V, "digest": _s(digest),
             "quiet_until": _n(quiet_until_s), "expires_at": _n(expires_at_s),
             **({"rank": _s(ranks[url])} if ranks.get(url) else {})}
            for url, digest in sorted(digests.items())
        ]  # fmt: skip
        self._batch_write(items)

    def _batch_write(self, items: list[dict[str, Any]]) -> None:
        """Put items in batches of 25; unprocessed items (throughput) are sent again after a backoff."""
        for start in range(0, len(items), 25):
            request: Any = {self.table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]}
            for attempt in range(1, self._unprocessed.attempts + 1):
                request = self._client.batch_write_item(RequestItems=request).get("UnprocessedItems") or None
                if not request:
                    break
                if attempt == self._unprocessed.attempts:
                    raise StillUnprocessed(f"batch_write_item left items unprocessed {attempt} times")
                self._unprocessed.pause(attempt)

    # --- index --------------------------------------------------------------------------------------
    def next_rebuild(self, section: str, began_us: int = 0) -> int:
        """A number each rebuild of ``section`` takes, larger than every earlier rebuild's; ``began_us`` (if
        given) is kept as the moment the section's latest rebuild began."""
        values = {":one": _n(1), **({":at": _n(began_us)} if began_us else {})}
        result = self._client.update_item(
            TableName=self.table,
            Key={"pk": _s(f"{self.prefix}rebuilds#{section}"), "sk": _s("seq")},
            UpdateExpression="ADD n :one" + (" SET began_us = :at" if began_us else ""),
            ExpressionAttributeValues=values,
            ReturnValues="UPDATED_NEW",
        )
        return int(result["Attributes"]["n"]["N"])

    def rebuild_times(self, section: str) -> tuple[int, int]:
        """When the latest rebuild of ``section`` began, and when the earliest of its merged rebuild requests is
        due (``hold_due``; 0: not known); strongly consistent (a merge's due is read by the next receive of the
        section's group), one read unit."""
        item = (
            self._client.get_item(
                TableName=self.table,
                Key={"pk": _s(f"{self.prefix}rebuilds#{section}"), "sk": _s("seq")},
                ProjectionExpression="began_us, due_us",
                ConsistentRead=True,
            ).get("Item")
            or {}
        )
        return tuple(int(item[name]["N"]) if name in item else 0 for name in ("began_us", "due_us"))  # type: ignore[return-value]

    def hold_due(self, section: str, due_us: int) -> None:
        """Record that a merged rebuild request of ``section`` must be rebuilt by ``due_us`` (a later request
        ahead of it in the section's FIFO group is then held no longer)."""
        self._client.update_item(
            TableName=self.table,
            Key={"pk": _s(f"{self.prefix}rebuilds#{section}"), "sk": _s("seq")},
            UpdateExpression="SET due_us = :due",
            ExpressionAttributeValues={":due": _n(due_us)},
        )

    def next_index_generation(self) -> int:
        result = self._client.update_item(
            TableName=self.table,
            Key={"pk": _s(self.prefix + "seq#index"), "sk": _s("seq")},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": _n(1)},
            ReturnValues="UPDATED_NEW",
        )
        return int(result["Attributes"]["n"]["N"])

    def index_sha(self) -> str | None:
        item = self._client.get_item(
            TableName=self.table, Key={"pk": _s(self.prefix + "index"), "sk": _s("index")}, ConsistentRead=True
        ).get("Item")
        return str(checked(item, ITEMS, "the index item")["sha256"]["S"]) if item else None

    def put_index_sha(self, sha256: str, generation: int) -> None:
        self._client.put_item(
            TableName=self.table,
            Item={
                "pk": _s(self.prefix + "index"),
                "sk": _s("index"),
                **_V,
                "sha256": _s(sha256),
                "generation": _n(generation),
            },
        )

    # --- a bulk import in progress (``import``): set before its first write, removed after its index --------
    def import_running(self) -> bool:
        item = self._client.get_item(
            TableName=self.table, Key={"pk": _s(self.prefix + "import"), "sk": _s("import")}, ConsistentRead=True
        ).get("Item")
        return item is not None

    def set_import_running(self, running: bool, began_us: int = 0) -> None:
        key = {"pk": _s(self.prefix + "import"), "sk": _s("import")}
        if running:  # an import from the command line: no execution holds it
            self._client.put_item(TableName=self.table, Item={**key, **_V, "began_us": _n(began_us)})
        else:
            self._client.delete_item(TableName=self.table, Key=key)

    def import_hold(self) -> ImportHold | None:
        item = self._client.get_item(
            TableName=self.table, Key={"pk": _s(self.prefix + "import"), "sk": _s("import")}, ConsistentRead=True
        ).get("Item")
        if item is None:
            return None
        checked(item, ITEMS, "the import item")
        return ImportHold(item.get("execution", {}).get("S", ""), item.get("run", {}).get("S", ""),
                          int(item["began_us"]["N"]))  # fmt: skip

    def begin_import(self, hold: ImportHold) -> bool:
        """Hold the import for ``hold.execution`` unless something else holds it (False); a retry of the same
        execution keeps the moment it first began."""
        return _conditional(
            lambda: self._client.update_item(
                TableName=self.table,
                Key={"pk": _s(self.prefix + "import"), "sk": _s("import")},
                UpdateExpression="SET v = :v, execution = :e, run = :r, began_us = if_not_exists(began_us, :b)",
                ConditionExpression="attribute_not_exists(pk) OR execution = :e",
                ExpressionAttributeValues={
                    ":v": _n(ITEMS),
                    ":e": _s(hold.execution),
                    ":r": _s(hold.run),
                    ":b": _n(hold.began_us),
                },
            )
        )

    def end_import(self, execution: str) -> bool:
        """Delete the import item if ``execution`` holds it (False: another, or none, does)."""
        return _conditional(
            lambda: self._client.delete_item(
                TableName=self.table,
                Key={"pk": _s(self.prefix + "import"), "sk": _s("import")},
                ConditionExpression="execution = :e",
                ExpressionAttributeValues={":e": _s(execution)},
            )
        )

    # --- rebuild requests parked while an import or bootstrap runs (``parked``, one item per rebuild batch) ----
    def park(self, parked_id: str, messages: list[tuple[str, str]]) -> bool:
        """Keep a rebuild batch's requests (``(group, body)`` each) until the running import or bootstrap ends,
        only if one still runs (the import item's existence is checked in the same transaction): False when none
        does, and the caller rebuilds at once. One item a request: a rebuild message is under 200,000 bytes, and
        ten of them would not fit one 400 KB item (a transaction takes 100 items and 4 MB)."""
        puts: list[Any] = [
            {"Put": {"TableName": self.table, "Item": {
                "pk": _s(self.prefix + _PARKED), "sk": _s(f"{parked_id}#{number:02d}"), **_V,
                "m": _s(json.dumps([group, body], separators=(",", ":"), ensure_ascii=False)),
            }}}
            for number, (group, body) in enumerate(messages)
        ]  # fmt: skip
        check: Any = {"TableName": self.table, "Key": {"pk": _s(self.prefix + "import"), "sk": _s("import")},
                 "ConditionExpression": "attribute_exists(pk)"}  # fmt: skip
        try:
            self._client.transact_write_items(TransactItems=[{"ConditionCheck": check}, *puts])
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException" and any(
                r.get("Code") == "ConditionalCheckFailed" for r in reasons
            ):
                return False
            raise
        return True

    def parked(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Every parked rebuild request: its item's id and its ``(group, body)``, oldest first."""
        found: list[tuple[str, list[tuple[str, str]]]] = []
        pages = self._client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(self.prefix + _PARKED)},
            ConsistentRead=True,
        )
        for page in pages:
            for item in page.get("Items", []):
                group, body = json.loads(checked(item, ITEMS, f"parked request {item['sk']['S']}")["m"]["S"])
                found.append((item["sk"]["S"], [(group, body)]))
        return found

    def oldest_parked_us(self) -> int | None:
        """When the oldest parked request was parked (its key starts with the moment), or None when none is."""
        items = self._client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(self.prefix + _PARKED)},
            ConsistentRead=True,
            Limit=1,
        ).get("Items", [])
        return int(items[0]["sk"]["S"][:16], 16) if items else None

    def unpark(self, parked_id: str) -> None:
        """A parked batch was sent to the rebuild queue again."""
        self._client.delete_item(TableName=self.table, Key={"pk": _s(self.prefix + _PARKED), "sk": _s(parked_id)})

    # --- changes held back by a quiet window (``held#<channel>``, one item per URL, keyed by its SHA-256) ----
    def held(self, channel: str, now_s: int) -> dict[str, SentRecord]:
        """Changes ``channel`` holds back: for each URL, the digest to announce and the end of the quiet window it
        waits out (``quiet_until_s``). Expired items are ignored."""
        found: dict[str, SentRecord] = {}
        pages = self._client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(f"{self.prefix}held#{channel}")},
        )
        for page in pages:
            for item in page.get("Items", []):
                if int(checked(item, ITEMS, f"a change {channel} holds back")["expires_at"]["N"]) > now_s:
                    found[item["url"]["S"]] = SentRecord(
                        int(item["quiet_until"]["N"]), item["digest"]["S"], item.get("rank", {}).get("S", "")
                    )
        return found

    def hold(self, changes: dict[str, SentRecord], channel: str, expires_at_s: int) -> None:
        """Hold changes back until their quiet window ends; a URL's newer change replaces its older one."""
        self._batch_requests(
            [
                {"PutRequest": {"Item": {
                    **self._held_key(url, channel, self.prefix), **_V, "url": _s(url), "digest": _s(change.digest),
                    "quiet_until": _n(change.quiet_until_s), "expires_at": _n(expires_at_s),
                    **({"rank": _s(change.rank)} if change.rank else {})}}}
                for url, change in sorted(changes.items())
            ]
        )  # fmt: skip

    def release(self, urls: list[str], channel: str) -> None:
        """Forget the held changes of ``urls`` (announced, or made obsolete by a later announcement)."""
        self._batch_requests(
            [{"DeleteRequest": {"Key": self._held_key(url, channel, self.prefix)}} for url in sorted(set(urls))]
        )

    def _batch_requests(self, requests: list[dict[str, Any]]) -> None:
        """BatchWriteItem of puts and deletes, 25 at a time; unprocessed ones are sent again after a backoff."""
        for start in range(0, len(requests), 25):
            pending: Any = {self.table: requests[start : start + 25]}
            for attempt in range(1, self._unprocessed.attempts + 1):
                pending = self._client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or None
                if not pending:
                    break
                if attempt == self._unprocessed.attempts:
                    raise StillUnprocessed(f"batch_write_item left items unprocessed {attempt} times")
                self._unprocessed.pause(attempt)

    @staticmethod
    def _held_key(url: str, channel: str, prefix: str = "") -> dict[str, Any]:
        """A held change's key: one partition per channel (a Query lists them), the URL's SHA-256 as sort key."""
        return {"pk": _s(f"{prefix}held#{channel}"), "sk": _s(hashlib.sha256(url.encode()).hexdigest())}


def entry_item(item: Any, what: str) -> EntryItem:
    """A section's item of a page as read or returned by a write (UnknownFormat for one of another format version).
    ``current`` and ``outbox`` are written only when they say something (absent: not current, no outbox)."""
    checked(item, ITEMS, what)
    return EntryItem(
        item["rank"]["S"],
        bytes(item["record"]["B"]) if "record" in item else b"",
        item.get("current", {}).get("BOOL", False),
        item.get("outbox", {}).get("S", ""),
    )


def page_record(url: str, item: dict[str, Any]) -> PageRecord:
    """A page-state item as read (UnknownFormat for one of another format version). Written only when they say
    something: ``moved_from`` (none: the state removes the page from no section), ``entry_rank`` (none: its own
    rank) and ``section_named`` (none: false)."""
    checked(item, ITEMS, f"the page state of {url}")
    return PageRecord(
        url=url,
        rank=item["rank"]["S"],
        kind=item["kind"]["S"],
        section=item["section"]["S"],
        key=int(item["key"]["S"], 16),
        digest=item["digest"]["S"],
        lastmod=item["lastmod"]["S"],
        change=item["change"]["S"],
        moved_from=tuple(left["S"] for left in item.get("moved_from", {}).get("L", [])),
        outbox=item["outbox"]["S"],
        entry_rank=item.get("entry_rank", item["rank"])["S"],
        section_named=item.get("section_named", {}).get("BOOL", False),
    )
