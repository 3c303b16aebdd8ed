"""CloudFront: one invalidation batch per published change."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_cloudfront import CloudFrontClient


class Invalidator:
    """Invalidates exactly the changed paths of one distribution."""

    def __init__(self, client: CloudFrontClient, distribution_id: str) -> None:
        self._client = client
        self._distribution_id = distribution_id

    def invalidate(self, paths: list[str], caller_reference: str) -> None:
        """One batch; the caller reference is derived from the change, so a retry does not invalidate twice."""
        if not paths:
            return
        self._client.create_invalidation(
            DistributionId=self._distribution_id,
            InvalidationBatch={
                "Paths": {"Quantity": len(paths), "Items": sorted(paths)},
                "CallerReference": caller_reference,
            },
        )
