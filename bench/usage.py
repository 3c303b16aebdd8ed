"""What one function's invocations used, and where the handlers' log lines go to be counted."""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Usage:
    """What the invocations of one function (or the import) consumed."""

    invocations: int = 0
    billed_ms: int = 0  # Lambda duration, each invocation rounded up to 1 ms
    cpu_s: float = 0.0  # the service's own CPU, measured here
    wait_s: float = 0.0  # stated latency of its AWS calls
    calls: Counter[str] = field(default_factory=Counter)
    rru: float = 0.0
    wru: float = 0.0  # including the second unit of transactional writes
    gsi_wru: float = 0.0
    items_read: int = 0
    s3: Counter[str] = field(default_factory=Counter)  # PUT, GET (HEAD is billed as one), LIST, DELETE
    bytes_up: int = 0
    sqs: Counter[str] = field(default_factory=Counter)  # "standard" / "fifo" send requests (64 KB chunks)
    http: int = 0  # requests to search engines
    log_bytes: int = 0  # what CloudWatch Logs ingests: the function's log lines, EMF metrics, Lambda's own lines
    throttled: int = 0  # DynamoDB attempts throttled (each retried by botocore after a backoff, in ``wait_s``)
    throttle_failed: int = 0  # requests still throttled on botocore's last attempt (the invocation would fail)

    def add(self, other: Usage) -> None:
        for name in ("invocations", "billed_ms", "cpu_s", "wait_s", "rru", "wru", "gsi_wru", "items_read", "throttled",
                     "throttle_failed"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.bytes_up += other.bytes_up
        self.http += other.http
        self.log_bytes += other.log_bytes
        self.calls.update(other.calls)
        self.s3.update(other.s3)
        self.sqs.update(other.sqs)


class LogSink(io.TextIOBase):
    """Where the handlers' log lines and EMF metrics go: counted (bytes, metric names), not kept."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.metrics: set[str] = set()

    def write(self, text: str) -> int:
        self.bytes += len(text.encode("utf-8", "surrogatepass"))
        if text.startswith('{"_aws"'):
            for directive in json.loads(text)["_aws"]["CloudWatchMetrics"]:
                self.metrics.update(metric["Name"] for metric in directive["Metrics"])
        return len(text)
