"""Command line: ``sitemap-updater build`` (and, as the pipeline lands, ``import`` and ``local``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from sitemap_updater.core.errors import LimitExceeded
from sitemap_updater.core.events import event_json_schema
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import DEFAULT_URLS_PER_FILE, MAX_URLS_PER_FILE, Limits
from sitemap_updater.core.urls import Site, UrlError
from sitemap_updater.service.adopt import MAX_FILE_BYTES, MAX_TOTAL_BYTES
from sitemap_updater.service.build import MAX_REJECTED_SHARE, BuildRefused, BuildResult, build

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _site(value: str) -> Site:
    try:
        return Site.parse(value)
    except UrlError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _max_urls(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= number <= MAX_URLS_PER_FILE:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_URLS_PER_FILE:,}")
    return number


def _moment(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO 8601 date-time") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} needs a UTC offset, such as Z")
    return moment


def _share(value: str) -> float:
    try:
        share = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a share such as 0.25 or 25%") from None
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError("must be from 0 to 1 (0% to 100%)")
    return share


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sitemap-updater",
        description="Event-driven, byte-stable XML sitemaps for large sites.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    b = commands.add_parser(
        "build",
        help="build every sitemap file and the index from a JSONL export of page events",
        description=(
            "Build gzip sitemap files and sitemap.xml from page events, one JSON object per line. "
            "Upserts add pages, deletes remove them; the newest event per URL wins by (version, "
            "occurred_at), whatever the line order. Rejected lines are reported on stderr with their "
            "line number and reason. Exit status: 0 built; 1 nothing written and DIR left as it was (no event "
            "accepted, too many rejected, or a limit cannot be met); 2 the input cannot be read."
        ),
    )
    b.add_argument("--site", required=True, type=_site, help="canonical scheme and host, e.g. https://www.example.com")
    b.add_argument("--events", required=True, type=Path, metavar="PAGES.jsonl", help="page events, one per line")
    b.add_argument("--out", required=True, type=Path, metavar="DIR", help="directory for the files (created)")
    b.add_argument(
        "--max-urls-per-file",
        type=_max_urls,
        default=DEFAULT_URLS_PER_FILE,
        metavar="N",
        help=f"split a file above N URLs (default {DEFAULT_URLS_PER_FILE:,}, at most {MAX_URLS_PER_FILE:,}); "
        "files are also split before 52,428,800 uncompressed bytes",
    )
    b.add_argument(
        "--as-of",
        type=_moment,
        default=None,
        metavar="DATETIME",
        help="the moment news freshness (2 days) is judged against (default: now); fix it for reproducible output",
    )
    b.add_argument(
        "--max-rejected-share",
        type=_share,
        default=MAX_REJECTED_SHARE,
        metavar="SHARE",
        help=f"refuse the build, leaving DIR as it was, when more than SHARE of the events are rejected "
        f"(default {MAX_REJECTED_SHARE * 100:.0f}%%; 0.25 and 25%% are the same; 1 refuses only when none is accepted)",
    )
    b.add_argument("--workers", type=int, default=None, metavar="N", help="processes to use (default: all cores)")
    b.add_argument("--quiet", action="store_true", help="print only the summary and rejected lines")
    loc = commands.add_parser(
        "local",
        help="run the whole pipeline on a local AWS endpoint, one wave per events file (and one of webhooks)",
        description=(
            "Start moto in this process (unless --endpoint-url names another AWS-compatible endpoint), create "
            "the queues, table, bucket and distribution of template.yaml, optionally import a whole site "
            "(--import or --adopt, as `sitemap-updater import` does), send each events file (a JSON array or "
            "JSONL) to the ingest queue as one wave, drive the real handlers, each under its IAM policy from "
            "the template, with real SQS event shapes until every queue is empty, then deliver the --webhooks "
            "samples as one more wave, and after the last wave copy the bucket into DIR."
        ),
    )
    loc.add_argument(
        "--site", required=True, type=_site, help="canonical scheme and host, e.g. https://www.example.com"
    )
    loc.add_argument(
        "--events", type=Path, action="append", default=[], metavar="FILE", help="one wave; repeat for more"
    )
    loc.add_argument(
        "--webhooks",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="a sample CMS webhook (events/webhooks/<cms>/*.json) or a directory of them (in name order); "
        "after the --events waves, each is signed with a local secret and POSTed over HTTP on 127.0.0.1 to the "
        "real webhook handler (under its IAM policy); repeat for more: together they make one more wave",
    )
    loc.add_argument(
        "--mapping",
        type=Path,
        metavar="FILE",
        help="the mapping of content types to URLs for --webhooks (default: functions/webhook-mapping.json, "
        "the file sam build deploys)",
    )
    first = loc.add_mutually_exclusive_group()
    first.add_argument(
        "--import", dest="import_events", type=Path, metavar="PAGES.jsonl", help="first import a full export"
    )
    first.add_argument(
        "--adopt", metavar="URL_OR_FILE", help="first adopt an existing sitemap, sitemap index or text sitemap"
    )
    _adopt_options(loc)
    loc.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="where the published files are copied (only files an earlier local run wrote there are replaced)",
    )
    loc.add_argument("--report", type=Path, metavar="FILE", help="write the per-wave report as JSON")
    loc.add_argument("--endpoint-url", metavar="URL", help="an AWS-compatible endpoint to use instead of moto")
    loc.add_argument(
        "--max-urls-per-file", type=_max_urls, default=None, metavar="N", help="the stack parameter MaxUrlsPerFile"
    )
    loc.add_argument("--log", type=Path, metavar="FILE", help="write the functions' JSON logs here")
    loc.add_argument(
        "--indexnow-endpoint",
        metavar="URL",
        help="send IndexNow submissions here; without it, local runs record what they would send and send nothing",
    )
    imp = commands.add_parser(
        "import",
        help="load a whole site into a stack's manifests with batched writes, then publish everything once",
        description=(
            "How a site starts: validate every event (or adopt an existing sitemap), keep the newest per URL, "
            "write the manifests in batches and publish every file and the index once. The stack is named by "
            "the same environment variables the functions read (SITE_URL, MANIFEST_TABLE, BUCKET_NAME, ...; "
            "see the README)."
        ),
    )
    source = imp.add_mutually_exclusive_group(required=True)
    source.add_argument("--events", type=Path, metavar="PAGES.jsonl", help="page events, one per line")
    source.add_argument(
        "--sitemap", metavar="URL_OR_FILE", help="an existing sitemap, sitemap index or text sitemap to adopt"
    )
    imp.add_argument("--endpoint-url", metavar="URL", help="an AWS-compatible endpoint instead of AWS")
    _adopt_options(imp)
    commands.add_parser("schema", help="print the JSON Schema of the event contract (docs/event.schema.json)")
    return parser


def _adopt_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-total-bytes",
        type=_bytes,
        default=MAX_TOTAL_BYTES,
        metavar="N",
        help=f"adoption stops after N bytes of sitemaps, uncompressed, in all (default {MAX_TOTAL_BYTES:,}); "
        f"each file may give at most {MAX_FILE_BYTES:,}, the protocol's limit",
    )


def _bytes(value: str) -> int:
    try:
        number = int(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of bytes") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._active = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self._active or not total:
            return
        share = done / total
        bar = "#" * int(share * 30)
        self._stream.write(f"\rvalidating [{bar:<30}] {share:6.1%}")
        self._stream.flush()

    def close(self) -> None:
        if self._active:
            self._stream.write("\n")


def _summary(result: BuildResult, out: Path, seconds: float) -> str:
    lines = [
        f"{result.lines:,} lines read: {result.accepted:,} events accepted, {len(result.rejections):,} rejected",
        f"{len(result.files):,} sitemap files + sitemap.xml in {out}: {result.urls:,} URLs, "
        f"{result.gzip_bytes:,} bytes written ({result.xml_bytes:,} bytes of XML) in {seconds:.1f} s",
    ]
    if result.removed:
        lines.append(f"{len(result.removed):,} sitemap files no longer part of the site removed")
    return "\n".join(lines)


def _build(args: argparse.Namespace) -> int:
    events: Path = args.events
    if not events.is_file():
        print(f"sitemap-updater: cannot read {events}: no such file", file=sys.stderr)
        return EXIT_USAGE
    as_of = args.as_of or datetime.now(UTC)
    progress = _Progress(sys.stderr)
    started = time.perf_counter()
    try:
        result = build(
            events,
            args.out,
            args.site,
            Limits(max_urls=args.max_urls_per_file),
            to_micros(as_of),
            workers=args.workers,
            progress=None if args.quiet else progress,
            max_rejected_share=args.max_rejected_share,
        )
    except BuildRefused as exc:
        progress.close()
        _report_lines(events, exc.result, args.quiet)
        print(f"sitemap-updater: nothing written, {args.out} left as it was: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        progress.close()
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LimitExceeded as exc:
        progress.close()
        print(f"sitemap-updater: nothing written, {args.out} left as it was: {exc}", file=sys.stderr)
        return EXIT_FAILED
    progress.close()
    _report_lines(events, result, args.quiet)
    print(_summary(result, args.out, time.perf_counter() - started))
    return EXIT_OK


def _report_lines(events: Path, result: BuildResult, quiet: bool) -> None:
    for rejection in result.rejections:
        print(f"{events}:{rejection.line}: rejected: {rejection.reason}", file=sys.stderr)
    if not quiet:
        for line, text in result.warnings:
            print(f"{events}:{line}: warning: {text}", file=sys.stderr)


def _local(args: argparse.Namespace) -> int:
    from sitemap_updater.local.runner import LocalRun, read_events_file
    from sitemap_updater.local.webhooks import sample_files, webhook_wave
    from sitemap_updater.service.webhooks import FUNCTIONS_DIR

    if not args.events and not args.webhooks and args.import_events is None and args.adopt is None:
        print("sitemap-updater: local needs --events, --webhooks, --import or --adopt", file=sys.stderr)
        return EXIT_USAGE
    missing = [str(p) for p in [*args.events, args.import_events] if p is not None and not p.is_file()]
    missing += [str(p) for p in args.webhooks if not p.exists()]
    if missing:
        print(f"sitemap-updater: cannot read {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    mapping = (args.mapping or FUNCTIONS_DIR / "webhook-mapping.json").resolve()
    try:
        webhooks = sample_files(args.webhooks, mapping) if args.webhooks else []
    except ValueError as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    reports = []
    with LocalRun(
        args.site.base_url, args.max_urls_per_file, args.endpoint_url, indexnow_endpoint=args.indexnow_endpoint
    ) as run:
        where = run.endpoint_url or "moto in this process"
        print(f"local stack on {where}, created from template.yaml:")
        for logical, physical in run.resources().items():
            print(f"  {logical}: {physical}")
        status = EXIT_OK
        if args.import_events is not None or args.adopt is not None:
            from sitemap_updater.cli_import import local_import

            status, imported = local_import(run, args)
            if not imported:  # nothing read, adopted or accepted: stop before anything is copied
                return status
        for path in args.events:
            report = run.send_wave(read_events_file(path)).as_dict()
            reports.append(report)
            print(_wave_summary(str(path), report))
        if webhooks:
            report = webhook_wave(run, webhooks, mapping)
            reports.append(report)
            print(_wave_summary("webhooks", report))
        for error in run.errors:
            print(f"  a function failed and its batch was retried: {error}", file=sys.stderr)
        try:
            run.download(args.out)
        except FileExistsError as exc:
            print(f"sitemap-updater: nothing copied: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if args.log is not None:
            args.log.write_text("\n".join(run.logs) + "\n", encoding="utf-8")
    if args.report is not None:
        args.report.write_text(json.dumps(reports, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"published files copied to {args.out}")
    return status


def _wave_summary(source: str, report: dict[str, object]) -> str:
    events = report["events"]
    s3 = report["s3"]
    assert isinstance(events, dict) and isinstance(s3, dict)
    lines = [f"wave {report['wave']} ({source}): " + ", ".join(f"{count} {name}" for name, count in events.items())]
    hooks = report.get("webhooks", [])
    assert isinstance(hooks, list)
    for hook in hooks:  # HTTP status, then what the endpoint answered
        answer = hook["answer"] if isinstance(hook["answer"], dict) else {}
        said = (
            f"queued {', '.join(answer['urls']) or 'nothing'}"
            if "urls" in answer
            else f"ignored: {answer['ignored']}"
            if "ignored" in answer
            else f"refused: {answer.get('error')}"
        )
        lines.append(f"  webhook {hook['file']}: HTTP {hook['status']}, {said}")
    lines.append(f"  written: {', '.join(s3['put']) or 'nothing'}")
    if s3["deleted"]:
        lines.append(f"  deleted: {', '.join(s3['deleted'])}")
    changed = report["changed_urls"]
    assert isinstance(changed, list)
    lines += [f"  changed: {url}" for url in changed]
    notifications = report["notifications"]
    assert isinstance(notifications, list)
    for sent in notifications:
        status = "not sent (dry run)" if sent["status"] is None else f"HTTP {sent['status']}"
        lines.append(f"  IndexNow/Search Console: {len(sent['urls'])} URL(s) to {sent['endpoint']}: {status}")
    rejections = report["rejections"]
    assert isinstance(rejections, list)
    lines += [f"  rejected (to the DLQ): {r['reason']}" for r in rejections]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sitemap-updater`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "build":
        return _build(args)
    if args.command == "local":
        return _local(args)
    if args.command == "import":
        from sitemap_updater.cli_import import run_import

        return run_import(args)
    if args.command == "schema":
        print(json.dumps(event_json_schema(), indent=2, ensure_ascii=False))
        return EXIT_OK
    return EXIT_USAGE  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
