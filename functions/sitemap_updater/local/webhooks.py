"""Webhooks on localhost: an HTTP server on 127.0.0.1 that hands each request to the real webhook handler as a
Lambda Function URL event (payload format 2.0), and a sender that signs the sample payloads of
``events/webhooks/<cms>/`` as each CMS would, at send time (their signatures carry a timestamp)."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemap_updater.core.webhooks_signatures import CMSES, Cms, WebhookRequest, sign

if TYPE_CHECKING:
    from sitemap_updater.local.runner import LocalRun

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass(frozen=True)
class LocalContext:
    """The parts of the Lambda context that Powertools reads."""

    function_name: str = "webhook"
    memory_limit_in_mb: int = 512
    aws_request_id: str = "local-webhook"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:webhook"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def function_url_event(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The event a Function URL gives Lambda for one request (binary-safe: the body base64-encoded)."""
    path, _, query = target.partition("?")
    now_ms = int(time.time() * 1000)
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {k.lower(): v for k, v in headers.items()},
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": f"local-{now_ms}",
            "timeEpoch": now_ms,
        },
        "body": base64.b64encode(body).decode("ascii"),
        "isBase64Encoded": True,
    }


@contextmanager
def serve(handler: Handler, port: int = 0, reuse_port: bool = False) -> Iterator[str]:
    """Serve ``handler`` on http://127.0.0.1:<port> (any free port when 0); yields the base URL. One request
    at a time runs the handler, as in one Lambda container (Powertools' metrics are per process); with
    ``reuse_port``, several processes (containers) may serve one port."""
    one_at_a_time = threading.Lock()

    class _Request(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a CMS's client reuses its connection
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms wait for a delayed ACK

        def do_POST(self) -> None:  # one method for all: the handler answers 405 itself
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            event = function_url_event(self.command, self.path, dict(self.headers.items()), body)
            with one_at_a_time:
                reply = handler(event, LocalContext())
            payload = str(reply.get("body") or "").encode("utf-8")
            self.send_response(int(reply["statusCode"]))
            for name, value in (reply.get("headers") or {}).items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_PUT = do_POST  # noqa: N815 - http.server's method names

        def log_message(self, format: str, *args: Any) -> None:
            return

    class _Server(ThreadingHTTPServer):
        request_queue_size = 1024  # a burst waits in the backlog instead of being refused
        daemon_threads = True
        allow_reuse_port = reuse_port

    server = _Server(("127.0.0.1", port), _Request)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass(frozen=True)
class Sample:
    """A sample webhook: method, path, the CMS's own headers and the body's exact bytes."""

    cms: Cms
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @classmethod
    def load(cls, file: Path) -> Sample:
        data = json.loads(file.read_text(encoding="utf-8"))
        body = json.dumps(data["body"], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        cms = data["path"].strip("/")
        return cls(cms, data["method"], data["path"], {k.lower(): v for k, v in data["headers"].items()}, body)

    def signed(self, secret: str, at_ms: int | None = None) -> dict[str, str]:
        """The headers with the CMS's signature headers for ``secret`` at ``at_ms`` (default now)."""
        at = int(time.time() * 1000) if at_ms is None else at_ms
        request = WebhookRequest(self.method, self.path, self.headers, self.body)
        return {**self.headers, **sign(self.cms, request, secret, at)}


def send(base_url: str, path: str, headers: dict[str, str], body: bytes, method: str = "POST") -> tuple[int, Any]:
    """Send one request; returns the status and the decoded JSON answer."""
    request = urllib.request.Request(base_url + path, data=body, headers=headers, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - a local http URL
            return int(answer.status), json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read() or b"null")


def send_samples(base_url: str, files: list[Path], secrets: dict[str, str]) -> list[dict[str, Any]]:
    """Sign and send each sample file; one report line per file (its status and answer)."""
    report = []
    for file in files:
        sample = Sample.load(file)
        status, answer = send(base_url, sample.path, sample.signed(secrets[sample.cms]), sample.body, sample.method)
        report.append({"file": str(file), "status": status, "answer": answer})
    return report


def deliver(
    run: LocalRun, files: list[Path], mapping_file: str | Path = "webhook-mapping.json"
) -> list[dict[str, Any]]:
    """Send sample webhooks to a local run: each signed (a fresh secret per CMS: a local run has no CMS), over
    HTTP on 127.0.0.1, through the real handler under the webhook function's IAM policy, onto the run's ingest
    queue. The caller then drains the run (``run.send_wave([])``) to see what the events changed."""
    from sitemap_updater.adapters.queues import MessageQueue
    from sitemap_updater.adapters.secrets import CachedSecrets
    from sitemap_updater.adapters.webhook_documents import DocumentUrls
    from sitemap_updater.handlers.webhook import handler
    from sitemap_updater.local.stack import session
    from sitemap_updater.service.webhooks import WebhookReceiver
    from sitemap_updater.wiring.webhooks import load_mapping, use_receiver

    keys: dict[str, str] = {cms: secrets.token_hex(32) for cms in CMSES}
    make = run.iam.guarded(session().client)
    sqs, dynamodb = make("sqs", endpoint_url=run.endpoint_url), make("dynamodb", endpoint_url=run.endpoint_url)
    use_receiver(
        WebhookReceiver(
            site=run.settings.site,
            mapping=load_mapping(mapping_file),
            secrets=CachedSecrets(lambda: json.dumps(keys)),
            queue=MessageQueue(sqs, run.stack.queue_url("IngestQueue")),
            documents=DocumentUrls(dynamodb, run.settings.manifest_table),
        )
    )
    try:
        with run.capturing_logs(), run.iam.acting_as("WebhookFunction"), serve(handler) as url:
            return send_samples(url, files, keys)
    finally:
        use_receiver(None)


def sample_files(paths: list[Path], mapping_file: Path) -> list[Path]:
    """The sample files ``paths`` name (a directory: its ``*.json`` files in name order), each read and checked,
    and the mapping file read and validated; ValueError says what is wrong, before any stack is created."""
    from sitemap_updater.wiring.webhooks import load_mapping

    try:
        load_mapping(mapping_file)
    except (OSError, ValueError) as exc:
        raise ValueError(f"mapping {mapping_file}: {exc}") from None
    files: list[Path] = []
    for path in paths:
        found = sorted(path.glob("*.json")) if path.is_dir() else [path]
        if not found:
            raise ValueError(f"{path}: no *.json sample in it")
        files += found
    for file in files:
        try:
            cms = Sample.load(file).cms
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{file}: not a sample webhook ({type(exc).__name__}: {exc})") from None
        if cms not in CMSES:
            raise ValueError(f"{file}: path /{cms} names no CMS; use one of /{', /'.join(CMSES)}")
    return files


def webhook_wave(run: LocalRun, files: list[Path], mapping_file: Path) -> dict[str, Any]:
    """Deliver ``files`` as one more wave and drain the pipeline: the wave's report, with each webhook's answer
    under ``"webhooks"`` (file, HTTP status, the answer's JSON)."""
    answers = deliver(run, files, mapping_file)
    return {**run.send_wave([]).as_dict(), "webhooks": answers}
