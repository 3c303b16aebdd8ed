"""DynamoDB: the sites added to a stack at run time, one item each in the manifest table.

| item | pk | sk | what |
|---|---|---|---|
| site | ``sites`` | ``<host>`` | ``v``, ``site``: the site's configuration as JSON (``sites.py``), ``state`` |
| mark | ``sites#marks`` | ``<kind>#<host>`` | ``v``, ``at``: when it was last written, µs (service/site_marks.py) |
| cursor | ``sites#marks`` | ``cursor#<job>`` | ``v``, ``host``: the last site a scheduled job's run visited |

The functions read one site by its host (GetItem, eventually consistent: half a read unit; cached,
``wiring/sites.py``); ``sites list`` reads the partition (Query). The scheduled functions read the marks of a kind
with one Query of their partition (strongly consistent: a mark just written is seen).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters.dynamo_values import checked
from sitemap_updater.adapters.dynamo_values import conditional as _conditional
from sitemap_updater.adapters.dynamo_values import n as _n
from sitemap_updater.adapters.dynamo_values import s as _s
from sitemap_updater.core.formats import ITEMS
from sitemap_updater.core.site_keys import MARKS_PK, SITES_PK
from sitemap_updater.sites import SiteConfig

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class SiteItems:
    """The ``SiteDirectory`` port on the manifest table."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._client = client
        self.table = table

    def get_site(self, host: str) -> SiteConfig | None:
        item = self._client.get_item(TableName=self.table, Key={"pk": _s(SITES_PK), "sk": _s(host)}).get("Item")
        return None if item is None else site_from_item(item)

    def put_site(self, site: SiteConfig) -> None:
        self._client.put_item(TableName=self.table, Item=site_item(site))

    def delete_site(self, host: str) -> None:
        self._client.delete_item(TableName=self.table, Key={"pk": _s(SITES_PK), "sk": _s(host)})

    def list_sites(self) -> list[SiteConfig]:
        sites: list[SiteConfig] = []
        pages = self._client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(SITES_PK)},
            ConsistentRead=True,
        )
        for page in pages:
            sites += [site_from_item(item) for item in page.get("Items", [])]
        return sites

    def mark(self, kind: str, host: str, at_us: int) -> None:
        item = {"pk": _s(MARKS_PK), "sk": _s(f"{kind}#{host}"), "v": _n(ITEMS), "at": _n(at_us)}
        self._client.put_item(TableName=self.table, Item=item)

    def marks(self, kind: str) -> dict[str, int]:
        found: dict[str, int] = {}
        pages = self._client.get_paginator("query").paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :kind)",
            ExpressionAttributeValues={":pk": _s(MARKS_PK), ":kind": _s(f"{kind}#")},
            ConsistentRead=True,
        )
        for page in pages:
            for item in page.get("Items", []):
                checked(item, ITEMS, f"the mark {item['sk']['S']}")
                found[item["sk"]["S"].removeprefix(f"{kind}#")] = int(item["at"]["N"])
        return found

    def unmark(self, kind: str, host: str, at_us: int | None = None) -> bool:
        key = {"pk": _s(MARKS_PK), "sk": _s(f"{kind}#{host}")}
        if at_us is None:
            self._client.delete_item(TableName=self.table, Key=key)
            return True
        return _conditional(
            lambda: self._client.delete_item(
                TableName=self.table,
                Key=key,
                ConditionExpression="#at = :at",
                ExpressionAttributeNames={"#at": "at"},
                ExpressionAttributeValues={":at": _n(at_us)},
            )
        )

    def cursor(self, job: str) -> str:
        key = {"pk": _s(MARKS_PK), "sk": _s(f"cursor#{job}")}
        item = self._client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        if item is None:
            return ""
        checked(item, ITEMS, f"the cursor of {job}")
        return str(item["host"]["S"])

    def set_cursor(self, job: str, host: str) -> None:
        item = {"pk": _s(MARKS_PK), "sk": _s(f"cursor#{job}"), "v": _n(ITEMS), "host": _s(host)}
        self._client.put_item(TableName=self.table, Item=item)


def site_item(site: SiteConfig) -> dict[str, Any]:
    """A site's item: its host as sort key, its configuration as JSON (the fields it sets)."""
    fields = site.model_dump(exclude_defaults=True, exclude={"state"})
    return {
        "pk": _s(SITES_PK),
        "sk": _s(site.host),
        "v": _n(ITEMS),
        "site": _s(json.dumps(fields, sort_keys=True, separators=(",", ":"))),
        "state": _s(site.state),
    }


def site_from_item(item: dict[str, Any]) -> SiteConfig:
    """A site as stored (UnknownFormat for an item of another format version)."""
    checked(item, ITEMS, f"the site item of {item['sk']['S']}")
    return SiteConfig.parse({**json.loads(item["site"]["S"]), "state": item["state"]["S"]})
