"""``sitemap-updater verify URL``: the published site as a crawler reads it, checked; a report or JSON."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sitemap_updater.cli_parser import stack_option
from sitemap_updater.core.terminal import shown
from sitemap_updater.core.urls import Site

if TYPE_CHECKING:  # the checks and the HTTP client are imported when the command runs, not for every command
    from sitemap_updater.service.pipeline import Pipeline
    from sitemap_updater.service.verify import FileCheck, Verification

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_UNFINISHED = 0, 1, 2, 3
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
ENVIRONMENT = object()  # --stack without a name: the stack the environment variables name (not a string: argparse
# would check a string against the stack name's type)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``verify`` command's options."""
    v = commands.add_parser(
        "verify",
        help="read the published site as a crawler does (robots.txt, index files, sitemaps) and check it",
        description=(
            "Read a published site as a crawler does: robots.txt (when URL is the site's root) and the index files "
            "it names, then every sitemap they name, gzip or not. Checks each file's HTTP status, Content-Type, "
            "Content-Encoding and Cache-Control; XML in the sitemap namespace (or a text sitemap), valid against "
            "the official schemas when --schemas is given; the limits (50,000 entries, 52,428,800 bytes "
            "uncompressed); every URL on the site's host, in canonical form and listed once; no lastmod in the "
            "future; each index lastmod no older than its file's newest; no index naming an index (itself, or one "
            "naming it back: a loop). A server's wrong answer (not HTTP, cut short, too slow) is a problem of its "
            "file. Exit status: 0 no problem (notes may be printed); 1 problems, each named with its file; 2 the "
            "URL or an option is not usable; 3 the check could not be completed (no connection could be made, or "
            "--total-timeout ran out), with the problems found until then."
        ),
    )
    v.add_argument(
        "url",
        metavar="URL",
        help="the site's root (https://www.example.com), or an index or sitemap URL; https:// when no scheme is given",
    )
    v.add_argument(
        "--site",
        metavar="URL",
        help="the canonical scheme and host the pages and sitemaps must be on, when URL is another origin (a "
        "staging host, the bucket's endpoint): the site's URLs are then read from URL's origin (default: URL's)",
    )
    stack_option(
        v,
        "also compare the stack NAME's published tree with its manifests (every file's bytes with its record, files "
        "no record names), as the hourly reconciliation does, repairing nothing; the stack's outputs are read with "
        "DescribeStacks (--stack without NAME: from the environment variables `import` reads, SITE_URL, ...)",
        nargs="?",
        const=ENVIRONMENT,
    )
    v.add_argument("--endpoint-url", metavar="URL", help="with --stack: an AWS-compatible endpoint instead of AWS")
    v.add_argument("--json", action="store_true", help="print the whole report as JSON instead of text")
    v.add_argument(
        "--schemas",
        type=Path,
        metavar="DIR",
        help="a folder with the official schemas as sitemaps.org and Google publish them (sitemap.xsd and "
        "siteindex.xsd; sitemap-image.xsd, sitemap-video.xsd, sitemap-news.xsd and an XHTML schema for the "
        "extensions used) to validate every file with; nothing is downloaded",
    )
    v.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long one file may take, from connecting to its last byte (default: 60); a file slower than "
        "that is a problem",
    )
    v.add_argument(
        "--total-timeout",
        type=_seconds,
        default=900.0,
        metavar="SECONDS",
        help="how long the whole check may take (default: 900); past it the check stops with exit status 3",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 10**6:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _absolute(url: str) -> str:
    """``url``, with https:// before it when it names no scheme (``www.example.com``)."""
    url = url.strip()
    return url if _SCHEME.match(url) else f"https://{url}"


def run_verify(args: argparse.Namespace) -> int:
    from sitemap_updater.adapters.fetch import WebFetcher
    from sitemap_updater.service.verify import TimeLimits, verify
    from sitemap_updater.service.verify_schemas import SchemaError, Schemas

    url = _absolute(args.url)
    parts = urlsplit(url)
    try:
        origin = Site.parse(f"{parts.scheme}://{parts.netloc}")
        site = Site.parse(_absolute(args.site)) if args.site else origin
    except ValueError as exc:  # UrlError, and urlsplit's own (an IPv6 literal left open)
        print(f"sitemap-updater: {shown(exc)}", file=sys.stderr)
        return EXIT_USAGE
    schemas = None
    if args.schemas is not None:
        try:
            schemas = Schemas.load(args.schemas)
        except (OSError, SchemaError) as exc:
            print(f"sitemap-updater: cannot use the schemas in {shown(args.schemas)}: {shown(exc)}", file=sys.stderr)
            return EXIT_USAGE
    pipeline = None
    if args.stack is not None:  # read before the crawl: a stack that cannot be read stops the command at once
        pipeline = _stack_pipeline(None if args.stack is ENVIRONMENT else args.stack, args.endpoint_url)
        if pipeline is None:
            return EXIT_USAGE
    progress = _progress if sys.stderr.isatty() and not args.json else None
    limits = TimeLimits(file_s=args.timeout, total_s=args.total_timeout)
    result = verify(url, site, WebFetcher({origin.netloc}), schemas=schemas, progress=progress, limits=limits)
    if progress is not None:
        print(file=sys.stderr)
    if pipeline is not None:
        _compare_stack(pipeline, result, site if args.site else None)
    print(json.dumps(result.as_dict(), indent=2) if args.json else report(result))
    if result.unfinished:
        return EXIT_UNFINISHED
    return EXIT_PROBLEMS if result.problems else EXIT_OK


def _stack_pipeline(stack: str | None, endpoint_url: str | None) -> Pipeline | None:
    """The stack's clients and adapters; None when the stack cannot be read (said on stderr)."""
    import boto3

    from sitemap_updater.settings import SettingsError
    from sitemap_updater.wiring.deployed import StackError, command_settings
    from sitemap_updater.wiring.pipeline import connect_pipeline

    make_client = boto3.session.Session().client
    try:
        settings = command_settings(stack, make_client, endpoint_url)
    except (StackError, SettingsError) as exc:
        print(f"sitemap-updater: {shown(exc)}", file=sys.stderr)
        return None
    return connect_pipeline(settings, make_client, endpoint_url)


def _compare_stack(pipeline: Pipeline, result: Verification, only: Site | None) -> None:
    """Add the comparison of each site's tree to ``result`` (the stack's own, then each active site added at run
    time, by host; ``only``: that site's alone); when AWS fails midway (a table or bucket gone, access denied, no
    connection), the check is unfinished with AWS's reason instead of a traceback."""
    from botocore.exceptions import BotoCoreError, ClientError

    from sitemap_updater.core.site_keys import object_prefix
    from sitemap_updater.sites import ACTIVE
    from sitemap_updater.wiring.sites import site_pipeline

    bucket = f"s3://{pipeline.settings.bucket_name}"
    try:
        trees = [(pipeline, bucket)]
        if pipeline.directory is not None:
            for site in sorted(pipeline.directory.list_sites(), key=lambda found: found.host):
                if site.state == ACTIVE:
                    trees.append((site_pipeline(pipeline, site), f"{bucket}/{object_prefix(site.host)}"))
        if only is not None:
            trees = [tree for tree in trees if tree[0].site.netloc == only.netloc]
            if not trees:
                result.unfinished = f"{only.netloc} is no active site of the stack (`sitemap-updater sites list`)"
                return
        for tree, where in trees:
            result.files.append(_stack_check(tree, where))
    except (ClientError, BotoCoreError) as exc:
        result.unfinished = f"the stack's published tree could not be compared with its manifests: {exc}"


def _stack_check(pipeline: Pipeline, where: str) -> FileCheck:
    """One site's published tree (``where``) against its manifests, as reconciliation sees it (nothing repaired)."""
    from sitemap_updater.service.reconcile import reconcile
    from sitemap_updater.service.verify import FileCheck

    found = reconcile(pipeline, budget=10**9, repair=False)
    check = FileCheck(where, "stack", entries=len(found.checked))
    check.problems += [f"{name}: missing, though its record says it is published" for name in found.missing]
    check.problems += [
        f"{name}: holds other bytes than its record says (changed out of band)" for name in found.changed
    ]
    check.problems += [f"{name}: named by no record or index" for name in found.stray]
    return check


def _progress(result: Verification) -> None:
    print(f"\r{len(result.files):,} files, {result.pages:,} pages read", end="", file=sys.stderr, flush=True)


def _notes(result: Verification) -> list[str]:
    """A note line per file, except that a note more than ``_NOTE_FILES`` files share is one line naming how many
    files have it and the first of them (``--json`` keeps one per file)."""
    files: dict[str, list[str]] = {}
    for f in result.files:
        for note in f.notes:
            files.setdefault(note, []).append(f.url)
    lines = []
    for note, urls in files.items():
        if len(urls) > _NOTE_FILES:
            lines.append(f"note: {len(urls):,} files, the first {urls[0]}: {note}")
        else:
            lines += [f"note: {url}: {note}" for url in urls]
    return lines


_NOTE_FILES = 3


def report(result: Verification) -> str:
    """The text report: one line per file, then problems and notes, then the verdict. Every line is shown
    escaped: what a server or a file sent cannot start a line of its own or act on the terminal."""
    lines = [f"verify {result.location}"]
    for f in result.files:
        if f.kind == "stack":
            answer = f"{f.entries:,} published {'file' if f.entries == 1 else 'files'} compared with the records"
        else:
            answer = f"HTTP {f.status}" if f.status is not None else "not read"
        counted = f"{f.entries:,} {'entry' if f.entries == 1 else 'entries'}, {f.bytes:,} bytes"
        size = f", {counted}" if f.kind not in ("robots.txt", "stack") and f.status == 200 else ""
        lines.append(f"  {f.kind}: {f.url}: {answer}{size}")
    lines += [f"problem: {p}" for p in result.problems]
    lines += _notes(result)
    count = len(result.problems)
    verdict = "no problem found" if not count else f"{count:,} problem(s)"
    if result.unfinished:
        lines.append(f"not completed: {result.unfinished}")
        verdict = f"check not completed, {count:,} problem(s) found until then"
    lines.append(f"{len(result.files):,} files, {result.pages:,} pages read: {verdict}")
    return "\n".join(shown(line) for line in lines)
