"""``sitemap-updater build``: the command's run and what it prints (its options are in cli.py)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TextIO

from sitemap_updater.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, STDIN, input_name, stdin_bytes
from sitemap_updater.core.errors import LimitExceeded
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import INDEX_NAME, Limits
from sitemap_updater.core.terminal import shown
from sitemap_updater.core.urls import Site, foreign_host, parse_sections
from sitemap_updater.service.build import BuildRefused, BuildResult, build
from sitemap_updater.service.scratch import scratch_folder, sweep

EXIT_TERMINATED = 143  # 128 + SIGTERM
SHOWN_REJECTIONS = 100  # rejected lines printed by default (--show-rejected); the rest are counted by reason
_SPOOL_CHUNK = 1 << 20
_SPOOL = "sitemap-updater-stdin-"  # the folder, in the system's temporary folder, of a copy of standard input


class Terminated(BaseException):
    """SIGTERM, raised where the build is so that it cleans up as for Ctrl-C (not an Exception: nothing that
    handles errors may take it for one)."""


def run_build(args: argparse.Namespace) -> int:
    events: Path = args.events
    out: Path = args.out
    if events != STDIN and not events.exists():
        return _usage(f"cannot read {events}: no such file")
    if events != STDIN and events.is_dir():
        return _usage(f"cannot read {events}: it is a folder; --events takes a file of page events, one per line")
    if out.exists() and not out.is_dir():
        return _usage(f"--out {out} is a file; it must name a folder (created if missing)")
    sites: list[Site] = getattr(args, "sites", None) or [args.site]
    if len({site.netloc for site in sites}) < len(sites):
        return _usage("--site names a host twice; give each site once")
    # What is alive now (the modules, mostly) lives until the process exits: the collector leaves it alone from
    # here, in this process and in the forked workers (whose pages stay shared), and at exit (about 15 ms less).
    gc.freeze()
    progress = _Progress(sys.stderr)
    started = time.perf_counter()
    try:
        with _terminate_raises(), _spooled(events) as source:
            if len(sites) > 1:
                from sitemap_updater.cli_build_sites import build_sites

                return build_sites(source, input_name(events), args, progress)
            result = _build(source, input_name(events), args, progress)
    except (KeyboardInterrupt, Terminated) as stop:
        progress.close()
        how = "interrupted" if isinstance(stop, KeyboardInterrupt) else "terminated"
        left = f"nothing written, {out} left as it was" if len(sites) == 1 else "the site being built left as it was"
        print(f"sitemap-updater: {how}: {left}", file=sys.stderr)
        return EXIT_INTERRUPTED if isinstance(stop, KeyboardInterrupt) else EXIT_TERMINATED
    except OSError as exc:
        progress.close()
        return _usage(_os_error(exc, events))
    if isinstance(result, int):
        return result
    _report_lines(input_name(events), result, args)
    _recovered(result, out)
    print(_summary(result, out, time.perf_counter() - started))
    print(f"for the site's robots.txt (once the files are served from {args.site.base_url}/):")
    for index in result.indexes or [INDEX_NAME]:
        print(f"Sitemap: {args.site.base_url}/{index}")
    return EXIT_OK


def _build(events: Path, name: str, args: argparse.Namespace, progress: _Progress) -> BuildResult | int:
    result, error = build_tree(events, args.out, args.site, args, progress)
    if error is None:
        return result
    _recovered(result, args.out)
    _report_lines(name, result, args)
    print(f"sitemap-updater: nothing written, {args.out} left as it was: {error}", file=sys.stderr)
    return EXIT_FAILED


def build_tree(
    events: Path, out: Path, site: Site, args: argparse.Namespace, progress: _Progress
) -> tuple[BuildResult, str | None]:
    """Build ``site``'s tree in ``out`` from ``events`` with the command's options; the result and None, or, when
    nothing was written, what the build found (a refused build's lines; nothing for a limit) and why. The progress
    line is closed either way."""
    as_of = args.as_of or datetime.now(UTC)
    try:
        result = build(
            events,
            out,
            dataclasses.replace(site, sections=parse_sections(args.sections)),
            Limits(max_urls=args.max_urls_per_file),
            to_micros(as_of),
            workers=args.workers,
            progress=None if args.quiet else progress,
            max_rejected_share=args.max_rejected_share,
            text_sitemaps=args.text_sitemaps,
        )
    except BuildRefused as exc:
        return exc.result, str(exc)
    except LimitExceeded as exc:
        return BuildResult(), str(exc)
    finally:
        progress.close()
    return result, None


def _recovered(result: BuildResult, out: Path) -> None:
    if result.recovered:
        print(f"a build killed while it moved its files into {out}: every file put back as it was before it")


def _usage(message: str) -> int:
    print(f"sitemap-updater: {message}", file=sys.stderr)
    return EXIT_USAGE


def _os_error(exc: OSError, events: Path) -> str:
    """An error of the system in words, naming its file ("[Errno 13] ..." is not for users)."""
    what = exc.strerror or str(exc)
    if exc.filename is None:
        return f"cannot read {input_name(events)}: {what}"
    return f"{exc.filename}: {what}"


@contextlib.contextmanager
def _terminate_raises() -> Iterator[None]:
    """While the build runs, SIGTERM raises Terminated in it (once: a second one while it cleans up is ignored),
    so that it cleans up as for Ctrl-C. Signals are only the main thread's to handle: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def _spooled(events: Path) -> Iterator[Path]:
    """``events`` when it is a file; for ``-`` (standard input) or what is not a file to seek in (a named pipe, a
    process substitution such as ``<(zcat pages.jsonl.gz)``), a copy in chunks in a temporary folder (removed
    afterwards, or by the next build when this one was killed), since a build reads its export in byte ranges
    from several processes."""
    if events != STDIN and events.is_file():
        yield events
        return
    temporary = Path(tempfile.gettempdir())
    sweep(temporary, _SPOOL)
    with scratch_folder(temporary, _SPOOL) as spool:
        path = spool / "stdin.jsonl"
        with path.open("wb") as out, contextlib.ExitStack() as close:
            source = stdin_bytes() if events == STDIN else close.enter_context(events.open("rb"))
            shutil.copyfileobj(source, out, _SPOOL_CHUNK)
        yield path


class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._active = stream.isatty()
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self._active or not total:
            return
        share = done / total
        bar = "#" * int(share * 30)
        self._stream.write(f"\rvalidating [{bar:<30}] {share:6.1%}")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self._stream.write("\n")
            self._shown = False


def _indexes_text(indexes: list[str]) -> str:
    return INDEX_NAME if len(indexes) <= 1 else f"{len(indexes)} index files ({INDEX_NAME} and sitemap-index-*.xml)"


def _summary(result: BuildResult, out: Path, seconds: float) -> str:
    texts = sum(name.endswith(".txt") for name in result.files)
    files = f"{len(result.files) - texts:,} sitemap files" + (f" (and {texts:,} text sitemaps)" if texts else "")
    lines = [
        f"{result.lines:,} lines read: {result.accepted:,} events accepted, {len(result.rejections):,} rejected"
        + (f", {blank:,} blank" if (blank := result.lines - result.accepted - len(result.rejections)) > 0 else ""),
        f"{files} + {_indexes_text(result.indexes)} in {out}: {result.urls:,} URLs, "
        f"{result.gzip_bytes:,} bytes written ({result.xml_bytes:,} bytes of XML) in {seconds:.1f} s",
    ]
    if result.unchanged:
        lines.append(f"{len(result.unchanged):,} of these files already had these bytes in {out}: left as they were")
    if result.removed:
        lines.append(f"{len(result.removed):,} files an earlier build wrote, no longer part of the site, removed")
    return "\n".join(lines)


_SPECIFIC = re.compile(r"'[^']*'|\"[^\"]*\"|\d[\d,.]*")  # the values in a reason, left out to tell its kind


def _report_lines(name: str, result: BuildResult, args: argparse.Namespace) -> None:
    """The rejected lines, then the warnings (the first ``--show-rejected`` of each; when some were not shown, how
    many of each kind there were); a hint when most events are on one other host than --site's."""
    limit: int | None = args.show_rejected
    _listed(name, "rejected", [(r.line, r.reason) for r in result.rejections], limit)
    hosts = Counter(host for r in result.rejections if (host := foreign_host(r.reason)) is not None)
    events = result.accepted + len(result.rejections)
    if hosts:
        host, count = hosts.most_common(1)[0]
        if count * 2 > events:
            site = f"{args.site.scheme}://{host}"
            print(
                shown(f"hint: {count:,} of {events:,} events are on {host}: did you mean --site {site}?"),
                file=sys.stderr,
            )
    if not args.quiet:
        _listed(name, "warning", result.warnings, limit)


def _listed(name: str, label: str, found: list[tuple[int, str]], limit: int | None) -> None:
    """Lines of one label (``rejected``, ``warning``), the first ``limit`` of them (None: all), then, when some
    were not shown, how many of each kind there were (a kind: the text without its quoted values and numbers)."""
    first = found if limit is None else found[:limit]
    for line, text in first:
        print(shown(f"{name}:{line}: {label}: {text}"), file=sys.stderr)
    hidden = len(found) - len(first)
    if not hidden:
        return
    plural = "rejected lines" if label == "rejected" else "warnings"
    print(shown(f"{name}: {hidden:,} more {plural} not shown (--show-rejected all shows each)"), file=sys.stderr)
    kinds: dict[str, tuple[tuple[int, str], list[int]]] = {}
    for line, text in found:
        kinds.setdefault(_SPECIFIC.sub("…", text), ((line, text), []))[1].append(line)
    print(shown(f"{name}: {plural} by reason:"), file=sys.stderr)
    for (at, text), lines in sorted(kinds.values(), key=lambda kind: (-len(kind[1]), kind[0][0]))[:_KINDS_SHOWN]:
        print(shown(f"  {len(lines):>9,} like line {at}: {text}"), file=sys.stderr)
    if len(kinds) > _KINDS_SHOWN:
        print(f"  and {len(kinds) - _KINDS_SHOWN:,} other reasons", file=sys.stderr)


_KINDS_SHOWN = 20
