"""``sitemap-updater build`` with ``--site`` given more than once: one export, one tree per site (the first
site's in ``--out``, each other's in ``--out/sites/<host>/``, as the stack's bucket holds them)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from sitemap_updater.cli import EXIT_FAILED, EXIT_OK
from sitemap_updater.cli_build import _Progress, _recovered, _report_lines, _summary, build_tree
from sitemap_updater.core.errors import refusal
from sitemap_updater.core.sharding import INDEX_NAME
from sitemap_updater.service.build import BuildResult, Rejection
from sitemap_updater.service.build_sites import SiteLines, site_folder, split_by_site
from sitemap_updater.service.scratch import scratch_folder, sweep

_SPLIT = "sitemap-updater-sites-"  # the folder, in the system's temporary folder, of each site's lines


def build_sites(source: Path, name: str, args: argparse.Namespace, progress: _Progress) -> int:
    """Split the export by site, then build each site from its lines; 0 when every site was built."""
    first = args.sites[0]
    temporary = Path(tempfile.gettempdir())
    sweep(temporary, _SPLIT)
    with scratch_folder(temporary, _SPLIT) as folder:
        split = split_by_site(source, args.sites, folder)
        kept = sum(len(part.numbers) for part in split.sites)
        report = BuildResult(lines=split.lines, rejections=list(split.rejections))
        reason = refusal(kept, len(split.rejections), args.max_rejected_share)
        if reason is not None:
            _report_lines(name, report, argparse.Namespace(**{**vars(args), "site": first}))
            print(f"sitemap-updater: nothing written, {args.out} left as it was: {reason}", file=sys.stderr)
            return EXIT_FAILED
        built: list[tuple[SiteLines, Path, BuildResult, float]] = []
        failed: list[str] = []
        for part in split.sites:
            out = site_folder(args.out, part.site, first)
            if not part.numbers:
                failed.append(f"{part.site.base_url}: no events in {name}; {out} left as it was")
                continue
            started = time.perf_counter()
            result, error = build_tree(part.path, out, part.site, args, progress)
            report.accepted += result.accepted
            report.rejections += [Rejection(part.export_line(r.line), r.reason) for r in result.rejections]
            report.warnings += [(part.export_line(line), text) for line, text in result.warnings]
            if error is not None:
                failed.append(f"{part.site.base_url}: nothing written, {out} left as it was: {error}")
            else:
                built.append((part, out, result, time.perf_counter() - started))
    report.rejections.sort()
    report.warnings.sort()
    _report_lines(name, report, argparse.Namespace(**{**vars(args), "site": first}))
    for message in failed:
        print(f"sitemap-updater: {message}", file=sys.stderr)
    for part, out, result, seconds in built:
        _recovered(result, out)
        print(f"{part.site.base_url}: " + _summary(result, out, seconds).replace("\n", f"\n{part.site.base_url}: "))
    for part, _, result, _ in built:
        served = part.site.base_url
        print(f"for {part.site.netloc}'s robots.txt (once the files are served from {served}/):")
        for index in result.indexes or [INDEX_NAME]:
            print(f"Sitemap: {served}/{index}")
    return EXIT_FAILED if failed else EXIT_OK
