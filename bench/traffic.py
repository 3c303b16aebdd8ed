"""Events through the real Lambda handlers in virtual time, batched as ``template.yaml`` configures it.

- The CMS sends each event to the standard ingest queue (one SendMessage each).
- The ingest event source gathers a batch from its first message for up to ``MaximumBatchingWindowInSeconds``
  or until ``BatchSize`` messages; messages arriving within one receive round trip (``ROUND_TRIP_S``) share a
  ReceiveMessage (at most 10), others need one each; deletes go 10 to a DeleteMessageBatch.
- FIFO queues (rebuild, index, notify) are read by their event source as SQS delivers them: up to ``BatchSize``
  visible messages a receive, never from a message group with a message in flight, and as many as possible of
  one group first (then others, to fill the batch). A section's marks that arrive while its rebuild runs
  therefore wait in its group and are coalesced into its next rebuild (up to 10 messages of up to 100 pages
  each): that is the coalescing window. Every visible batch is taken at once (the event source scales out).
  Messages a function sends leave when the invocation ends (its billed duration after it started); the index
  queue's delay is the template's.
- Each invocation's duration is what ``bench/meter.py`` bills: measured CPU scaled to the memory setting plus
  the stated latency of its AWS calls.
"""

from __future__ import annotations

import gzip
import heapq
import importlib
import json
import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lxml import etree

from bench.cost import cpu_scale
from bench.meter import SQS_CHUNK, Meter
from bench.usage import Usage
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.snapshots import STATE_PREFIX as SNAPSHOT_PREFIX
from sitemap_updater.core.urls import Site
from sitemap_updater.local.iam import Names, resolve
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.local.stack import load_template
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.service.reconcile import reconcile
from sitemap_updater.service.sweep import sweep, upkeep
from sitemap_updater.wiring.pipeline import use_pipeline
from tests.sim.fakes import Message, S3Object, SimQueueState
from tests.sim.world import ACCOUNT, NS, TEMPLATE

ROUND_TRIP_S = 0.02
SERVICE = "sitemap-updater"  # POWERTOOLS_SERVICE_NAME: the logger every handler's Powertools Logger writes to


@dataclass(frozen=True)
class Function:
    """One function of the template, with its event source."""

    name: str
    handler: Callable[[dict[str, Any], Any], Any]
    memory_mb: int
    queue: SimQueueState | None = None
    batch: int = 1
    window_s: float = 0.0


@dataclass(frozen=True)
class Scenario:
    label: str
    rate: float  # events per second
    events: int
    section: str | None = None  # every change in this section (a republish); None: spread over the site
    sustained: bool = True  # a steady rate (hourly jobs and idle polling are shared by its events)


@dataclass
class Traffic:
    """What one scenario cost: usage per function (plus ``cms``), and what crawlers would fetch."""

    scenario: Scenario
    usage: dict[str, Usage]
    virtual_s: float
    puts: dict[str, list[float]] = field(default_factory=dict)  # published file -> when each put happened
    put_bytes: int = 0
    accepted: int = 0
    # Seconds from the CMS's send to the CDN surely serving the change: the end of the invocation whose put first
    # showed the page's new content, plus the cache lifetime; one figure per changed page.
    freshness_s: list[float] = field(default_factory=list)
    freshness_by_url: dict[str, float] = field(default_factory=dict)  # the same figures by canonical URL
    unshown: int = 0  # changed pages no put ever showed (a lost change; 0 expected)


def functions(sim: Any) -> dict[str, Function]:
    """The template's functions, their memory and their SQS event sources."""
    template = load_template(TEMPLATE)
    default_mb = int(template["Globals"]["Function"].get("MemorySize", 128))
    found: dict[str, Function] = {}
    for logical, spec in template["Resources"].items():
        if spec["Type"] != "AWS::Serverless::Function":
            continue
        props = spec["Properties"]
        module, _, attribute = props["Handler"].rpartition(".")
        handler = getattr(importlib.import_module(module), attribute)
        memory = int(props.get("MemorySize", default_mb))
        sources = [e for e in props.get("Events", {}).values() if e["Type"] == "SQS" and _enabled(sim, e)]
        if not sources:
            found[logical] = Function(logical, handler, memory)
            continue
        source = sources[0]["Properties"]
        queue = sim.queues[source["Queue"]["Fn::GetAtt"][0]]
        window = source.get("MaximumBatchingWindowInSeconds", 0)  # IngestWindowSeconds: the deployed setting
        window = float(sim.pipeline.settings.ingest_window_seconds if isinstance(window, dict) else window)
        found[logical] = Function(logical, handler, memory, queue, int(source.get("BatchSize", 10)), window)
    return found


def _enabled(sim: Any, source: dict[str, Any]) -> bool:
    """Whether an SQS event source polls with the simulation's parameters (``Enabled``, an ``!If`` or absent)."""
    template = load_template(TEMPLATE)
    names = Names(sim.parameters, {}, {}, template.get("Conditions", {}))
    return resolve(source["Properties"].get("Enabled", True), names) is True


class Http:
    """Search engines that accept every request (its latency is stated, like AWS calls)."""

    timeout = 20.0  # the Http port: the most one request may wait

    def __init__(self, meter: Meter) -> None:
        self._meter = meter

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        def counted(u: Usage, _r: Any) -> None:
            u.http += 1

        return self._meter.charged("http:POST", lambda: HttpResponse(200, {}, ""), lambda: counted)  # type: ignore[no-any-return]


def _record(message_id: str, body: str, sent_s: float, arn: str, message: Message | None = None) -> dict[str, Any]:
    count = message.receive_count if message is not None else 1
    attributes = {"ApproximateReceiveCount": str(count), "SentTimestamp": str(int(sent_s * 1000)), "SenderId": ACCOUNT,
                  "ApproximateFirstReceiveTimestamp": str(int(sent_s * 1000))}  # fmt: skip
    if message is not None and message.group is not None:
        attributes |= {"MessageGroupId": message.group, "MessageDeduplicationId": message.id,
                       "SequenceNumber": str(message.number)}  # fmt: skip
    receipt = message.receipt if message is not None else f"{message_id}#1"
    return {"messageId": message_id, "receiptHandle": receipt, "body": body, "attributes": attributes,
            "messageAttributes": {}, "md5OfBody": "0" * 32, "eventSource": "aws:sqs", "eventSourceARN": arn,
            "awsRegion": "us-east-1"}  # fmt: skip


def _chunks(size: int) -> int:
    return max(1, math.ceil(size / SQS_CHUNK))


class Driver:
    """Runs scenarios on one simulated deployment (``tests.sim.world.Simulation``) wrapped by a ``Meter``."""

    def __init__(self, sim: Any, meter: Meter) -> None:
        self.sim, self.meter = sim, meter
        self.functions = functions(sim)
        self.ingest = next(f for f in self.functions.values() if f.queue is not None and not f.queue.fifo)
        self.fifo = [f for f in self.functions.values() if f.queue is not None and f.queue.fifo]
        sim.pipeline = replace(sim.pipeline, fan_out=meter.concurrently)  # a rebuild's files, billed as overlapping
        use_pipeline(sim.pipeline, Notifiers(Http(meter), None, sleep=lambda _s: None, monotonic=lambda: 0.0))
        self._waiting: dict[str, str] = {}  # changed pages no put has shown yet: canonical URL -> new lastmod
        self._shown: dict[str, float] = {}  # canonical URL -> when the invocation that first showed it ended
        self._put_files: list[bytes] = []
        sim.s3.watch = self._put  # after the Meter, which turned the simulation's own (slower) view off
        for handler in logging.getLogger(SERVICE).handlers:  # the Powertools loggers' lines, counted
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(meter.logs)

    def freshness(self, seconds: int) -> None:
        """Deploy with ``FreshnessSeconds`` = ``seconds`` (every section)."""
        settings = self.sim.pipeline.settings.model_copy(update={"freshness_seconds": seconds})
        self.sim.pipeline = replace(self.sim.pipeline, settings=settings)
        use_pipeline(self.sim.pipeline, Notifiers(Http(self.meter), None, sleep=lambda _s: None, monotonic=lambda: 0.0))

    def ingest_window(self, seconds: int) -> None:
        """Deploy with ``IngestWindowSeconds`` = ``seconds`` (the event source's window and the holds' count)."""
        settings = self.sim.pipeline.settings.model_copy(update={"ingest_window_seconds": seconds})
        self.sim.pipeline = replace(self.sim.pipeline, settings=settings)
        use_pipeline(self.sim.pipeline, Notifiers(Http(self.meter), None, sleep=lambda _s: None, monotonic=lambda: 0.0))
        self.ingest = replace(self.ingest, window_s=float(seconds))

    def memory(self) -> dict[str, int]:
        return {name: f.memory_mb for name, f in self.functions.items()}

    def polled(self) -> dict[str, str]:
        """The queues event sources poll: name -> standard/fifo."""
        return {f.queue.name: "fifo" if f.queue.fifo else "standard" for f in self.functions.values() if f.queue}

    def _invoke(
        self, function: Function, event: dict[str, Any], at: float, messages: list[Message] | None = None
    ) -> tuple[float, set[str]]:
        """One invocation at virtual time ``at``; returns when it ends and the messages it reported failed. What it
        sends leaves then. Only messages it gave back to the queue for a while (a burst's rebuild waiting for the
        rest of it) may fail."""
        self.sim.clock.now = at
        queues = list(self.sim.queues.values())
        before = [q.counter for q in queues]
        context = LocalContext(function.name, memory_limit_in_mb=function.memory_mb)
        result, seconds = self.meter.invoke(
            function.name, lambda: function.handler(event, context), cpu_scale(function.memory_mb)
        )
        self._look(at + seconds)
        failed = (
            {f["itemIdentifier"] for f in result.get("batchItemFailures", [])} if isinstance(result, dict) else set()
        )
        if any(m.deferred_until is None for m in messages or [] if m.id in failed) or len(failed) > len(messages or []):
            raise RuntimeError(f"{function.name} failed: {result}")
        for queue, counter in zip(queues, before, strict=True):
            for message in (m for m in queue.messages if m.number > counter):
                message.available_at += seconds
                message.sent_at += seconds
        return at + seconds, failed

    def hourly(self) -> dict[str, Usage]:
        """One run of each scheduled function (the sweep finds nothing pending after a drained scenario; the
        reconciliation reads its slice of 200 files and finds nothing to repair)."""
        self.meter.usage = {}
        for name, job in (("SweepFunction", lambda: sweep(self.sim.pipeline, None)),
                          ("UpkeepFunction", lambda: upkeep(self.sim.pipeline)),
                          ("ReconcileFunction", lambda: reconcile(self.sim.pipeline))):  # fmt: skip
            memory = self.functions[name].memory_mb if name in self.functions else 512
            self.meter.invoke(name, job, cpu_scale(memory))
        return self.meter.usage

    def run(self, scenario: Scenario, bodies: list[str], offsets: list[float] | None = None) -> Traffic:
        """Send ``bodies`` at the scenario's rate (or each at its offset in seconds from the start, in order) and
        run every function until all queues are empty. Events of sites added at run time are sent as theirs."""
        self.meter.usage = {}
        self.meter.puts = []
        start = self.sim.clock.now + 3600.0  # past every deduplication interval and delay of earlier traffic
        arrivals = [start + (i / scenario.rate if offsets is None else offsets[i]) for i in range(len(bodies))]
        own = self.sim.pipeline.settings.site
        sent: dict[str, tuple[float, str]] = {}  # canonical URL -> when the CMS sent its change, and the new lastmod
        for body, at in zip(bodies, arrivals, strict=True):
            url = str(json.loads(body)["url"])
            origin = "/".join(url.split("/", 3)[:3])
            site = own if origin == own.base_url else Site.parse(origin, sections=None)
            event = parse_event(body, site, self.sim.pipeline.horizon()).event
            sent[event.url] = (at, json.loads(body)["lastmod"])
        self._waiting, self._shown = {url: lastmod for url, (_, lastmod) in sent.items()}, {}
        cms = self.meter.usage.setdefault("cms", Usage())
        cms.sqs["standard"] += sum(_chunks(len(body.encode())) for body in bodies)
        batches = self._batches(arrivals)
        arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{self.ingest.queue.name if self.ingest.queue else ''}"
        running: list[tuple[float, int, str, list[Message], set[str]]] = []
        puts: dict[str, list[float]] = {}
        put_bytes, now, done, serial = 0, start, 0, 0
        while True:
            while running and running[0][0] <= now:
                end, _, name, messages, failed = heapq.heappop(running)
                queue = self.functions[name].queue
                assert queue is not None
                for message in messages:
                    queue.settle(message, message.id not in failed, end)  # a failed one was deferred: it comes back
            while done < len(batches) and batches[done][0] <= now:
                close, first, last = batches[done]
                records = [_record(f"event-{i}", bodies[i], arrivals[i], arn) for i in range(first, last)]
                self._ingest_receives(arrivals[first:last], bodies[first:last])
                self._invoke(self.ingest, {"Records": records}, close)
                done += 1
            for function in self.fifo:
                assert function.queue is not None
                while messages := receive(function.queue, function.batch, now):
                    arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{function.queue.name}"
                    records = [_record(m.id, m.body, m.sent_at, arn, m) for m in messages]
                    size = sum(len(m.body.encode()) for m in messages)
                    usage = self.meter.usage.setdefault(function.name, Usage())
                    usage.sqs["fifo"] += _chunks(size) + math.ceil(len(messages) / 10)  # receive, delete batch
                    end, failed = self._invoke(function, {"Records": records}, now, messages)
                    serial += 1
                    heapq.heappush(running, (end, serial, function.name, messages, failed))
            for name, size, at in self.meter.take_puts(now):
                puts.setdefault(name, []).append(at)
                put_bytes += size
            upcoming = [f.queue.next_available(now) for f in self.fifo if f.queue]
            upcoming += [running[0][0]] if running else []
            upcoming += [batches[done][0]] if done < len(batches) else []
            upcoming = [t for t in upcoming if t is not None]
            if not upcoming:
                break
            now = max(now, min(t for t in upcoming if t is not None))
        self.sim.clock.now = now
        lifetime = self.sim.pipeline.settings.cdn_max_age_seconds
        traffic = Traffic(scenario, self.meter.usage, now - start, puts, put_bytes)
        traffic.freshness_by_url = {url: at + lifetime - sent[url][0] for url, at in self._shown.items()}
        traffic.freshness_s = sorted(traffic.freshness_by_url.values())
        traffic.unshown = len(self._waiting)
        self._waiting, self._shown = {}, {}
        return traffic

    def _put(self, name: str, _old: S3Object | None, new: S3Object | None) -> None:
        if new is not None and name.endswith(".xml.gz") and not name.startswith(SNAPSHOT_PREFIX) and self._waiting:
            self._put_files.append(new.data)

    def _look(self, at: float) -> None:
        """The changed pages the files put by an invocation that ended at ``at`` show for the first time."""
        for data in self._put_files:
            for url in etree.fromstring(gzip.decompress(data)).iterfind("s:url", NS):
                loc = url.findtext("s:loc", namespaces=NS) or ""
                lastmod = self._waiting.get(loc)
                if lastmod is not None and (url.findtext("s:lastmod", namespaces=NS) or "").startswith(lastmod):
                    del self._waiting[loc]
                    self._shown[loc] = at
        self._put_files = []

    def _batches(self, arrivals: list[float]) -> list[tuple[float, int, int]]:
        """(when the batch is handed to the function, first event, end) as the batching window gathers them."""
        ingest, found, first = self.ingest, [], 0
        while first < len(arrivals):
            last = first
            while (last < len(arrivals) and last - first < ingest.batch
                   and arrivals[last] < arrivals[first] + ingest.window_s):  # fmt: skip
                last += 1
            last = max(last, first + 1)
            close = arrivals[last - 1] if last - first == ingest.batch else arrivals[first] + ingest.window_s
            found.append((close, first, last))
            first = last
        return found

    def _ingest_receives(self, arrivals: list[float], bodies: list[str]) -> None:
        """The ingest event source's ReceiveMessage and DeleteMessageBatch requests for one batch."""
        usage = self.meter.usage.setdefault(self.ingest.name, Usage())
        receives, group, size = 0, 0, 0
        for i, (at, body) in enumerate(zip(arrivals, bodies, strict=True)):
            if group == 10 or (i and at - arrivals[i - 1] > ROUND_TRIP_S):
                receives += _chunks(size)
                group, size = 0, 0
            group += 1
            size += len(body.encode())
        receives += _chunks(size)
        usage.sqs["standard"] += receives + math.ceil(len(bodies) / 10)


def receive(queue: SimQueueState, limit: int, now: float) -> list[Message]:
    """One ReceiveMessage on a FIFO queue, as SQS answers it: messages of groups with none in flight, in order
    within each group (a group whose head is not yet visible gives nothing), as many of the first group as
    possible, then of the next groups."""
    busy = {m.group for m in queue.in_flight.values()}
    groups: dict[str | None, list[Message]] = {}
    for message in sorted(queue.messages, key=lambda m: m.number):
        if message.group in busy:
            continue
        if message.available_at > now:
            busy.add(message.group)  # FIFO: nothing behind a message still delayed
            continue
        groups.setdefault(message.group, []).append(message)
    taken: list[Message] = []
    for members in groups.values():
        taken += members[: limit - len(taken)]
    for message in taken:
        queue.messages.remove(message)
        message.receive_count += 1
        message.received_at = now
        message.receipt = f"{message.id}#{message.receive_count}"
        queue.in_flight[message.receipt] = message
    return taken


def changed_bodies(lines: list[str], picks: list[int], version: int, day: str = "") -> list[str]:
    """Events that change the picked pages (a newer version with a new lastmod: ``day``, else the 2026-11-
    ``version``)."""
    out = []
    day = day or f"2026-11-{version:02d}"
    for i in picks:
        body = json.loads(lines[i])
        body.update(version=version, lastmod=day, occurred_at=f"{day}T10:00:00Z")
        out.append(json.dumps(body, ensure_ascii=False))
    return out


def count_puts(puts: dict[str, list[float]]) -> Counter[int]:
    """How many files were put how many times."""
    return Counter(len(times) for times in puts.values())
