"""Cost per million events at AWS list prices (us-east-1, on-demand), from the operations the incremental
benchmark counted. Two rates: 1 event per second (every change rebuilt on its own) and 50 per second (SQS
batches of 10 fill, so ten changes share a rebuild)."""

from __future__ import annotations

from typing import Any

# USD, us-east-1 list prices as published in 2025 (Lambda arm64, DynamoDB on-demand after the November 2024
# reduction, SQS, S3 Standard, CloudFront invalidations). Change them here if yours differ.
LAMBDA_REQUEST = 0.20 / 1e6
LAMBDA_GB_S = 0.0000133334
SQS_STANDARD = 0.40 / 1e6
SQS_FIFO = 0.50 / 1e6
DDB_WRU = 0.625 / 1e6
DDB_RRU = 0.125 / 1e6
S3_PUT = 0.005 / 1000
S3_GET = 0.0004 / 1000
CF_PATH = 0.005  # beyond the first 1,000 paths a month
ITEM_BYTES = 300  # a manifest item: key, URL and the encoded entry; a strongly consistent read unit is 4 KB
REBUILD_GB = 1.0  # the rebuild function's memory setting (template.yaml); the others have 0.5
OTHER_GB = 0.5
SECONDS_PER_MONTH = 30 * 86_400


def per_million(ops: dict[str, Any], events: int, batch: int, events_per_s: float) -> dict[str, float]:
    """Dollars per million events for one scenario: ``ops`` counted for ``events`` events."""
    scale = 1e6 / events
    sqs = ops["sqs"]
    standard = sum(v for k, v in sqs.items() if k == "IngestQueue") + events  # the CMS's sends
    fifo = sum(v for k, v in sqs.items() if k in ("RebuildQueue", "IndexQueue", "NotifyQueue"))
    # Each message is sent once, then received and deleted in batches of ``batch``.
    sqs_cost = (standard * (1 + 2 / batch) * SQS_STANDARD + fifo * (1 + 2 / batch) * SQS_FIFO) * scale
    invocations = (events + fifo) / batch * scale
    compute = ops["cpu_s"] * scale * REBUILD_GB * LAMBDA_GB_S
    lambda_cost = invocations * LAMBDA_REQUEST + compute + invocations * 0.05 * OTHER_GB * LAMBDA_GB_S
    reads = ops["reads"] * ITEM_BYTES / 4096 * scale
    writes = ops["writes"] * scale * 1.5  # ingest writes in a transaction (2 units per item); the rest 1
    ddb = reads * DDB_RRU + writes * DDB_WRU
    s3 = (ops["s3_puts"] * S3_PUT + ops["s3_heads"] * S3_GET) * scale
    paths_per_month = ops["cdn_paths"] / events * events_per_s * SECONDS_PER_MONTH
    months = 1e6 / (events_per_s * SECONDS_PER_MONTH)
    cdn = max(0.0, paths_per_month - 1000) * CF_PATH * months
    total = lambda_cost + sqs_cost + ddb + s3 + cdn
    return {"lambda": lambda_cost, "sqs": sqs_cost, "dynamodb": ddb, "s3": s3, "cloudfront": cdn, "total": total}
