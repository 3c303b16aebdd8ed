"""``sitemap-updater sites add|list|remove``: the sites a stack serves beside its own (issue 32), changed at run time
with no redeploy. The stack is the one ``--stack NAME`` names (its outputs and parameters, read with
CloudFormation's DescribeStacks; with ``--endpoint-url`` on a local AWS, such as the stack ``local`` creates), else
the environment variables the functions read."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sitemap_updater.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from sitemap_updater.cli_parser import stack_option

if TYPE_CHECKING:
    from sitemap_updater.settings import Settings


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sites = commands.add_parser(
        "sites",
        help="add, list or remove the sites a stack serves beside its own (no redeploy)",
        description="Each site has its own sitemap files and index under sites/<host>/ in the stack's bucket, its "
        "own records in the stack's table and its own FIFO message groups; events are routed by their URL's host. "
        "The stack's own site (its SiteUrl) is always there and is configured by the stack's parameters.",
    )
    actions = sites.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a site, or change the one on its host")
    add.add_argument("origin", metavar="ORIGIN", help="the site's canonical scheme and host: https://www.example.de")
    add.add_argument("--sections", default="", metavar="NAMES", help="as the stack parameter Sections")
    add.add_argument("--text-sitemaps", action="store_true", help="a text sitemap beside each file")
    add.add_argument("--feed-entries", type=int, default=0, metavar="N", help="the recent-changes feed's length")
    add.add_argument("--freshness-seconds", type=int, default=None, metavar="S", help="default: the stack's")
    add.add_argument("--section-freshness", default=None, metavar="PAIRS", help="news=30,products=900")
    add.add_argument("--indexnow-key", default="", metavar="KEY", help="the site's IndexNow key (none: off)")
    add.add_argument("--search-console-property", default="", metavar="PROPERTY", help="default: the origin's root")
    add.add_argument(
        "--served-at",
        default="site",
        metavar="WHERE",
        help="where its files are served: 'site' (default: on its own host, whose CDN routes /sitemap* and "
        "/<key>.txt to the stack's distribution under /sites/<host>), 'stack' (under https://<SitemapDomain, else "
        "the distribution's domain>/sites/<host>/, named by the site's robots.txt), or a base URL of your own",
    )
    lst = actions.add_parser("list", help="list the sites, one a line: host, state, origin, sections, index URL")
    remove = actions.add_parser(
        "remove", help="delete a site's files and records, then the site; nothing else is touched"
    )
    remove.add_argument("origin", metavar="ORIGIN", help="the site's origin or host URL: https://www.example.de")
    remove.add_argument(
        "--wait",
        type=int,
        default=None,
        metavar="SECONDS",
        help="seconds between marking the site removing and deleting its files (default 360: the functions' site "
        "cache, 60 s, and the longest run of a function that works for a site, 300 s; less can leave files that "
        "a function still running writes after the deletion: run the removal again to delete them)",
    )
    for parser in (add, lst, remove):
        stack_option(parser, "the deployed stack (the name given to sam deploy)")
        parser.add_argument("--endpoint-url", metavar="URL", help="an AWS-compatible endpoint instead of AWS")


def run_sites(args: argparse.Namespace) -> int:
    import boto3

    from sitemap_updater.service.sites import REMOVAL_WAIT_S, SiteRefused, add_site, begin_removal, finish_removal
    from sitemap_updater.settings import SettingsError
    from sitemap_updater.sites import SiteConfig, SiteConfigError
    from sitemap_updater.wiring.deployed import StackError, command_settings
    from sitemap_updater.wiring.pipeline import connect_pipeline
    from sitemap_updater.wiring.sites import site_pipeline

    make_client = boto3.session.Session().client
    try:
        settings = command_settings(args.stack, make_client, args.endpoint_url)
        served_at = _served_at(args, settings, make_client) if args.action == "add" else ""
    except (StackError, SettingsError) as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_USAGE
    stack = connect_pipeline(settings, make_client, args.endpoint_url)
    directory = stack.directory
    assert directory is not None  # connect_pipeline always gives one
    try:
        if args.action == "add":
            fields = {
                "origin": args.origin, "sections": args.sections, "text_sitemaps": args.text_sitemaps,
                "feed_entries": args.feed_entries, "freshness_seconds": args.freshness_seconds,
                "section_freshness": args.section_freshness, "indexnow_key": args.indexnow_key,
                "search_console_property": args.search_console_property, "served_at": served_at,
            }  # fmt: skip
            site = add_site(stack, directory, SiteConfig.parse(fields))
            print(f"site {site.host} added: its files under sites/{site.host}/ of bucket {settings.bucket_name}")
            print(f"add this line to {site.origin}/robots.txt:")
            print(f"Sitemap: {site.files.file_url('sitemap.xml')}")
            routed = ["/sitemap*", *([f"/{site.indexnow_key}.txt"] if site.indexnow_key else [])]
            if not site.served_at:
                print(f"and route {' and '.join(routed)} on {site.host} to the stack's distribution with the origin "
                      f"path /sites/{site.host} (docs/deploy.md, 'Serving a site added at run time')")  # fmt: skip
            elif site.indexnow_key:
                print(f"and serve /{site.indexnow_key}.txt on {site.host} (IndexNow reads the key on the site's host)")
            return EXIT_OK
        if args.action == "list":
            own = f"{stack.site.netloc}\tstack\t{stack.site.base_url}\t{settings.sections or '-'}"
            print(f"{own}\t{stack.files.file_url('sitemap.xml')}")
            for site in directory.list_sites():
                index = site.files.file_url("sitemap.xml")
                print(f"{site.host}\t{site.state}\t{site.origin}\t{site.sections or '-'}\t{index}")
            return EXIT_OK
        site = begin_removal(stack, directory, args.origin)
        wait_s = REMOVAL_WAIT_S if args.wait is None else max(0, args.wait)
        if wait_s:
            print(f"site {site.host} marked removing (its events are refused); its files are deleted in {wait_s} s, "
                  "once no function is still writing them", flush=True)  # fmt: skip
            time.sleep(wait_s)
        removed = finish_removal(site_pipeline(stack, site), directory)
        print(f"site {removed.host} removed: {removed.objects} objects and {removed.items} items deleted")
        return EXIT_OK
    except (SiteConfigError, SiteRefused) as exc:
        print(f"sitemap-updater: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _served_at(args: argparse.Namespace, settings: Settings, make_client: Callable[..., Any]) -> str:
    """The base URL a site's files are named under, as ``--served-at`` asks ("": on its own host). ``stack``: the
    stack's SitemapDomain, else its distribution's domain (its DistributionDomainName output, which needs
    ``--stack``), then ``/sites/<host>``. StackError when it cannot be resolved."""
    from sitemap_updater.core.urls import Site, UrlError
    from sitemap_updater.wiring.deployed import StackError, describe_stack

    where = str(args.served_at).strip()
    if where in ("", "site"):
        return ""
    if where != "stack":
        return where  # a base URL of the operator's own, checked with the site's fields
    try:
        host = Site.parse(args.origin).netloc
    except UrlError:
        return ""  # the site's fields report the origin
    if settings.sitemap_base_url:
        return f"{settings.sitemap_base_url}/sites/{host}"
    if not args.stack:
        raise StackError("--served-at stack needs --stack NAME (its DistributionDomainName), or give the URL")
    domain = describe_stack(args.stack, make_client, args.endpoint_url).output("DistributionDomainName")
    return f"https://{domain}/sites/{host}"
