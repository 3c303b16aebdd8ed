"""The ``import`` command, and the import or adoption that ``local`` starts with: reading, reporting, statuses."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from sitemap_updater.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt import Adoption

if TYPE_CHECKING:
    from sitemap_updater.local.runner import LocalRun
    from sitemap_updater.service.bulk_import import ImportResult


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


def _adopt(location: str, site: Site, max_total_bytes: int) -> tuple[list[str], int]:
    """Read a site's sitemaps; print what was skipped or dropped. The events, and the exit status so far:
    2 when nothing could be read, 1 when nothing was adopted or something was skipped."""
    progress = _AdoptProgress(sys.stderr)
    adoption = Adoption(site, max_total_bytes=max_total_bytes, progress=progress)
    bodies = list(adoption.events(location))
    progress.close()
    for line in adoption.warning_lines:
        print(line, file=sys.stderr)
    for note in adoption.notes:
        print(f"note: {note}", file=sys.stderr)
    for problem in adoption.problems:
        print(f"not adopted: {problem}", file=sys.stderr)
    print(f"adopted {location}: {adoption.pages:,} pages from {adoption.files:,} files "
          f"({adoption.bytes_read:,} bytes); {len(adoption.problems):,} problems")  # fmt: skip
    if adoption.files == 0:
        return [], EXIT_USAGE
    if not bodies:
        print("sitemap-updater: no page adopted; nothing imported", file=sys.stderr)
        return [], EXIT_FAILED
    return bodies, EXIT_FAILED if adoption.problems else EXIT_OK


def local_import(run: LocalRun, args: argparse.Namespace) -> tuple[int, bool]:
    """``local --import`` or ``--adopt``: the exit status so far, and whether anything was imported."""
    from sitemap_updater.local.runner import read_events_file

    source = args.import_events or args.adopt
    status = EXIT_OK
    if args.adopt is not None:
        bodies, status = _adopt(args.adopt, args.site, args.max_total_bytes)
        if not bodies:
            return status, False
    else:
        try:
            bodies = read_events_file(args.import_events)
        except (OSError, ValueError) as exc:
            print(f"sitemap-updater: cannot read the input: {exc}", file=sys.stderr)
            return EXIT_USAGE, False
    result = run.import_site(bodies)
    return _imported(source, result, status), result.index is not None


def run_import(args: argparse.Namespace) -> int:
    import os

    import boto3

    from sitemap_updater.service.bulk_import import import_events
    from sitemap_updater.service.pipeline import Pipeline
    from sitemap_updater.settings import Settings, SettingsError

    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    pipeline = Pipeline.connect(settings, boto3.session.Session().client, args.endpoint_url)
    status = EXIT_OK
    if args.sitemap is not None:
        bodies, status = _adopt(args.sitemap, pipeline.site, args.max_total_bytes)
        if not bodies:
            return status
    else:
        try:
            bodies = [line for line in args.events.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, ValueError) as exc:
            print(f"sitemap-updater: cannot read the input: {exc}", file=sys.stderr)
            return EXIT_USAGE
    return _imported(args.events or args.sitemap, import_events(bodies, pipeline), status)


def _imported(source: object, result: ImportResult, status: int) -> int:
    """Print what an import did; its exit status (1 when no event was accepted: nothing was written)."""
    for line, reason in result.rejections:
        print(f"{source}:{line}: rejected: {reason}", file=sys.stderr)
    written = sum(len(s.put) for s in result.sections)
    print(f"import ({source}): {result.pages:,} pages, {written:,} sitemap files published, "
          f"{len(result.rejections):,} rejected")  # fmt: skip
    if result.index is None:
        print("sitemap-updater: no event was accepted; nothing imported", file=sys.stderr)
        return EXIT_FAILED
    return status
