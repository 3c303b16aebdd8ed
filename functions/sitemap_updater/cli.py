"""Command line: ``sitemap-updater build`` (cli_build.py), ``local`` (cli_local.py), ``import`` (cli_import.py),
``verify`` (cli_verify.py), ``redrive`` (cli_redrive.py), ``sites`` (cli_sites.py), ``schema``; their options are in
cli_parser.py."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended
STDIN = Path("-")  # an input given as ``-``: standard input


def input_name(path: Path) -> str:
    """How an input is named in messages: its path, or ``<stdin>``."""
    return "<stdin>" if path == STDIN else str(path)


def stdin_bytes() -> BinaryIO:
    """Standard input as bytes (OSError when there is none)."""
    if sys.stdin is None or not hasattr(sys.stdin, "buffer"):
        raise OSError("standard input cannot be read")
    return sys.stdin.buffer


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sitemap-updater`` console script. Ctrl-C ends any command with one line and status
    130, as a shell reports it, not a traceback (``build`` says what it left; see cli_build.py)."""
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("sitemap-updater: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(argv: Sequence[str] | None) -> int:
    from sitemap_updater.cli_parser import command_parser

    args = command_parser().parse_args(argv)
    if args.command == "build":
        from sitemap_updater.cli_build import run_build

        return run_build(args)
    if args.command == "local":
        from sitemap_updater.cli_local import run_local

        return run_local(args)
    if args.command == "import":
        from sitemap_updater.cli_import import run_import

        return run_import(args)
    if args.command == "schema":
        import json

        from sitemap_updater.core.events import event_json_schema

        print(json.dumps(event_json_schema(), indent=2, ensure_ascii=False))
        return EXIT_OK
    if args.command == "verify":
        from sitemap_updater.cli_verify import run_verify

        return run_verify(args)
    if args.command == "redrive":
        from sitemap_updater.cli_redrive import run_redrive

        return run_redrive(args)
    if args.command == "sites":
        from sitemap_updater.cli_sites import run_sites

        return run_sites(args)
    return EXIT_USAGE  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
