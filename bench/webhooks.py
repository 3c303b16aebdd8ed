"""Webhook endpoint benchmark (issue 16; not part of `make test`): a burst of signed CMS webhooks through the real
handler, the latency to the 2xx answer, and the cost per million webhooks.

    .venv/bin/python -m bench.webhooks [--rate 1000] [--seconds 3] [--servers 2] [--senders 2]

1. CPU per webhook: the handler invoked in this process with Function URL events (the six CMSs' sample
   publishes, signed), the queue in memory; ``time.process_time`` per call and the bytes it logs.
2. A burst over HTTP: the handler served on 127.0.0.1 by ``--servers`` processes sharing one port
   (``local/webhooks.serve``), requests sent open-loop by ``--senders`` processes at ``--rate`` per second for
   ``--seconds`` over kept-alive connections, each timed from when it was due (so waiting behind a busy server
   counts); latency percentiles to the 2xx. On Lambda each request has a container to itself and a burst scales
   out; here senders and servers share this machine's cores, so the latencies are an upper bound.
3. Cost per million webhooks at list prices (us-east-1, arm64, 512 MB), using bench/cost.py's rates: Lambda
   requests and duration (CPU scaled to 512 MB's share of a vCPU, plus a stated 10 ms per SQS send and
   bench/cost.py's latencies for the document read and write), SQS sends, DynamoDB, CloudWatch Logs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import multiprocessing
import os
import platform
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from bench import sections
from bench.cost import (
    DDB_RRU,
    DDB_WRU,
    LAMBDA_GB_S,
    LAMBDA_REQUEST,
    LATENCY_S,
    LOGS_GB,
    ONE_VCPU_MB,
    PLATFORM_LOG_BYTES,
    SQS_PRICE,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "events" / "webhooks").glob("*/publish.json"))
SITE = "https://www.example.com"
MEMORY_MB = 512  # the template's Globals
SQS_SEND_S = 0.010  # stated: one same-region SendMessage from Lambda
SECRETS_PER_10K = 0.05  # Secrets Manager API calls; one read per container per TTL (300 s): negligible
SECRET = "bench-secret-" + "b" * 51
WORKERS = 32  # threads per sending process: kept-alive connections


class MemoryQueue:
    """The ingest queue, in memory: counts what would be sent."""

    def __init__(self) -> None:
        self.sent = 0

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None:
        json.dumps(body, sort_keys=True)  # the adapter's serialisation, so its cost is counted
        self.sent += 1


class MemoryDocuments:
    """The document URL store, in memory: one read and one conditional write per webhook, as on DynamoDB."""

    def __init__(self) -> None:
        self.urls: dict[tuple[str, str], list[str]] = {}

    def recall(self, cms: str, doc_id: str) -> list[str]:
        return self.urls.get((cms, doc_id), [])

    def remember(self, cms: str, doc_id: str, urls: list[str], order: str) -> bool:
        self.urls[(cms, doc_id)] = urls
        return True


def _install_receiver() -> MemoryQueue:
    from sitemap_updater.adapters.secrets import CachedSecrets
    from sitemap_updater.core.urls import Site
    from sitemap_updater.service.webhooks import WebhookReceiver
    from sitemap_updater.wiring.webhooks import load_mapping, use_receiver

    queue = MemoryQueue()
    keys = json.dumps(dict.fromkeys(("contentful", "sanity", "storyblok", "ghost", "strapi", "generic"), SECRET))
    mapping = load_mapping("webhook-mapping.json")
    documents = MemoryDocuments()
    use_receiver(WebhookReceiver(Site.parse(SITE), mapping, CachedSecrets(lambda: keys), queue, documents=documents))
    return queue


def _requests() -> list[tuple[str, dict[str, str], bytes]]:
    from sitemap_updater.local.webhooks import Sample

    samples = [Sample.load(p) for p in SAMPLES]
    return [(s.path, s.signed(SECRET), s.body) for s in samples]


def cpu_per_webhook(samples: int) -> dict[str, float]:
    """Handler CPU seconds and log bytes per webhook, in this process."""
    from sitemap_updater.local.webhooks import LocalContext, function_url_event

    queue = _install_receiver()
    requests = _requests()
    events = [function_url_event("POST", path, headers, body) for path, headers, body in requests]
    context = cast(Any, LocalContext())  # the parts of a Lambda context Powertools reads
    logs = io.StringIO()
    with contextlib.redirect_stdout(logs):
        from sitemap_updater.handlers.webhook import handler  # its logger writes to the stdout of its import

        for event in events:  # warm: imports and the mapping, as a warm container has them
            handler(event, context)
        logs.seek(0)
        logs.truncate()
        times = []
        for i in range(samples):
            start = time.process_time()
            answer = handler(events[i % len(events)], context)
            times.append(time.process_time() - start)
            assert answer["statusCode"] == 202, answer
    return {
        "cpu_ms_mean": 1000 * statistics.fmean(times),
        "cpu_ms_p99": 1000 * sorted(times)[int(0.99 * len(times))],
        "log_bytes": len(logs.getvalue().encode()) / samples,
        "events_per_webhook": queue.sent / (samples + len(events)),
    }


def _serve(port: int, port_out: Any, stop: Any) -> None:
    from sitemap_updater.local.webhooks import serve

    _install_receiver()
    with contextlib.redirect_stdout(io.StringIO()) as sink:
        from sitemap_updater.handlers.webhook import handler

        with serve(handler, port, reuse_port=True) as url:
            port_out.send(url)
            while not stop.wait(0.5):
                sink.seek(0)
                sink.truncate()  # the handler's log lines, dropped as they come


def _send_share(url: str, rate: float, total: int, first: int, step: int, start: float, out: Any) -> None:
    """Send requests first, first+step, ... of ``total``, each at its due time; report (latencies, failures)."""
    requests = _requests()
    host, port = url.removeprefix("http://").split(":")
    local = threading.local()
    latencies: list[float] = []
    failures = 0

    def one(i: int) -> None:
        nonlocal failures
        due = start + i / rate
        path, headers, body = requests[i % len(requests)]
        delay = due - time.time()
        if delay > 0:
            time.sleep(delay)
        try:
            if not hasattr(local, "connection"):  # one kept-alive connection per sender, as a CMS's client keeps
                local.connection = http.client.HTTPConnection(host, int(port), timeout=30)
            local.connection.request("POST", path, body=body, headers=headers)
            answer = local.connection.getresponse()
            answer.read()
            ok = 200 <= answer.status < 300
        except (http.client.HTTPException, OSError):
            local.__dict__.pop("connection", None)
            ok = False
        if ok:
            latencies.append(time.time() - due)
        else:
            failures += 1

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for i in range(first, total, step):
            pool.submit(one, i)
    out.put((latencies, failures))


def burst(rate: int, seconds: float, servers: int, senders: int) -> dict[str, float]:
    """Open-loop requests at ``rate`` per second from ``senders`` processes to ``servers`` processes."""
    stop = multiprocessing.Event()
    parent, child = multiprocessing.Pipe()
    processes = [multiprocessing.Process(target=_serve, args=(0, child, stop), daemon=True)]
    processes[0].start()
    url = parent.recv()
    port = int(url.rsplit(":", 1)[1])
    for _ in range(servers - 1):
        processes.append(multiprocessing.Process(target=_serve, args=(port, child, stop), daemon=True))
        processes[-1].start()
        parent.recv()
    total = int(rate * seconds)
    results: Any = multiprocessing.Queue()
    start = time.time() + 0.5
    shares = [
        multiprocessing.Process(target=_send_share, args=(url, rate, total, k, senders, start, results))
        for k in range(senders)
    ]
    for share in shares:
        share.start()
    collected = [results.get() for _ in shares]
    elapsed = time.time() - start
    for share in shares:
        share.join()
    stop.set()
    for process in processes:
        process.join(5)
    ordered = sorted(latency for latencies, _ in collected for latency in latencies)
    failures = sum(f for _, f in collected)

    def pct(p: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")

    return {
        "offered_per_s": rate,
        "servers": servers,
        "senders": senders,
        "sent": total,
        "answered_2xx": len(ordered),
        "failed": failures,
        "achieved_per_s": len(ordered) / elapsed,
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "max_ms": pct(1.0),
    }


def cost_per_million(cpu: dict[str, float]) -> dict[str, float]:
    """Dollars per million webhooks, Lambda at 512 MB (CPU scaled to the share of a vCPU it buys)."""
    waits = SQS_SEND_S * cpu["events_per_webhook"] + LATENCY_S["GetItem"] + LATENCY_S["PutItem"]
    duration_s = cpu["cpu_ms_mean"] / 1000 * (ONE_VCPU_MB / MEMORY_MB) + waits
    billed_s = max(0.001, round(duration_s, 3))
    lines = {
        "lambda_requests": LAMBDA_REQUEST * 1e6,
        "lambda_duration": LAMBDA_GB_S * (MEMORY_MB / 1024) * billed_s * 1e6,
        "sqs_send": SQS_PRICE["standard"] * cpu["events_per_webhook"] * 1e6,
        "dynamodb_document_urls": (DDB_RRU + DDB_WRU) * 1e6,  # a strongly consistent read, a write under 1 KB
        "logs": LOGS_GB * (cpu["log_bytes"] + PLATFORM_LOG_BYTES) * 1e6 / 1e9,
    }
    return {**lines, "total": sum(lines.values()), "duration_ms": 1000 * duration_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--cpu-samples", type=int, default=3000)
    parser.add_argument("--servers", type=int, default=2, help="server processes on one port (SO_REUSEPORT)")
    parser.add_argument("--senders", type=int, default=2, help="sending processes")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "sitemap-updater")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "SitemapUpdater")
    cpu = cpu_per_webhook(args.cpu_samples)
    result = {
        "cpu": cpu,
        "burst": burst(args.rate, args.seconds, args.servers, args.senders),
        "cost_per_million": cost_per_million(cpu),
    }
    print(json.dumps(result, indent=2))
    if not args.no_write:
        sections.write("webhooks", section(result, args.seconds, f"{datetime.now(UTC).date():%Y-%m-%d}"))


def section(result: dict[str, Any], seconds: float, day: str) -> list[str]:
    """The "Webhooks" section of docs/benchmarks.md for one run."""
    cpu, shot, money = result["cpu"], result["burst"], result["cost_per_million"]
    return [
        "## Webhooks",
        "",
        f"Measured by `python -m bench.webhooks` on {day} ({platform.machine()}, Python "
        f"{platform.python_version()}): the six CMSs' signed publish samples through the real webhook handler "
        "(signature, mapping, document URL store, queue send), the queue and the document store in memory.",
        "",
        f"- **CPU per webhook**: {cpu['cpu_ms_mean']:.2f} ms mean, {cpu['cpu_ms_p99']:.2f} ms p99 (in this "
        f"process, warm); {cpu['log_bytes']:.0f} bytes of log; {cpu['events_per_webhook']:.2f} page events queued.",
        f"- **A burst of {shot['offered_per_s']:,} webhooks a second for {seconds:g} s** over HTTP on 127.0.0.1 "
        f"({shot['servers']} server and {shot['senders']} sender processes sharing the 2 cores, kept-alive "
        "connections, each request timed from when it was due):",
        "",
        "| sent | answered 2xx | failed | achieved (per s) | p50 (ms) | p95 (ms) | p99 (ms) | max (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {shot['sent']:,} | {shot['answered_2xx']:,} | {shot['failed']:,} | {shot['achieved_per_s']:,.0f} | "
        f"{shot['p50_ms']:.1f} | {shot['p95_ms']:.1f} | {shot['p99_ms']:.1f} | {shot['max_ms']:.1f} |",
        "",
        "  On Lambda each request has a container to itself and a burst scales out; here senders and servers share "
        "two cores, so these latencies are an upper bound on the handler's own, without the SQS send's network "
        f"time (priced below at a stated {SQS_SEND_S * 1000:.0f} ms).",
        f"- **Cost per million webhooks** at list prices (us-east-1, arm64, {MEMORY_MB} MB, "
        f"{money['duration_ms']:.1f} ms billed per request):",
        "",
        "| Lambda requests | Lambda duration | SQS sends | DynamoDB (document URLs) | CloudWatch Logs | total |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {money['lambda_requests']:.2f} | {money['lambda_duration']:.2f} | {money['sqs_send']:.2f} | "
        f"{money['dynamodb_document_urls']:.2f} | {money['logs']:.2f} | **{money['total']:.2f}** |",
    ]


if __name__ == "__main__":
    main()
