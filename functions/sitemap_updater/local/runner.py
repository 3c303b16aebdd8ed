"""Run the real handlers on a local AWS, one wave of events at a time, and report each wave.

The local AWS is moto in this process (or any AWS-compatible endpoint), with the stack of template.yaml. Each
function runs under its own IAM policy from the template. Waves are fed to the ingest queue in slices of
:data:`FEED` events and the queues drained after each slice, upstream first (ingest, then rebuilds, index,
notifications), so that no queue grows with the size of the input and a run stays linear in it.

Time is virtual (``local/visibility.py``): a message given back to its queue (a failure, or a burst's wait) comes
back after the visibility AWS would give it, and the run skips that wait instead of sleeping; the functions read
the same clock.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import itertools
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import body_too_large, parse_event
from sitemap_updater.core.lines import LongLine
from sitemap_updater.core.site_keys import object_prefix
from sitemap_updater.local import moto_speedups
from sitemap_updater.local.copy_out import copy_out
from sitemap_updater.local.iam import Enforcer
from sitemap_updater.local.inputs import SQS_MAX_MESSAGE_BYTES, Body, carried, escaped, preview, sqs_batches
from sitemap_updater.local.packaged import packaged_file
from sitemap_updater.local.stack import REGION, EventSource, LocalStack, attach_stack, create_stack, session
from sitemap_updater.local.visibility import Redelivery, VirtualClock, Visibility
from sitemap_updater.ports import Bucket
from sitemap_updater.service.bulk_import import ImportResult, import_events
from sitemap_updater.service.index import IndexRebuild
from sitemap_updater.service.ingest import IngestResult, Rejected
from sitemap_updater.service.notify import NotifyResult
from sitemap_updater.service.rebuild import SectionRebuild
from sitemap_updater.settings import Settings
from sitemap_updater.wiring.pipeline import connect_pipeline, use_pipeline
from sitemap_updater.wiring.sites import site_pipeline

TEMPLATE = packaged_file("template.yaml")  # the checkout's template.yaml, or the copy an installed wheel carries
_MAX_ROUNDS = 10_000
FEED = 1_000  # events on the ingest queue at most, as a slice of a wave
# Handler modules bind their loggers' stream once, at import: one sink for every local run of this process.
_LOG_SINK = io.StringIO()


@dataclass(frozen=True, slots=True)
class LocalContext:
    """The parts of the Lambda context that Powertools reads, for invoking handlers locally."""

    function_name: str
    memory_limit_in_mb: int = 512
    aws_request_id: str = "local"
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:local"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass(slots=True)
class WaveReport:
    """What one wave of events did, as the ``--report`` JSON shows it."""

    wave: int
    events: dict[str, int] = field(default_factory=lambda: {"accepted": 0, "rejected": 0, "stale": 0, "noop": 0})
    rejections: list[dict[str, Any]] = field(default_factory=list)  # "sent": false: never reached SQS
    put: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    changed_urls: list[str] = field(default_factory=list)
    dlq: int = 0
    notifications: list[dict[str, Any]] = field(default_factory=list)
    started: datetime | None = None  # in the run's virtual time
    took_s: float = 0.0  # virtual seconds from the wave's first event to every queue empty
    waited_s: float = 0.0  # of which skipped, waiting for messages to be visible again
    redelivered: list[Redelivery] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        start = self.started.timestamp() if self.started else 0.0
        return {
            "wave": self.wave,
            "events": self.events,
            "rejections": self.rejections,
            "s3": {"put": sorted(set(self.put)), "deleted": sorted(set(self.deleted))},
            "changed_urls": sorted(set(self.changed_urls)),
            "dlq": self.dlq,
            "notifications": self.notifications,
            "time": {
                "started": self.started.isoformat() if self.started else None,
                "took_s": round(self.took_s, 3),
                "waited_s": round(self.waited_s, 3),
            },
            "redelivered": [r.as_dict(start) for r in self.redelivered],
        }


class LocalRun:
    """A local stack (moto in this process unless ``endpoint_url`` is given) driven wave by wave."""

    def __init__(
        self,
        site_url: str,
        max_urls_per_file: int | None = None,
        endpoint_url: str | None = None,
        clock: Callable[[], datetime] | None = None,
        template: Path = TEMPLATE,
        name: str | None = None,
        indexnow_endpoint: str | None = None,
        indexnow_key: str = "local-indexnow-key-0001",
        parameters: dict[str, str] | None = None,
        existing: bool = False,
    ) -> None:
        moto_speedups.apply()  # also speeds up a moto server this process runs (the tests')
        self._mock: Any = None
        if endpoint_url is None:
            from moto import mock_aws

            self._mock = mock_aws()
            self._mock.start()
        self.endpoint_url = endpoint_url
        # No CDN caches a local run: files change at once and retired ones go at once (unless a caller says so).
        parameters = {
            "SiteUrl": site_url,
            "IndexNowKey": indexnow_key,
            "CdnMaxAgeSeconds": "0",
            "FreshnessSeconds": "0",
            "RetiredFileGraceSeconds": "0",
            **(parameters or {}),
        }
        if max_urls_per_file is not None:
            parameters["MaxUrlsPerFile"] = str(max_urls_per_file)
        stack_name = name or "sitemap-" + hashlib.sha256(f"{time.time_ns()}".encode()).hexdigest()[:8]
        # ``existing``: the stack ``name`` already on the endpoint (local --stack), else one created now.
        self.stack: LocalStack = (attach_stack if existing else create_stack)(
            template, endpoint_url, parameters, stack_name
        )
        # Without an IndexNow endpoint, a local run records what it would send and sends nothing.
        self.stack.environment["NOTIFY_DRY_RUN"] = "false" if indexnow_endpoint else "true"
        if indexnow_endpoint:
            self.stack.environment["INDEXNOW_ENDPOINT"] = indexnow_endpoint
        self.settings = Settings.from_env(self.stack.environment)
        self._results: list[object] = []
        # The run's virtual time (the real clock unless a caller gives one, plus the waits skipped): the
        # functions' clock, and the one that brings a message given back to its queue back when AWS would.
        self.clock = VirtualClock(clock)
        self._sqs = session().client("sqs", endpoint_url=endpoint_url)
        self.visibility = Visibility(self.clock, self._sqs)
        self._queues = {url: logical for logical, url in self.stack.physical.items()}
        # One pipeline: while a handler runs, its calls are checked against its function's policy; outside
        # (the operator's import, tests) nothing is restricted.
        self.iam = Enforcer(self.stack.policies)
        guarded = self.iam.guarded(session().client)
        self.pipeline = connect_pipeline(
            self.settings,
            lambda name, **options: self.visibility.watch(guarded(name, **options)),
            endpoint_url,
            clock=self.clock,
            observe=self._results.append,
        )
        self.logs: list[str] = []
        self.errors: list[str] = []  # invocations that raised (their batches were retried)
        self._arns: dict[str, str] = {}
        self._wave = 0
        self._dead = 0
        self._max_message: int | None = None  # the ingest queue's MaximumMessageSize, read at the first send
        # An invocation that published no metric (a notifier with nothing to send) is normal here, not news.
        warnings.filterwarnings("ignore", "No application metrics to publish", UserWarning)
        os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "SitemapUpdater")
        os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "sitemap-updater")

    # --- waves ---------------------------------------------------------------------------------------
    def send_wave(self, bodies: Iterable[Body]) -> WaveReport:
        """Send every body to the ingest queue, drive the handlers until every queue is empty, report. A body SQS
        cannot carry (not UTF-8, too long, a character outside SQS's set) is rejected here with the reason
        ``build`` would give, and not sent."""
        self._wave += 1
        report = WaveReport(self._wave, started=self.clock())
        start, skipped = self.clock.seconds(), self.clock.skipped
        self.visibility.redeliveries.clear()
        ingest_url = self.stack.queue_url("IngestQueue")
        self._results.clear()
        events = iter(bodies)
        while True:
            feed = list(itertools.islice(events, FEED))
            for batch in sqs_batches(self._sendable(feed, report)):
                self._send_batch(ingest_url, batch)
            last = len(feed) < FEED
            self.drain(wait=last)  # what comes back later comes back after the wave's last event was sent
            self._collect(report)
            if last:
                break
        self._count_dead_letters(report)
        report.took_s, report.waited_s = self.clock.seconds() - start, self.clock.skipped - skipped
        report.redelivered = list(self.visibility.redeliveries)
        return report

    def import_site(self, bodies: Iterable[str | bytes | LongLine]) -> ImportResult:
        """Load a whole site into the stack as ``sitemap-updater import`` does (the operator's credentials)."""
        return import_events(bodies, self.pipeline)

    def _send_batch(self, url: str, bodies: list[str]) -> None:
        entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies)]
        self._sqs.send_message_batch(QueueUrl=url, Entries=entries)  # type: ignore[arg-type]

    def _sendable(self, feed: list[Body], report: WaveReport) -> list[str]:
        """The bodies of ``feed`` SQS can carry (an event valid but for characters SQS refuses, with those
        escaped); each other one is rejected into ``report`` with parse_event's reason, as ``build`` gives it."""
        if self._max_message is None:
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=self.stack.queue_url("IngestQueue"), AttributeNames=["MaximumMessageSize"]
            )["Attributes"]
            limit = int(attributes.get("MaximumMessageSize", SQS_MAX_MESSAGE_BYTES))
            self._max_message = min(limit, SQS_MAX_MESSAGE_BYTES)
        sendable = []
        for body in feed:
            if (text := carried(body, self._max_message)) is not None:
                sendable.append(text)
                continue
            try:
                if isinstance(body, LongLine):
                    raise body_too_large(body.size)
                parse_event(body, self.pipeline.site, self.pipeline.horizon())
            except EventRejected as exc:
                report.events["rejected"] += 1
                report.rejections.append({"event": preview(body), "reason": str(exc), "sent": False})
                continue
            assert isinstance(body, str)  # valid, so text: only its characters SQS refuses were in the way
            sendable.append(escaped(body))
        return sendable

    def drain(self, wait: bool = True) -> None:
        """Invoke each function on its queue, in the template's batch sizes, until no queue has messages:
        upstream first, each queue until it is empty, so changes coalesce as they do behind a busy poller. A
        message given back to its queue is visible again when AWS would make it so: when nothing else is visible,
        the virtual clock moves on to that moment (unless ``wait`` is false: then the drain ends there)."""
        use_pipeline(self.pipeline)
        try:
            for _ in range(_MAX_ROUNDS):
                self.visibility.release_due()
                progressed = False
                for source in self.stack.sources:
                    while self._poll(source):
                        progressed = True
                if progressed:
                    continue
                due = self.visibility.next_due()
                if due is not None:
                    if not wait:
                        return
                    self.clock.skip_to(due)
                elif all(self._depth(s.queue_url) == 0 for s in self.stack.sources):
                    return
            raise RuntimeError("queues did not drain")
        finally:
            use_pipeline(None)

    def _depth(self, url: str) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])

    def _receive(self, source: EventSource) -> list[Any]:
        """One batch as Lambda's poller gathers it: up to the source's batch size, ten per ReceiveMessage."""
        received: list[Any] = []
        while len(received) < source.batch_size:
            messages = self._sqs.receive_message(
                QueueUrl=source.queue_url,
                MaxNumberOfMessages=min(source.batch_size - len(received), 10),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            ).get("Messages", [])
            received += messages
            if len(messages) < 10 or source.queue_url.endswith(".fifo"):
                break  # a FIFO batch is one receive: a group's next messages wait until these are done
        return received

    def _poll(self, source: EventSource) -> bool:
        url = source.queue_url
        received_at = self.clock.seconds()
        received = self._receive(source)
        if not received:
            return False
        arn = self._arns.get(url)
        if arn is None:
            arn = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self._arns[url] = arn
        event = {"Records": [_sqs_record(message, arn) for message in received]}
        with self.iam.acting_as(source.function):
            try:
                response = self._invoke(source.handler, event)
                failed = {item["itemIdentifier"] for item in response.get("batchItemFailures", [])}
            except Exception as exc:  # as on Lambda: a failed invocation leaves its whole batch to be retried
                self.errors.append(f"{source.function}: {type(exc).__name__}: {exc}")
                failed = {m["MessageId"] for m in received}
        # As the event source mapping does: delete what succeeded, let failures reappear.
        done = [m for m in received if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
            ]
            self._sqs.delete_message_batch(QueueUrl=url, Entries=entries)  # type: ignore[arg-type]
        given_back = [m for m in received if m["MessageId"] in failed]
        self.visibility.give_back(source.function, self._queues[url], url, given_back, received_at)
        return True

    def _invoke(self, handler_path: str, event: dict[str, Any]) -> dict[str, Any]:
        module_name, function_name = handler_path.rsplit(".", 1)
        with self.capturing_logs():
            handler = getattr(importlib.import_module(module_name), function_name)
            response = handler(event, LocalContext(function_name=module_name.rsplit(".", 1)[-1]))
        return dict(response or {})

    @contextlib.contextmanager
    def capturing_logs(self) -> Iterator[None]:
        """While inside, what the functions log and print (metrics) goes to :attr:`logs`, not the terminal."""
        start = _LOG_SINK.tell()
        with contextlib.redirect_stdout(_LOG_SINK):  # metrics print to stdout
            # Powertools loggers keep the stream they were created with: point them at the sink meanwhile.
            service = logging.getLogger(os.environ.get("POWERTOOLS_SERVICE_NAME", "service_undefined"))
            streams = [h for h in service.handlers if isinstance(h, logging.StreamHandler)]
            previous = [h.stream for h in streams]
            for stream_handler in streams:
                stream_handler.setStream(_LOG_SINK)
            try:
                yield
            finally:
                for stream_handler, stream in zip(streams, previous, strict=True):
                    stream_handler.setStream(stream)
                self.logs += [line for line in _LOG_SINK.getvalue()[start:].splitlines() if line.strip()]

    def _collect(self, report: WaveReport) -> None:
        for result in self._results:
            if isinstance(result, Rejected):
                report.events["rejected"] += 1
                report.rejections.append({"event": result.body, "reason": result.reason})
            elif isinstance(result, IngestResult):
                report.events[result.outcome.value] += 1
            elif isinstance(result, SectionRebuild):
                report.put += result.put
                report.deleted += result.deleted
                report.changed_urls += list(result.changed_urls)
            elif isinstance(result, IndexRebuild):
                report.put += result.indexes
                report.deleted += result.removed
            elif isinstance(result, NotifyResult):
                report.notifications += [n.as_dict() for n in [*result.sent, *result.rejected]]
        self._results.clear()

    def _count_dead_letters(self, report: WaveReport) -> None:
        dead = self._depth(self.stack.queue_url("IngestDeadLetterQueue"))
        report.dlq, self._dead = dead - self._dead, dead

    # --- results -------------------------------------------------------------------------------------
    def published(self, everything: bool = False) -> dict[str, bytes]:
        """The sitemap files and index in the bucket, by name (``everything``: the IndexNow key file too); what a
        crawler can read, so not the rebuilds' snapshots."""
        return published_files(self.pipeline.bucket, everything)

    def download(self, out_dir: Path) -> list[str]:
        """Copy the bucket into ``out_dir`` (``local.copy_out``): the stack's own site's files, then each added
        site's into ``out_dir/sites/<host>/`` as the bucket holds them; returns the names written."""
        names = copy_out(self.published(everything=True), out_dir)
        directory = self.pipeline.directory
        for site in directory.list_sites() if directory is not None else []:
            prefix = object_prefix(site.host)
            files = published_files(site_pipeline(self.pipeline, site).bucket, everything=True)
            names += [prefix + name for name in copy_out(files, out_dir / prefix)]
        return names

    def resources(self) -> dict[str, str]:
        """The physical name (URL, ID) of every resource created, by logical ID."""
        return dict(sorted(self.stack.physical.items()))

    def close(self) -> None:
        use_pipeline(None)
        if self._mock is not None:
            self._mock.stop()
            self._mock = None

    def __enter__(self) -> LocalRun:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _sqs_record(message: Any, arn: str) -> dict[str, Any]:
    """An SQS message as Lambda's event source mapping delivers it."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            key: {
                "stringValue": value.get("StringValue"),
                "dataType": value.get("DataType", "String"),
                "stringListValues": [],
                "binaryListValues": [],
            }
            for key, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": REGION,
    }


def published_files(bucket: Bucket, everything: bool = False) -> dict[str, bytes]:
    """A site's served files in ``bucket`` (its view of the bucket), by name: not what it keeps under ``_state/``."""
    served = (".xml", ".xml.gz", ".txt") if everything else (".xml", ".xml.gz")
    found = {name: bucket.read(name) for name in bucket.names() if name.endswith(served) and "/" not in name}
    return {name: data for name, data in found.items() if data is not None}
