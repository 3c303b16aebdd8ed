"""The ``import`` command, and the import or adoption that ``local`` starts with: reading, reporting, statuses."""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sitemap_updater.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, STDIN, input_name, stdin_bytes
from sitemap_updater.core.lines import LongLine, decoded, export_lines
from sitemap_updater.core.terminal import shown
from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt import Adoption
from sitemap_updater.service.bulk_import import ImportRefused

_KEEP = 1 << 20  # bytes of a line held at most: a longer one is rejected by its size (an event is 256 KiB at most)

if TYPE_CHECKING:
    from sitemap_updater.local.runner import LocalRun
    from sitemap_updater.service.bulk_import import ImportResult
    from sitemap_updater.service.pipeline import Pipeline


class _AdoptProgress:
    """Files, pages and bytes read so far, on one line of a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._active = stream.isatty()

    def __call__(self, adoption: Adoption) -> None:
        if self._active:
            self._stream.write(
                f"\radopting: {adoption.files:,} files, {adoption.pages:,} pages, "
                f"{adoption.bytes_read / 1e6:,.1f} MB read"
            )
            self._stream.flush()

    def close(self) -> None:
        if self._active:
            self._stream.write("\n")


def _adopt(location: str, site: Site, args: argparse.Namespace) -> tuple[list[str], int, dict[str, Any]]:
    """Read a site's sitemaps; print what was skipped or dropped. The events, the exit status so far (2 when
    nothing could be read, 1 when nothing was adopted or something was skipped), and what the report says."""
    progress = _AdoptProgress(sys.stderr)
    adoption = Adoption(site, max_total_bytes=args.max_total_bytes, max_seconds=args.max_seconds, progress=progress)
    bodies = list(adoption.events(location))
    progress.close()
    for line in adoption.warning_lines:
        print(shown(line), file=sys.stderr)
    for note in adoption.notes:
        print(shown(f"note: {note}"), file=sys.stderr)
    for problem in adoption.problems:
        print(shown(f"not adopted: {problem}"), file=sys.stderr)
    print(shown(f"adopted {location}: {adoption.pages:,} pages from {adoption.files:,} files "
                f"({adoption.bytes_read:,} bytes); {adoption.problem_count:,} problems"))  # fmt: skip
    report = {
        "source": location, "files": adoption.files, "pages": adoption.pages, "bytes": adoption.bytes_read,
        "problems": adoption.problem_count, "problem_lines": adoption.problems, "warnings": adoption.warning_lines,
        "notes": adoption.notes,
    }  # fmt: skip
    if adoption.files == 0:
        return [], EXIT_USAGE, report
    if not bodies:
        print("sitemap-updater: no page adopted; nothing imported", file=sys.stderr)
        return [], EXIT_FAILED, report
    return bodies, EXIT_FAILED if adoption.problems else EXIT_OK, report


class _Export:
    """The non-blank lines of a JSONL export (standard input for ``-``), read as a stream as ``build`` reads it
    (``core.lines``): numbered as ``build`` numbers them, each line on its own (one that is not UTF-8, or too long
    to hold, is rejected alone)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._blanks: list[int] = []  # for each blank line, how many bodies came before it

    def __iter__(self) -> Iterator[str | bytes | LongLine]:
        stream = stdin_bytes() if self.path == STDIN else self.path.open("rb")
        bodies, expected = 0, 1
        try:
            for number, line in export_lines(iter(lambda: stream.read(1 << 20), b""), _KEEP):
                self._blanks += [bodies] * (number - expected)  # the blank lines before this one
                bodies, expected = bodies + 1, number + 1
                yield decoded(line)
        finally:
            if self.path != STDIN:  # standard input stays open
                stream.close()

    def line(self, body: int) -> int:
        """The line number of the ``body``-th non-blank line (1-based)."""
        return body + bisect.bisect_left(self._blanks, body)


def _import_export(path: Path, load: Callable[[_Export], ImportResult]) -> tuple[int, bool, dict[str, Any]]:
    """Import a JSONL export: the exit status, whether anything was imported, and what the report says."""
    export, name = _Export(path), input_name(path)
    report: dict[str, Any] = {"source": name}
    try:
        result = load(export)
    except OSError as exc:  # nothing is written before every line is read
        print(shown(f"sitemap-updater: cannot read {name}: {exc}"), file=sys.stderr)
        return EXIT_USAGE, False, {"import": report | {"error": f"cannot read {name}: {exc}"}}
    except ImportRefused as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE, False, {"import": report | {"error": str(exc)}}
    status = _imported(name, result, EXIT_OK, lambda n: f"{name}:{export.line(n)}: rejected")
    rejections = [{"line": export.line(n), "reason": reason} for n, reason in result.rejections]
    return status, result.index is not None, {"import": report | _result(result, rejections)}


def _import_adopted(
    location: str, site: Site, args: argparse.Namespace, load: Callable[[list[str]], ImportResult]
) -> tuple[int, bool, dict[str, Any]]:
    """Adopt a site's sitemaps and import them: the exit status, whether anything was imported, and what the
    report says. A page the import rejects after adoption kept it is named by its URL, as adoption names the
    pages it skips (exit 1); pages adopted twice (the same URL listed again) are counted."""
    bodies, status, adopted = _adopt(location, site, args)
    report: dict[str, Any] = {"source": location, "adopted": adopted}
    if not bodies:
        return status, False, {"import": report}
    result = load(bodies)

    def url(number: int) -> str:
        return str(json.loads(bodies[number - 1])["url"])

    def skipped(number: int) -> str:
        return f"not adopted: {location}: page {url(number)} skipped"

    status = EXIT_FAILED if result.rejections else status
    repeated = len(bodies) - len(result.rejections) - result.pages  # every adopted event is an upsert: one page
    status = _imported(location, result, status, skipped, (repeated, len(bodies)))
    rejections = [{"url": url(n), "reason": reason} for n, reason in result.rejections]
    report |= _result(result, rejections) | {"repeated": repeated}
    return status, result.index is not None, {"import": report}


def _result(result: ImportResult, rejections: list[dict[str, Any]]) -> dict[str, Any]:
    put = [name for section in result.sections for name in section.put]
    put += result.index.indexes if result.index is not None else []
    return {"pages": result.pages, "rejections": rejections, "s3": {"put": put}}


def local_import(run: LocalRun, args: argparse.Namespace) -> tuple[int, bool, dict[str, Any]]:
    """``local --import`` or ``--adopt``: the exit status so far, whether anything was imported, and the report's
    first object (what was adopted and imported)."""
    if args.adopt is not None:
        return _import_adopted(args.adopt, args.site, args, run.import_site)
    return _import_export(args.import_events, run.import_site)


def run_import(args: argparse.Namespace) -> int:
    import boto3

    from sitemap_updater.service.bulk_import import check_first_import, import_events
    from sitemap_updater.settings import SettingsError
    from sitemap_updater.wiring.deployed import StackError, command_settings
    from sitemap_updater.wiring.pipeline import connect_pipeline

    make_client = boto3.session.Session().client
    try:
        settings = command_settings(args.stack, make_client, args.endpoint_url)
    except (StackError, SettingsError) as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.stack is not None:
        print(
            f"stack {args.stack}: {settings.site_url}, bucket {settings.bucket_name}, table {settings.manifest_table}"
        )
    pipeline = connect_pipeline(settings, make_client, args.endpoint_url)
    try:
        if args.site:
            pipeline = chosen_site(pipeline, args.site)
            tree = "the bucket's root" if pipeline.site.netloc == settings.site.netloc else "sites/<host>/"
            print(f"site {pipeline.site.netloc}: its files under {tree.replace('<host>', pipeline.site.netloc)}")
        check_first_import(pipeline)  # before reading anything
    except ImportRefused as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.sitemap is not None:
        return _import_adopted(args.sitemap, pipeline.site, args, lambda bodies: import_events(bodies, pipeline))[0]
    return _import_export(args.events, lambda export: import_events(export, pipeline))[0]


def chosen_site(stack: Pipeline, origin: str) -> Pipeline:
    """The pipeline of the site ``origin`` names: the stack's own, or an active site added at run time;
    ImportRefused otherwise."""
    from sitemap_updater.core.urls import UrlError
    from sitemap_updater.sites import ACTIVE
    from sitemap_updater.wiring.sites import site_pipeline

    try:
        host = Site.parse(origin).netloc
    except UrlError as exc:
        raise ImportRefused(f"--site: {exc}") from None
    if host == stack.site.netloc:
        return stack
    found = stack.directory.get_site(host) if stack.directory is not None else None
    if found is None or found.state != ACTIVE:
        raise ImportRefused(
            f"--site: {host} is no active site of this stack: add it first (`sitemap-updater sites add {origin}`)"
        )
    return site_pipeline(stack, found)


def _imported(
    source: str, result: ImportResult, status: int, rejected: Callable[[int], str], adopted: tuple[int, int] = (0, 0)
) -> int:
    """Print what an import did, each rejection as ``rejected(its number among the bodies)``, and of an adoption,
    how many of the pages ``adopted`` (repeated, of all) named a URL already adopted; the exit status (1 when no
    event was accepted: nothing was written)."""
    for number, reason in result.rejections:
        print(shown(f"{rejected(number)}: {reason}"), file=sys.stderr)
    written = sum(len(s.put) for s in result.sections)
    repeated, total = adopted
    again = (f" ({repeated:,} of the {total:,} pages adopted listed a URL again, each kept once with its newest "
             "state)") if repeated else ""  # fmt: skip
    print(shown(f"import ({source}): {result.pages:,} pages{again}, {written:,} sitemap files published, "
                f"{len(result.rejections):,} rejected"))  # fmt: skip
    if result.index is None:
        print("sitemap-updater: no event was accepted; nothing imported", file=sys.stderr)
        return EXIT_FAILED
    return status
