"""`sitemap-updater sites add|list|remove --stack NAME` against a stack on a local AWS (moto), as `sam deploy` or
`local` leaves it: sites are items of the stack's table, each site's files and records its own tree, and removing a
site deletes its tree (found without a Scan, adapters/site_records.py) and leaves every other byte and item as it
was."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.core.messages import read_rebuild_request
from sitemap_updater.local.stack import session
from sitemap_updater.service.index import rebuild_index
from sitemap_updater.service.ingest import ingest
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import rebuild_sections
from sitemap_updater.wiring.deployed import command_settings
from sitemap_updater.wiring.pipeline import connect_pipeline
from sitemap_updater.wiring.sites import Sites, site_pipeline
from tests.conftest import BASE
from tests.deployed import deployed
from tests.integration.test_stack_option import credentials  # noqa: F401 - the fixture

DE = "https://www.example.de"
FR = "https://www.example.fr"


def _publish(pipeline: Pipeline, urls: list[str], endpoint: str) -> None:
    """Ingest upserts of ``urls`` and run the rebuilds their marks ask for (the rebuild queue read here), then the
    site's index."""
    for url in urls:
        ingest({"url": url, "type": "upsert", "occurred_at": "2026-11-21T10:00:00Z"}, pipeline)
    sqs = session().client("sqs", endpoint_url=endpoint)
    bodies: list[dict[str, Any]] = []
    while found := sqs.receive_message(QueueUrl=pipeline.rebuild_queue.url, MaxNumberOfMessages=10).get("Messages"):
        for message in found:
            bodies.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=pipeline.rebuild_queue.url, ReceiptHandle=message["ReceiptHandle"])
    host = "" if pipeline.site.netloc == "www.example.com" else pipeline.site.netloc
    marks = [m for body in bodies if body.get("site", "") == host for m in read_rebuild_request(body)]
    assert marks
    rebuild_sections(pipeline, marks)
    rebuild_index(pipeline)


def _footprint(endpoint: str, stack: Any) -> tuple[dict[str, bytes], dict[tuple[str, str], Any]]:
    s3, dynamodb = session().client("s3", endpoint_url=endpoint), session().client("dynamodb", endpoint_url=endpoint)
    bucket, table = stack.physical["SitemapBucket"], stack.physical["ManifestTable"]
    names = [
        o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket) for o in p.get("Contents", [])
    ]
    objects = {n: s3.get_object(Bucket=bucket, Key=n)["Body"].read() for n in names}
    items = {
        (i["pk"]["S"], i["sk"]["S"]): i
        for page in dynamodb.get_paginator("scan").paginate(TableName=table)
        for i in page["Items"]
    }
    return objects, items


@pytest.mark.usefixtures("credentials")
def test_sites_are_added_listed_and_removed_and_a_removal_touches_nothing_else(
    moto_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = deployed(moto_endpoint, "sites-cli", {"SiteUrl": BASE, "Sections": "blog"})
    where = ["--stack", "sites-cli", "--endpoint-url", moto_endpoint]
    assert main(["sites", "add", DE, "--sections", "blog,news", *where]) == 0
    # served on its own host (the default): the robots.txt line names it there, and its CDN routes to the stack's
    added = capsys.readouterr().out.splitlines()
    assert added[1:] == [
        f"add this line to {DE}/robots.txt:",
        f"Sitemap: {DE}/sitemap.xml",
        "and route /sitemap* on www.example.de to the stack's distribution with the origin path "
        "/sites/www.example.de (docs/deploy.md, 'Serving a site added at run time')",
    ]
    # or under the stack's distribution (a cross-submission): resolved once, from the stack's outputs
    cdn = f"https://{stack.domains['Distribution']}/sites/www.example.fr"
    assert main(["sites", "add", FR, "--served-at", "stack", *where]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"add this line to {FR}/robots.txt:",
        f"Sitemap: {cdn}/sitemap.xml",
    ]
    assert main(["sites", "add", BASE, *where]) == 1  # the stack's own site is the stack's
    assert "is the stack's own site" in capsys.readouterr().err
    assert main(["sites", "add", "https://www.example.at", "--indexnow-key", "short", *where]) == 1
    assert "indexnow_key: String should match pattern" in capsys.readouterr().err
    assert main(["sites", "list", *where]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed == [
        "www.example.com\tstack\thttps://www.example.com\tblog\thttps://www.example.com/sitemap.xml",
        "www.example.de\tactive\thttps://www.example.de\tblog,news\thttps://www.example.de/sitemap.xml",
        f"www.example.fr\tactive\thttps://www.example.fr\t-\t{cdn}/sitemap.xml",
    ]
    # Each site publishes (through its own pipeline, as the functions pick it by host)
    own = connect_pipeline(command_settings("sites-cli", session().client, moto_endpoint), session().client,
                           moto_endpoint)  # fmt: skip
    sites = Sites(own, None)
    directory = own.directory
    assert directory is not None
    for origin, pages in ((BASE, ["/blog/a", "/x"]), (DE, ["/blog/a", "/news/b", "/c"]), (FR, ["/a"])):
        site = directory.get_site(origin.removeprefix("https://"))
        pipeline = sites.stack if site is None else site_pipeline(own, site)
        _publish(pipeline, [origin + page for page in pages], moto_endpoint)
        if site is not None and site.host == "www.example.de":  # a Search Console submission of its index, recorded
            pipeline.store.mark_sent({f"{DE}/sitemap.xml": ""}, "search-console", 10, 20)
    objects, items = _footprint(moto_endpoint, stack)
    assert ("site#www.example.de#sent#https://www.example.de/sitemap.xml", "search-console") in items
    assert {"sites/www.example.de/sitemap.xml", "sites/www.example.fr/sitemap.xml", "sitemap.xml"} <= set(objects)
    # each index names its files where they are served
    assert re.findall(r"<loc>([^<]+)</loc>", objects["sites/www.example.fr/sitemap.xml"].decode()) == [
        f"{cdn}/sitemap-root-00000000.xml.gz"
    ]
    assert b"<loc>https://www.example.de/sitemap-blog-" in objects["sites/www.example.de/sitemap.xml"]
    de_items = {key for key in items if key[0].startswith("site#www.example.de#")}
    assert {("site#www.example.de#sections", s) for s in ("blog", "news", "root")} <= de_items
    # When one site is removed
    assert main(["sites", "remove", DE, "--wait", "0", *where]) == 0
    out = capsys.readouterr().out
    # Then its objects and items are gone, and every other object's bytes and every other item are as they were
    after_objects, after_items = _footprint(moto_endpoint, stack)
    kept_objects = {n: b for n, b in objects.items() if not n.startswith("sites/www.example.de/")}
    kept_items = {k: i for k, i in items.items() if k not in de_items and k != ("sites", "www.example.de")}
    assert after_objects == kept_objects and after_items == kept_items
    de_objects = len(objects) - len(kept_objects)
    assert f"site www.example.de removed: {de_objects} objects and {len(de_items)} items deleted" in out
    assert main(["sites", "remove", DE, "--wait", "0", *where]) == 1  # it is no site any more
    assert "is not a site of this stack" in capsys.readouterr().err
