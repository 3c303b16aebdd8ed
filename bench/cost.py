"""Dollars per million events at AWS list prices (us-east-1, on-demand, no free tier), from what
``bench/meter.py`` counted while ``bench/traffic.py`` ran the real handlers.

Billing rules applied (AWS pricing pages and developer guides, as published in 2025):

- Lambda (arm64): $0.20 per million requests plus $0.0000133334 per GB-s, duration rounded up to 1 ms per
  invocation. Duration = the service's CPU measured here, scaled by the share of a core the memory setting buys
  (1,769 MB is one vCPU, so 512 MB runs CPU-bound code about 3.5x slower), plus a stated latency per AWS call
  (``LATENCY_S``: typical same-region round trips). The CPU is this machine's (x86_64), taken as equal to
  Graviton's. Cold starts (init is billed since August 2025) are not counted: at these rates containers stay warm.
- SQS: $0.40 per million standard requests, $0.50 FIFO; each 64 KB of a payload is one request. Sends are
  counted as made; the event source mappings receive at most 10 messages per ReceiveMessage and delete with
  DeleteMessageBatch (10 per request). Idle long polling (``IDLE_POLLS_PER_HOUR`` per queue a function reads) is a
  fixed cost per hour, charged to the sustained rates only, like one run of the hourly sweep and upkeep each.
- DynamoDB on-demand: $0.625 per million write request units, $0.125 per million read request units (after the
  November 2024 reduction); the unit rules are in ``bench/meter.py``.
- S3 Standard: PUT and LIST $0.005 per 1,000, GET and HEAD $0.0004 per 1,000, DELETE free; storage not counted.
- CloudFront: the stack makes no invalidations. Crawler fetches are counted as an assumption: ``CRAWLERS`` crawlers
  each fetch the index and every file that changed, at most ``CRAWLS_PER_HOUR`` times an hour at a sustained
  rate (and each changed file once after a burst); every fetch is a cache miss (5 s lifetime), so one HTTPS
  request ($0.0100 per 10,000, North America), its bytes out ($0.085 per GB) and one S3 GET at the origin.
- CloudWatch: the bytes of every log line and EMF metric the handlers print, plus Lambda's own START, END and
  REPORT lines (``PLATFORM_LOG_BYTES`` per invocation), at $0.50 per GB ingested; for the sustained rates also
  the fixed monthly price of the custom metrics the handlers emit ($0.30 each), the template's alarms ($0.10
  each) and dashboard ($3), shared by a month's events.
- Not counted: log storage, X-Ray, KMS, S3 and DynamoDB storage, Search Console and IndexNow (free APIs; their
  time is in the notify function's duration)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LAMBDA_REQUEST = 0.20 / 1e6
LAMBDA_GB_S = 0.0000133334
SQS_PRICE = {"standard": 0.40 / 1e6, "fifo": 0.50 / 1e6}
DDB_WRU = 0.625 / 1e6
DDB_RRU = 0.125 / 1e6
S3_PRICE = {"PUT": 0.005 / 1000, "LIST": 0.005 / 1000, "GET": 0.0004 / 1000, "DELETE": 0.0}
CF_REQUEST = 0.0100 / 10_000
CF_GB = 0.085
LOGS_GB = 0.50
METRIC_MONTH, ALARM_MONTH, DASHBOARD_MONTH = 0.30, 0.10, 3.00  # an alarm is billed per metric it reads
KMS_KEY_MONTH = 1.00  # a customer managed key (the alarm topic's: CloudWatch cannot publish under aws/sns)
HOURS_PER_MONTH = 730
PLATFORM_LOG_BYTES = 330  # Lambda's START, END and REPORT lines of one invocation
CRAWLERS = 2  # Google and Bing fetch what changed
CRAWLS_PER_HOUR = 4  # how often each re-reads a changing sitemap at most
ONE_VCPU_MB = 1769
IDLE_POLLS_PER_HOUR = 5 * 3600 / 20  # assumed: five pollers per event source mapping, 20 s long polls
# Stated latency of each AWS call inside a Lambda function in the same region (seconds).
LATENCY_S = {
    "GetItem": 0.004,
    "PutItem": 0.006,
    "UpdateItem": 0.006,
    "DeleteItem": 0.006,
    "Query": 0.008,
    "Scan": 0.008,  # a page of a parallel Scan (a re-section): as a Query
    "BatchGetItem": 0.010,
    "BatchWriteItem": 0.015,
    "TransactWriteItems": 0.015,
    "s3:HEAD": 0.015,
    "s3:GET": 0.020,
    "s3:PUT": 0.035,
    "s3:DELETE": 0.020,
    "s3:LIST": 0.030,
    "s3:bytes/s": 50e6,  # transfer rate between Lambda and S3, added to PUT time per byte
    "sqs:SendMessage": 0.010,
    "sqs:SendMessageBatch": 0.012,
    "sqs:ChangeMessageVisibility": 0.010,
    "http:POST": 0.150,
}
LINES = ("Lambda", "SQS", "DynamoDB", "S3", "CloudFront", "CloudWatch")


def cpu_scale(memory_mb: int) -> float:
    """How much longer CPU-bound code runs on a function of ``memory_mb`` than on one full core."""
    return max(1.0, ONE_VCPU_MB / memory_mb)


def dollars(usage: Mapping[str, Any], memory_mb: Mapping[str, int], crawl: Mapping[str, float]) -> dict[str, float]:
    """The bill of what ``usage`` (function name -> ``meter.Usage``) consumed, by line. ``crawl``: what the
    crawlers fetch through CloudFront (``fetches``, ``bytes``)."""
    bill = dict.fromkeys(LINES, 0.0)
    for function, used in usage.items():
        gb = memory_mb.get(function, 0) / 1024
        if gb:
            bill["Lambda"] += used.invocations * LAMBDA_REQUEST + used.billed_ms / 1000 * gb * LAMBDA_GB_S
        bill["SQS"] += sum(SQS_PRICE[kind] * n for kind, n in used.sqs.items())
        bill["DynamoDB"] += used.rru * DDB_RRU + (used.wru + used.gsi_wru) * DDB_WRU
        bill["S3"] += sum(S3_PRICE[kind] * n for kind, n in used.s3.items())
        bill["CloudWatch"] += used.log_bytes / 1e9 * LOGS_GB
    fetches = crawl.get("fetches", 0)
    bill["CloudFront"] += fetches * CF_REQUEST + crawl.get("bytes", 0) / 1e9 * CF_GB
    bill["S3"] += fetches * S3_PRICE["GET"]
    bill["total"] = sum(bill[line] for line in LINES)
    return bill


def scaled(bill: Mapping[str, float], factor: float) -> dict[str, float]:
    return {line: value * factor for line, value in bill.items()}


def fixed(
    queues: Mapping[str, str], metrics: int, alarms: int, dashboards: int, hours: float, keys: int = 0
) -> dict[str, float]:
    """What a deployment costs per ``hours`` whatever its traffic: the event sources' empty long polls
    (``queues``: name -> standard/fifo) and the custom metrics, alarm metrics (``alarms``: a metric math alarm
    counts each metric it reads), dashboards and the alarm topic's KMS keys (counted with CloudWatch: they
    exist for its alarms' notifications)."""
    bill = dict.fromkeys(LINES, 0.0)
    bill["SQS"] = sum(SQS_PRICE[kind] * IDLE_POLLS_PER_HOUR * hours for kind in queues.values())
    month = metrics * METRIC_MONTH + alarms * ALARM_MONTH + dashboards * DASHBOARD_MONTH + keys * KMS_KEY_MONTH
    bill["CloudWatch"] = month * hours / HOURS_PER_MONTH
    bill["total"] = sum(bill[line] for line in LINES)
    return bill


def idle_month(
    queues: Mapping[str, str], alarms: int, dashboards: int, keys: int, idle_metrics: int = 0
) -> dict[str, float]:
    """The lines of a month of an idle stack that depend on what the template declares (``docs/operations.md``,
    "What an idle stack costs", holds its table to these): the event sources' long polls, the alarm metrics, the
    dashboards, the alarm topic's keys and the custom metrics published while nothing happens."""
    polls = fixed(queues, 0, 0, 0, HOURS_PER_MONTH)["SQS"]
    return {"polling": polls, "alarms": alarms * ALARM_MONTH, "dashboards": dashboards * DASHBOARD_MONTH,
            "keys": keys * KMS_KEY_MONTH, "metrics": idle_metrics * METRIC_MONTH}  # fmt: skip


def per_million(ops: Mapping[str, Any], events: int, batch: int, events_per_s: float) -> dict[str, float]:
    """The bill ``bench/incremental.py`` measured for a rate (``ops["usd_per_million"]``), in the lower-case keys
    ``bench/full_build.py`` renders; kept until it renders ``bench.report.section`` instead."""
    bill = ops["usd_per_million"]
    return {line.lower(): float(bill[line]) for line in ("Lambda", "SQS", "DynamoDB", "S3", "CloudFront", "total")}
