"""The command line's options: every command's parser and the types that read their values (``--site``,
``--sections``, ``--stack``, adoption's bounds, ...). cli.py runs the command they name."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sitemap_updater.core.errors import MAX_REJECTED_SHARE
from sitemap_updater.core.sharding import DEFAULT_URLS_PER_FILE, MAX_URLS_PER_FILE
from sitemap_updater.core.urls import Site, UrlError, parse_sections
from sitemap_updater.service.adopt_limits import (
    FILE_SECONDS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_SECONDS,
    MAX_TOTAL_BYTES,
)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version (the package's ``__version__`` when not installed)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("sitemap-updater")
        except PackageNotFoundError:
            import sitemap_updater

            number = getattr(sitemap_updater, "__version__", "unknown")
        print(f"{parser.prog} {number}")
        parser.exit()


def _site(value: str) -> Site:
    try:
        return Site.parse(value)
    except UrlError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _EverySite(argparse.Action):
    """``--site``, once or more: ``site`` is the first, ``sites`` every one in order (``build`` and ``local``)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        sites = [*(getattr(namespace, "sites", None) or []), values]
        namespace.sites = sites
        setattr(namespace, self.dest, sites[0])


def _sections(value: str) -> str:
    try:
        parse_sections(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _sections_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--sections",
        type=_sections,
        default="",
        metavar="NAMES",
        help=f"first path segments whose pages get files of their own, comma-separated (blog,news); the others, and "
        f"every page by default, share the root section, split by key range; * gives every first segment its "
        f"own files; an event's section field always wins ({what})",
    )


def whole_number(value: str, highest: int | None = None) -> int:
    """An option's whole number from 1 (to ``highest``, when given)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= number <= (highest or number):
        raise argparse.ArgumentTypeError(f"must be from 1 to {highest:,}" if highest else "must be at least 1")
    return number


def _shown(value: str) -> int | None:
    if value == "all":
        return None
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number or all") from None
    if number < 0:
        raise argparse.ArgumentTypeError("must be at least 0")
    return number


def _max_urls(value: str) -> int:
    return whole_number(value, MAX_URLS_PER_FILE)


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


def command_parser() -> argparse.ArgumentParser:
    """The options of every command (``verify``, ``redrive`` and ``sites`` add theirs from their own modules)."""
    parser = argparse.ArgumentParser(
        prog="sitemap-updater",
        description="Event-driven, byte-stable XML sitemaps for large sites.",
    )
    parser.add_argument("--version", action=_Version)
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
    b.add_argument(
        "--site",
        required=True,
        type=_site,
        action=_EverySite,
        help="canonical scheme and host, e.g. https://www.example.com; once per site to build several sites from one "
        "export (each line to the site of its URL's host; the first in DIR, the others in DIR/sites/<host>/)",
    )
    b.add_argument(
        "--events", required=True, type=Path, metavar="PAGES.jsonl", help="page events, one per line (- for stdin)"
    )
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
    _sections_option(b, "the stack parameter Sections")
    b.add_argument(
        "--text-sitemaps",
        action="store_true",
        help="also write a text sitemap beside each file (sitemap-<section>-<start>.txt: its URLs, one a line)",
    )
    b.add_argument(
        "--workers", type=whole_number, default=None, metavar="N", help="processes to use (default: all cores)"
    )
    b.add_argument("--quiet", action="store_true", help="print only the summary and rejected lines")
    b.add_argument(
        "--show-rejected",
        type=_shown,
        default=100,
        metavar="N",
        help="print the first N rejected lines and the first N warnings (default 100; all for every one); past N, "
        "how many there were of each reason",
    )
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
        "--site",
        type=_site,
        action=_EverySite,
        help="canonical scheme and host, e.g. https://www.example.com (required without --stack); once per site: "
        "the first is the stack's SiteUrl, each other is added as `sites add` does, its files copied to "
        "DIR/sites/<host>/",
    )
    loc.add_argument(
        "--events",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="one wave; repeat for more; - reads standard input (once, for one --events or --import)",
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
        "the file sam build deploys; an installed package carries a copy)",
    )
    first = loc.add_mutually_exclusive_group()
    first.add_argument(
        "--import", dest="import_events", type=Path, metavar="PAGES.jsonl", help="first import an export (- for stdin)"
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
    stack_option(
        loc,
        "with --endpoint-url: use the stack NAME that CloudFormation created there (LocalStack, a moto server) "
        "instead of creating one: its resources from its outputs, its site, sections and limits from its parameters "
        "(so --site, --sections, --max-urls-per-file and --text-sitemaps are not given)",
    )
    loc.add_argument(
        "--max-urls-per-file", type=_max_urls, default=None, metavar="N", help="the stack parameter MaxUrlsPerFile"
    )
    _sections_option(loc, "the stack parameter Sections")
    loc.add_argument(
        "--text-sitemaps", action="store_true", help="the stack parameter TextSitemaps: a text sitemap beside each file"
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
            "write the manifests in batches and publish every file and the index once. The stack is the one "
            "--stack names (its outputs and parameters, read with CloudFormation's DescribeStacks); without "
            "--stack, the environment variables the functions read (SITE_URL, MANIFEST_TABLE, BUCKET_NAME, ...)."
        ),
    )
    source = imp.add_mutually_exclusive_group(required=True)
    source.add_argument("--events", type=Path, metavar="PAGES.jsonl", help="page events, one per line (- for stdin)")
    source.add_argument(
        "--sitemap", metavar="URL_OR_FILE", help="an existing sitemap, sitemap index or text sitemap to adopt"
    )
    stack_option(imp, "the deployed stack to import into (the name given to sam deploy)")
    imp.add_argument(
        "--site",
        metavar="ORIGIN",
        help="the site the export loads: the stack's own (default) or one added with `sites add` "
        "(https://www.example.de); lines of other hosts are rejected, naming the host",
    )
    imp.add_argument("--endpoint-url", metavar="URL", help="an AWS-compatible endpoint instead of AWS")
    _adopt_options(imp)
    from sitemap_updater.cli_redrive import add_parser as add_redrive
    from sitemap_updater.cli_sites import add_parser as add_sites
    from sitemap_updater.cli_verify import add_parser as add_verify

    add_verify(commands)
    add_redrive(commands)
    add_sites(commands)
    commands.add_parser(
        "schema",
        help="print the JSON Schema of the event contract (docs/event.schema.json)",
        description=(
            "Print the JSON Schema of the page event contract v1 to stdout: one event (an upsert or a delete) as "
            "build, import, local and the ingest queue take it. It is the same document as docs/event.schema.json "
            "(`make schema` writes that file from this output)."
        ),
    )
    return parser


def _stack(value: str) -> str:
    from sitemap_updater.wiring.deployed import stack_name

    try:
        return stack_name(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def stack_option(parser: argparse.ArgumentParser, what: str, **kwargs: Any) -> None:
    """``--stack NAME``: a CloudFormation stack's name (or ID), its settings read with DescribeStacks."""
    parser.add_argument("--stack", type=_stack, metavar="NAME", help=what, **kwargs)


def _adopt_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-total-bytes",
        type=_bytes,
        default=MAX_TOTAL_BYTES,
        metavar="N",
        help=f"adoption stops after N bytes of sitemaps, uncompressed, in all (default {MAX_TOTAL_BYTES:,}); "
        f"each file may give at most {MAX_FILE_BYTES:,}, the protocol's limit",
    )
    parser.add_argument(
        "--max-seconds",
        type=_seconds,
        default=MAX_SECONDS,
        metavar="S",
        help=f"adoption stops after S seconds in all (default {MAX_SECONDS:,}); each file must arrive within "
        f"{FILE_SECONDS} s; at most {MAX_FILES:,} files are read, indexes {MAX_DEPTH} deep",
    )


def _seconds(value: str) -> float:
    try:
        number = float(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not 0 < number < 1e9:  # NaN and infinity too
        raise argparse.ArgumentTypeError("must be more than 0 (and a number)")
    return number


def _bytes(value: str) -> int:
    try:
        number = int(value.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of bytes") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number
