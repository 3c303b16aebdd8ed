"""The URLs each CMS document was last published at, in the manifest table (``doc#<cms>#<id>`` / ``urls``).

Some CMSs withdraw a document without saying where it was (Contentful's DeletedEntry and Storyblok's unpublish
carry no slug), and a renamed slug leaves the old URL behind: both need the URLs the document had. A write is
conditional on its order (the CMS's revision, then its time), so a late, older webhook cannot overwrite them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def document_pk(cms: str, doc_id: str) -> str:
    return f"doc#{cms}#{doc_id}"


class DocumentUrls:
    """One item per CMS document: its URLs and the order of the webhook that set them."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._client = client
        self._table = table

    def recall(self, cms: str, doc_id: str) -> list[str]:
        """The document's URLs as last remembered (empty when never seen, or withdrawn)."""
        item = self._client.get_item(
            TableName=self._table, Key=self._key(cms, doc_id), ConsistentRead=True, ProjectionExpression="urls"
        ).get("Item")
        return [str(v["S"]) for v in item["urls"]["L"]] if item else []

    def remember(self, cms: str, doc_id: str, urls: list[str], order: str) -> bool:
        """Record ``urls`` unless a webhook of a later order did already; False when it had."""
        item: dict[str, Any] = {
            **self._key(cms, doc_id),
            "urls": {"L": [{"S": url} for url in urls]},
            "doc_order": {"S": order},
        }
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk) OR doc_order <= :order",
                ExpressionAttributeValues={":order": {"S": order}},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    @staticmethod
    def _key(cms: str, doc_id: str) -> dict[str, Any]:
        return {"pk": {"S": document_pk(cms, doc_id)}, "sk": {"S": "urls"}}
