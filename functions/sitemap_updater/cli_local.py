"""The ``local`` command: a local stack, an optional import, one wave per events file, the files copied out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from sitemap_updater.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, STDIN, input_name, stdin_bytes
from sitemap_updater.core.terminal import shown

if TYPE_CHECKING:
    from sitemap_updater.core.urls import Site
    from sitemap_updater.local.runner import LocalRun


def run_local(args: argparse.Namespace) -> int:
    from sitemap_updater.local.inputs import wave_bodies
    from sitemap_updater.local.packaged import PackagedFileMissing, packaged_file, require
    from sitemap_updater.local.runner import TEMPLATE
    from sitemap_updater.local.webhooks import sample_files, webhook_wave
    from sitemap_updater.wiring.deployed import StackError

    sites = getattr(args, "sites", None) or []
    if len({site.netloc for site in sites}) < len(sites):
        print("sitemap-updater: --site names a host twice; give each site once", file=sys.stderr)
        return EXIT_USAGE
    added = sites[1:]
    if not args.events and not args.webhooks and args.import_events is None and args.adopt is None:
        print("sitemap-updater: local needs --events, --webhooks, --import or --adopt", file=sys.stderr)
        return EXIT_USAGE
    inputs = [p for p in [*args.events, args.import_events] if p is not None]
    if inputs.count(STDIN) > 1:
        print(
            "sitemap-updater: standard input can be read only once: give - to one --events or --import", file=sys.stderr
        )
        return EXIT_USAGE
    missing = [str(p) for p in inputs if p != STDIN and not p.is_file()]
    missing += [str(p) for p in args.webhooks if not p.exists()]
    if missing:
        print(f"sitemap-updater: cannot read {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        require(TEMPLATE)
        mapping = (args.mapping or require(packaged_file("webhook-mapping.json"))).resolve()
        webhooks = sample_files(args.webhooks, mapping) if args.webhooks else []
    except (PackagedFileMissing, ValueError) as exc:  # ValueError: a sample or the mapping
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        run = _local_run(args)
    except (StackError, _Refused) as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        _add_sites(run, added, args)
    except ValueError as exc:  # SiteRefused, SiteConfigError
        run.close()
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    reports = []
    with run:
        where = run.endpoint_url or "moto in this process"
        how = f"stack {args.stack}, described by its outputs" if args.stack else "created from template.yaml"
        print(f"local stack on {where}, {how}:")
        for logical, physical in run.resources().items():
            print(f"  {logical}: {physical}")
        status = EXIT_OK
        if args.import_events is not None or args.adopt is not None:
            from sitemap_updater.cli_import import local_import

            status, imported, loaded = local_import(run, args)
            reports.append(loaded)
            if not imported:  # nothing read, adopted or accepted: stop before anything is copied
                _write_report(args, reports)
                return status
        for path in args.events:
            try:
                if path == STDIN:
                    bodies = wave_bodies(stdin_bytes())
                else:
                    with path.open("rb") as stream:
                        bodies = wave_bodies(stream)
            except OSError as exc:
                print(f"sitemap-updater: cannot read {input_name(path)}: {exc}", file=sys.stderr)
                return EXIT_USAGE
            report = run.send_wave(bodies).as_dict()
            reports.append(report)
            print(_wave_summary(input_name(path), report))
        if webhooks:
            report = webhook_wave(run, webhooks, mapping)
            reports.append(report)
            print(_wave_summary("webhooks", report))
        for error in run.errors:
            print(
                shown(f"  a function failed (its batch came back after its queue's visibility timeout): {error}"),
                file=sys.stderr,
            )
        try:
            run.download(args.out)
        except FileExistsError as exc:
            print(f"sitemap-updater: nothing copied: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if args.log is not None:
            args.log.write_text("\n".join(run.logs) + "\n", encoding="utf-8")
    _write_report(args, reports)
    print(f"published files copied to {args.out}")
    return status


def _write_report(args: argparse.Namespace, reports: list[dict[str, object]]) -> None:
    if args.report is not None:
        args.report.write_text(json.dumps(reports, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


class _Refused(Exception):
    """Options that do not go together."""


def _local_run(args: argparse.Namespace) -> LocalRun:
    """The local stack: created from template.yaml with the options' site and parameters, or with --stack the one
    already on the endpoint, with its own (_Refused for options that do not go together)."""
    from sitemap_updater.local.runner import LocalRun

    if args.stack is None:
        if args.site is None:
            raise _Refused("local needs --site (or --stack with --endpoint-url)")
        return LocalRun(
            args.site.base_url,
            args.max_urls_per_file,
            args.endpoint_url,
            indexnow_endpoint=args.indexnow_endpoint,
            parameters={"Sections": args.sections, "TextSitemaps": "true" if args.text_sitemaps else "false"},
        )
    from sitemap_updater.local.stack import session
    from sitemap_updater.wiring.deployed import describe_stack

    if args.endpoint_url is None:
        raise _Refused("--stack needs --endpoint-url: the stack must already be on that endpoint")
    options = {"--site": args.site, "--sections": args.sections, "--max-urls-per-file": args.max_urls_per_file,
               "--text-sitemaps": args.text_sitemaps}  # fmt: skip
    if given := [option for option, value in options.items() if value]:
        raise _Refused(f"with --stack the stack's parameters decide, so {', '.join(given)} cannot be given")
    shape = describe_stack(args.stack, session().client, args.endpoint_url).site_parameters()
    return LocalRun(
        shape["SiteUrl"],
        endpoint_url=args.endpoint_url,
        indexnow_endpoint=args.indexnow_endpoint,
        name=args.stack,
        parameters=shape,
        existing=True,
    )


def _add_sites(run: LocalRun, sites: list[Site], args: argparse.Namespace) -> None:
    """Each further --site added to the local stack as `sites add` adds it (served on its own host), with the
    run's sections and text sitemaps; its events are routed to it by their URL's host."""
    from sitemap_updater.service.sites import add_site
    from sitemap_updater.sites import SiteConfig

    directory = run.pipeline.directory
    assert directory is not None  # connect_pipeline always gives one
    for site in sites:
        fields = {"origin": site.base_url, "sections": args.sections or "", "text_sitemaps": bool(args.text_sitemaps)}
        added = add_site(run.pipeline, directory, SiteConfig.parse(fields))
        print(f"site {added.host} added: its files under sites/{added.host}/")


def _wave_summary(source: str, report: dict[str, object]) -> str:
    events = report["events"]
    s3 = report["s3"]
    assert isinstance(events, dict) and isinstance(s3, dict)
    lines = [f"wave {report['wave']} ({source}): " + ", ".join(f"{count} {name}" for name, count in events.items())]
    lines += _redelivered(report)
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
    lines += [
        f"  rejected ({'to the DLQ' if r.get('sent', True) else 'not sent: SQS cannot carry it'}): {r['reason']}"
        for r in rejections
    ]
    return "\n".join(shown(line) for line in lines)  # what the events and the webhooks said, escaped


def _redelivered(report: dict[str, object]) -> list[str]:
    """How long the wave took in the run's virtual time, and when the messages given back to a queue came back."""
    redelivered = report.get("redelivered", [])
    timing = report.get("time", {})
    assert isinstance(redelivered, list) and isinstance(timing, dict)
    if not redelivered:
        return []
    lines = [
        f"  took {timing['took_s']:.1f} s of virtual time, {timing['waited_s']:.1f} s of it waiting for messages to be "
        "visible again (skipped, not slept)"
    ]
    for r in redelivered:
        what = f"  {r['messages']} message(s) of {r['queue']}"
        if r["why"] == "failed":
            lines.append(
                f"{what} failed in {r['function']} at {r['received_s']:.1f} s: visible again at "
                f"{r['visible_again_s']:.1f} s, after the queue's visibility timeout ({r['visibility_s']} s)"
            )
        else:
            lines.append(
                f"{what} given back by {r['function']} at {r['received_s']:.1f} s for a burst's wait "
                f"({r['visibility_s']} s): visible again at {r['visible_again_s']:.1f} s"
            )
    return lines
