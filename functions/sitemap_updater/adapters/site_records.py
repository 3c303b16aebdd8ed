"""DynamoDB: what a site added at run time keeps beside its records, and how its records are all removed.

A site's store (``ManifestStore(prefix="site#<host>#")``) writes every partition key under its prefix. Before it
first writes a page state or an item of a section, it records the section (``<prefix>sections``, sort key the
section; once per section and process). Removing the site then finds every partition key it ever wrote without a
Scan (which would read the whole table, every site's items):

| partition | found from |
|---|---|
| ``<prefix>sec#<section>[#<nn>]`` | the recorded sections and the store's partition count |
| ``<prefix>page#<url id>``, ``<prefix>sent#<url id>`` | the section items' sort keys (``<key>#<url id>``), the
  URLs of the open outboxes (a page state written before its entry) and of its index files (Search Console) |
| ``<prefix>rebuilds#<section>`` | the recorded sections |
| ``files``, ``index``, ``seq#index``, ``outbox``, ``import``, ``parked``, ``held#<channel>``, ``sections`` | fixed
  names under the prefix |

The stack's own site (no prefix) records nothing and cannot be removed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters.dynamo_values import n as _n
from sitemap_updater.adapters.dynamo_values import s as _s
from sitemap_updater.core.formats import ITEMS
from sitemap_updater.core.site_keys import SECTIONS_PK

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The notifiers' channels: what each accepted (``sent#<url id>``, sort key the channel) and holds (``held#<channel>``).
CHANNELS = ("indexnow",)  # service/notify.py INDEXNOW
_FIXED = ("files", "index", "seq#index", "outbox", "import", "parked")


class SiteRecords:
    """The sections a site's store has written, and the removal of every record of the site."""

    _client: DynamoDBClient
    table: str
    prefix: str
    partitions: int
    _registered: set[str]

    def _register(self, section: str) -> None:
        """Record ``section`` as one this site writes (a site added at run time only; once per process)."""
        if not self.prefix or section in self._registered:
            return
        self._client.put_item(
            TableName=self.table,
            Item={"pk": _s(self.prefix + SECTIONS_PK), "sk": _s(section), "v": _n(ITEMS)},
        )
        self._registered.add(section)

    def site_sections(self) -> list[str]:
        """The sections this site has written (recorded before their first write)."""
        return [item["sk"]["S"] for item in self._query(self.prefix + SECTIONS_PK, "sk")]

    def _query(self, pk: str, projection: str = "pk, sk") -> Iterator[dict[str, Any]]:
        pages = self._client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(pk)},
            ProjectionExpression=projection,
            ConsistentRead=True,
        )
        for page in pages:
            yield from page.get("Items", [])

    def delete_site_records(self, urls: Sequence[str] = ()) -> int:
        """Delete every item of this site (its prefix's partitions, found as the module says) and those of ``urls``
        (its index files', whose Search Console submissions it records); the number deleted. Run it again after a
        failure: it finds what is left the same way."""
        if not self.prefix:
            raise ValueError("the stack's own site has no prefix: its records are not removed this way")
        keys: list[dict[str, Any]] = []
        url_ids: set[str] = {url_id_of(url) for url in urls}
        sections = self.site_sections()
        for section in sections:
            names = [f"sec#{section}"]
            if self.partitions > 1:
                names = [f"sec#{section}#{number:02x}" for number in range(self.partitions)]
            for name in names:
                for item in self._query(self.prefix + name):
                    keys.append({"pk": item["pk"], "sk": item["sk"]})
                    url_ids.add(item["sk"]["S"][17:])  # after "<16 hex digits>#"
            keys += [{"pk": item["pk"], "sk": item["sk"]} for item in self._query(f"{self.prefix}rebuilds#{section}")]
        for item in self._query(self.prefix + "outbox", "pk, sk, urls"):
            url_ids.update(url_id_of(url) for url in item.get("urls", {}).get("S", "").split("\n") if url)
        for url_id in sorted(url_ids):
            for kind in ("page", "sent"):
                keys += [{"pk": i["pk"], "sk": i["sk"]} for i in self._query(f"{self.prefix}{kind}#{url_id}")]
        for name in (*_FIXED, *(f"held#{channel}" for channel in CHANNELS)):
            keys += [{"pk": item["pk"], "sk": item["sk"]} for item in self._query(self.prefix + name)]
        # The list of sections last: a removal cut short finds the rest the next time.
        keys += [{"pk": item["pk"], "sk": item["sk"]} for item in self._query(self.prefix + SECTIONS_PK)]
        self._delete_keys(keys)
        self._registered.clear()
        return len(keys)

    def _delete_keys(self, keys: list[dict[str, Any]]) -> None:
        for start in range(0, len(keys), 25):
            pending: Any = {self.table: [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]}
            for _ in range(8):
                pending = self._client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or None
                if not pending:
                    break
            else:
                raise RuntimeError("batch_write_item left deletes unprocessed 8 times; run the removal again")


def url_id_of(url: str) -> str:
    from sitemap_updater.adapters.manifest import url_id

    return url_id(url)
