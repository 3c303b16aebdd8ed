"""`--stack NAME`: `import`, `verify --stack` and `local --endpoint-url` take a deployed stack's name and read its
outputs and parameters with DescribeStacks, instead of environment variables copied by hand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from sitemap_updater.core.sharding import Limits
from sitemap_updater.local.stack import session
from tests.conftest import BASE, SECTIONS, event, reference_site
from tests.deployed import deployed
from tests.integration.test_adopt import Web
from tests.integration.test_verify import publish

# A stack as a user would deploy it: its own sections, file size and CDN lifetime (not the environment's defaults).
PARAMETERS = {"SiteUrl": BASE, "Sections": SECTIONS, "MaxUrlsPerFile": "20", "CdnMaxAgeSeconds": "7"}


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's credentials and region, and none of the stack's variables: the stack alone names it."""
    for name in [*os.environ]:
        if name in {"SITE_URL", "SECTIONS", "MANIFEST_TABLE", "BUCKET_NAME"} or name.endswith("_QUEUE_URL"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def _export(path: Path, pages: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8")
    return path


def _bucket(moto_endpoint: str, bucket: str) -> dict[str, bytes]:
    s3 = session().client("s3", endpoint_url=moto_endpoint)
    names = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return {n: s3.get_object(Bucket=bucket, Key=n)["Body"].read() for n in names if n.startswith("sitemap")}


@pytest.mark.usefixtures("credentials")
def test_import_into_a_stack_named_by_its_name_uses_its_resources_and_parameters(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a deployed stack, known by its name only
    stack = deployed(moto_endpoint, "import-by-name", PARAMETERS)
    pages = [event(f"{BASE}/{s}/p{i}", version=1) for s in ("blog", "docs") for i in range(30)]
    # When a site is imported into it by name
    export = _export(tmp_path / "pages.jsonl", pages)
    assert main(["import", "--stack", "import-by-name", "--endpoint-url", moto_endpoint, "--events", str(export)]) == 0
    assert f"stack import-by-name: {BASE}, bucket {stack.physical['SitemapBucket']}" in capsys.readouterr().out
    # Then its bucket holds the site as the stack's own sections and file size lay it out
    bucket = stack.physical["SitemapBucket"]
    assert _bucket(moto_endpoint, bucket) == reference_site(pages, Limits(max_urls=20)).all_bytes()
    # And each file is served for as long as the stack's CDN lifetime says
    s3 = session().client("s3", endpoint_url=moto_endpoint)
    assert s3.head_object(Bucket=bucket, Key="sitemap-blog-00000000.xml.gz")["CacheControl"] == "public, max-age=7"


def _refused_by_every_command(endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], stack: str) -> str:
    """What import, verify --stack and local --stack print, each exiting 2 with one line on stderr and nothing
    else, the line they share."""
    export = _export(tmp_path / "pages.jsonl", [event(f"{BASE}/blog/a")])
    capsys.readouterr()
    said = set()
    for command in (
        ["import", "--events", str(export)],
        ["verify", f"{BASE}/", "--json"],
        ["local", "--events", str(export), "--out", str(tmp_path / "out")],
    ):
        assert main([*command, "--stack", stack, "--endpoint-url", endpoint]) == 2, command
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1, (command, out, err)
        said.add(err)
    assert not (tmp_path / "out").exists()
    assert len(said) == 1, said
    return said.pop()


@pytest.mark.usefixtures("credentials")
def test_a_stack_that_does_not_exist_is_one_line_and_exit_2(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = _refused_by_every_command(moto_endpoint, tmp_path, capsys, "never-deployed")
    assert said == f"sitemap-updater: stack never-deployed does not exist on {moto_endpoint}\n"


@pytest.mark.usefixtures("credentials")
def test_a_stack_without_an_output_is_one_line_naming_it_and_exit_2(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack deployed from an older template, without the notify queue's output
    deployed(moto_endpoint, "no-notify", PARAMETERS, leave_out=("NotifyQueueUrl",))
    said = _refused_by_every_command(moto_endpoint, tmp_path, capsys, "no-notify")
    assert said == (
        "sitemap-updater: stack no-notify (CREATE_COMPLETE) has no output NotifyQueueUrl: deploy this version of "
        "template.yaml to it\n"
    )


@pytest.mark.usefixtures("credentials")
def test_verify_compares_the_named_stacks_tree_with_its_manifests(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack that imported a site, served as its CDN would serve it
    stack = deployed(moto_endpoint, "verify-by-name", PARAMETERS)
    export = _export(tmp_path / "pages.jsonl", [event(f"{BASE}/blog/p{n}") for n in range(3)])
    assert main(["import", "--stack", "verify-by-name", "--endpoint-url", moto_endpoint, "--events", str(export)]) == 0
    web = Web()
    try:
        out = tmp_path / "served"
        out.mkdir()
        for name, data in _bucket(moto_endpoint, stack.physical["SitemapBucket"]).items():
            (out / name).write_bytes(data)
        publish(web, out)
        # And then a file deleted from the bucket behind the stack's back
        bucket = stack.physical["SitemapBucket"]
        session().client("s3", endpoint_url=moto_endpoint).delete_object(
            Bucket=bucket, Key="sitemap-blog-00000000.xml.gz"
        )
        capsys.readouterr()
        # When the site is verified with the stack named
        argv = ["verify", web.url("/"), "--site", BASE, "--stack", "verify-by-name", "--endpoint-url", moto_endpoint]
        status = main([*argv, "--json"])
    finally:
        web.close()
    # Then the stack's tree shows what the crawl cannot
    assert status == 1
    assert json.loads(capsys.readouterr().out)["problems"] == [
        f"s3://{bucket}: sitemap-blog-00000000.xml.gz: missing, though its record says it is published"
    ]


def test_local_on_an_endpoint_runs_waves_on_the_stack_named_there(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack already on the endpoint, with its own site, sections and file size (and, as local runs need
    # today, no CDN lifetime: the runner stops at empty queues, before an index message delayed by it is visible)
    stack = deployed(moto_endpoint, "local-by-name", PARAMETERS | {"CdnMaxAgeSeconds": "0"})
    first = [event(f"{BASE}/{s}/p{i}", version=1) for s in ("blog", "news") for i in range(25)]
    later = [event(f"{BASE}/blog/p0", version=2, title="changed")]
    base = ["local", "--endpoint-url", moto_endpoint, "--stack", "local-by-name"]
    # When two runs send a wave each to it
    for number, wave in enumerate([first, later]):
        out = tmp_path / f"out-{number}"
        assert main([*base, "--events", str(_export(tmp_path / f"{number}.jsonl", wave)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    # Then both ran on that stack's resources, and the second published the site the first left there
    assert f"local stack on {moto_endpoint}, stack local-by-name, described by its outputs:" in printed
    assert f"  ManifestTable: {stack.physical['ManifestTable']}" in printed
    expected = reference_site([*first, *later], Limits(max_urls=20)).all_bytes()
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name.startswith("sitemap")} == expected


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--stack", "s"], "--stack needs --endpoint-url: the stack must already be on that endpoint"),
        (["--stack", "s", "--endpoint-url", "http://127.0.0.1:9", "--site", BASE, "--sections", "blog"],
         "with --stack the stack's parameters decide, so --site, --sections cannot be given"),
        ([], "local needs --site (or --stack with --endpoint-url)"),
    ],
)  # fmt: skip
def test_local_options_that_do_not_go_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    export = _export(tmp_path / "pages.jsonl", [event(f"{BASE}/blog/a")])
    assert main(["local", "--events", str(export), "--out", str(tmp_path / "out"), *options]) == 2
    assert capsys.readouterr().err == f"sitemap-updater: {said}\n"


@pytest.mark.usefixtures("credentials")
def test_redrive_takes_the_named_stacks_queues(moto_endpoint: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a deployed stack, known by its name only, with a dead letter in its ingest dead-letter queue
    stack = deployed(moto_endpoint, "redrive-by-name", PARAMETERS)
    sqs = session().client("sqs", endpoint_url=moto_endpoint)
    sqs.send_message(QueueUrl=stack.queue_url("IngestDeadLetterQueue"), MessageBody=json.dumps(event(f"{BASE}/a")))
    # When the operator looks at what a redrive would do, naming the stack
    capsys.readouterr()
    assert main(["redrive", "ingest", "--stack", "redrive-by-name", "--endpoint-url", moto_endpoint, "--dry-run"]) == 0
    # Then the dead letter was read from the stack's dead-letter queue, and would go back to its ingest queue
    out, err = capsys.readouterr()
    assert f"{BASE}/a" in out
    assert "1 read (" in err and f"redrive target {stack.queue_url('IngestQueue')}" in err
    # And a stack that does not exist is one line and exit 2, nothing read
    assert main(["redrive", "ingest", "--stack", "never-deployed", "--endpoint-url", moto_endpoint]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"sitemap-updater: stack never-deployed does not exist on {moto_endpoint}\n"
