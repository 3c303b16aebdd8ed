"""`import --site` loads one site of a stack from an export (lines of other hosts rejected, naming the host; every
other site's objects untouched) and `verify --stack` compares every active site's tree with its records, each
finding named by its site's tree (or `--site`'s alone). A stack on a local AWS (moto), as `sam deploy` leaves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from sitemap_updater.cli_verify import _compare_stack
from sitemap_updater.core.urls import Site
from sitemap_updater.local.stack import session
from sitemap_updater.service.verify import Verification
from sitemap_updater.wiring.deployed import command_settings
from sitemap_updater.wiring.pipeline import connect_pipeline
from tests.conftest import BASE
from tests.deployed import deployed
from tests.integration.test_sites_cli import _footprint
from tests.integration.test_stack_option import credentials  # noqa: F401 - the fixture

DE, FR = "https://www.example.de", "https://www.example.fr"


def _export(path: Path, urls: list[str]) -> Path:
    lines = [json.dumps({"type": "upsert", "url": u, "occurred_at": "2026-11-21T10:00:00Z"}) for u in urls]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.usefixtures("credentials")
def test_import_loads_the_chosen_site_only_and_verify_checks_each_site(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = deployed(moto_endpoint, "sites-import", {"SiteUrl": BASE})
    where = ["--stack", "sites-import", "--endpoint-url", moto_endpoint]
    assert main(["sites", "add", DE, *where]) == 0
    assert main(["sites", "add", FR, *where]) == 0
    assert main(["import", "--events", str(_export(tmp_path / "own.jsonl", [f"{BASE}/a"])), *where]) == 0
    capsys.readouterr()
    before, _ = _footprint(moto_endpoint, stack)
    # When an export is imported for the site www.example.de
    export = _export(tmp_path / "de.jsonl", [f"{DE}/a", f"{BASE}/b", f"{DE}/c"])
    assert main(["import", "--site", DE, "--events", str(export), *where]) == 0
    printed = capsys.readouterr()
    # Then its pages are in its own tree, the other host's line rejected naming the host, nothing else touched
    assert "site www.example.de: its files under sites/www.example.de/" in printed.out
    assert f"{export}:2: rejected: url: host 'www.example.com' is not the site's host 'www.example.de'" in printed.err
    after, _ = _footprint(moto_endpoint, stack)
    assert {n: b for n, b in after.items() if not n.startswith("sites/www.example.de/")} == before
    assert b"<loc>https://www.example.de/c</loc>" in _gunzipped(after, "sites/www.example.de/sitemap-root-")
    # And an import for a host that is no site is refused before anything is read
    assert main(["import", "--site", "https://www.example.it", "--events", str(export), *where]) == 2
    assert "www.example.it is no active site of this stack: add it first" in capsys.readouterr().err
    # When a file of the site is deleted behind the stack's back, verify --stack names the site it belongs to
    s3 = session().client("s3", endpoint_url=moto_endpoint)
    bucket = stack.physical["SitemapBucket"]
    lost = next(n for n in after if n.startswith("sites/www.example.de/sitemap-root-"))
    s3.delete_object(Bucket=bucket, Key=lost)
    pipeline = connect_pipeline(command_settings("sites-import", session().client, moto_endpoint), session().client,
                                moto_endpoint)  # fmt: skip
    every = Verification(BASE)
    _compare_stack(pipeline, every, None)
    assert [f.url for f in every.files] == [
        f"s3://{bucket}",
        f"s3://{bucket}/sites/www.example.de/",
        f"s3://{bucket}/sites/www.example.fr/",
    ]
    missing = lost.removeprefix("sites/www.example.de/")
    assert every.problems == [
        f"s3://{bucket}/sites/www.example.de/: {missing}: missing, though its record says it is published"
    ]
    # and with --site, that site's tree alone
    one = Verification(FR)
    _compare_stack(pipeline, one, Site.parse(FR))
    assert ([f.url for f in one.files], one.problems) == ([f"s3://{bucket}/sites/www.example.fr/"], [])


def _gunzipped(objects: dict[str, bytes], prefix: str) -> bytes:
    import gzip

    return b"".join(gzip.decompress(b) for n, b in objects.items() if n.startswith(prefix) and n.endswith(".gz"))
