"""`sitemap-updater verify`: a published site read over HTTP as a crawler reads it, and what is wrong with it."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.runner import LocalRun
from sitemap_updater.local.stack import session
from tests.conftest import BASE, SECTIONS, event
from tests.integration.conftest import LocalRunFactory, bodies
from tests.integration.test_adopt import Reply, Web

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "events" / "pages.jsonl"
SCHEMAS = ROOT.parent / "shared" / "xsd"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEADERS = {
    ".xml": {"Content-Type": "application/xml", "Cache-Control": "public, max-age=5"},
    ".gz": {"Content-Type": "application/gzip", "Cache-Control": "public, max-age=5"},
}


@pytest.fixture
def web() -> Iterator[Web]:
    server = Web()
    yield server
    server.close()


def publish(web: Web, out: Path) -> None:
    """Serve a built site as the stack's bucket behind its CDN does, with a robots.txt naming its index."""
    for path in out.iterdir():
        web.replies[f"/{path.name}"] = Reply(path.read_bytes(), headers=HEADERS.get(path.suffix, {}))
    web.replies["/robots.txt"] = Reply(f"User-agent: *\nSitemap: {BASE}/sitemap.xml\n".encode())


def run(web: Web, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    status = main(["verify", web.url("/"), "--site", BASE, "--json", *extra])
    return status, json.loads(capsys.readouterr().out)


@pytest.fixture
def built(tmp_path: Path, web: Web, capsys: pytest.CaptureFixture[str]) -> Path:
    """The sample site built and served with a robots.txt naming its index (the build's output not kept)."""
    out = tmp_path / "out"
    argv = ["build", "--site", BASE, "--events", str(SAMPLE), "--out", str(out), "--sections", SECTIONS, "--quiet"]
    assert main([*argv, "--as-of", "2026-11-21T12:00:00Z"]) == 0
    publish(web, out)
    capsys.readouterr()
    return out


def test_a_site_the_build_published_has_no_problem(web: Web, built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given the sample site built and served with a robots.txt naming its index
    # When it is verified from its root
    status, report = run(web, capsys, *(["--schemas", str(SCHEMAS)] if SCHEMAS.exists() else []))
    # Then robots.txt, the index and every file were read, every page counted, and nothing is wrong
    assert status == 0, report["problems"]
    files = report["files"]
    assert [f["kind"] for f in files][:2] == ["robots.txt", "index"]
    assert {f["url"].rsplit("/", 1)[1] for f in files[2:]} == {p.name for p in built.glob("*.xml.gz")}
    shown = sum(gzip.decompress(p.read_bytes()).count(b"<url>") for p in built.glob("*.xml.gz"))
    assert report["pages"] == shown and report["problems"] == []


def test_each_problem_is_named_with_its_file_and_the_exit_status_is_1(
    web: Web, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the sample site served with one of each mistake
    index = web.replies["/sitemap.xml"].body.decode()
    blog = "sitemap-blog-00000000.xml.gz"
    web.replies.pop(f"/{blog}")  # named by the index, gone
    bad = (
        f'<?xml version="1.0"?>\n<urlset xmlns="{NS}">\n'
        f"<url><loc>{BASE}/news/later</loc><lastmod>2099-01-01</lastmod></url>\n"
        f"<url><loc>https://elsewhere.example.org/x</loc></url>\n"
        f"<url><loc>{BASE}/a b</loc></url>\n</urlset>\n"
    )
    extra = "sitemap-extra-00000000.xml"
    web.replies[f"/{extra}"] = Reply(bad.encode(), headers={"Content-Type": "text/html"})
    web.replies["/sitemap.xml"] = Reply(
        index.replace("</sitemapindex>", f"<sitemap><loc>{BASE}/{extra}</loc></sitemap>\n</sitemapindex>").encode(),
        headers=HEADERS[".xml"],
    )
    # When it is verified
    status, report = run(web, capsys)
    # Then every mistake is reported with the file it is in, and the status says so
    problems = "\n".join(report["problems"])
    assert status == 1
    assert f"{blog}: HTTP 404" in problems
    assert f"{extra}: Content-Type text/html: not a sitemap's" in problems
    assert "news/later: lastmod 2099-01-01 is in the future" in problems
    assert "https://elsewhere.example.org/x: " in problems
    assert f"{BASE}/a b: not in its canonical form {BASE}/a%20b" in problems


def test_an_index_lastmod_older_than_its_files_newest_page_is_a_problem(
    web: Web, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an index that names a file with a lastmod older than the newest page in it
    index = web.replies["/sitemap.xml"].body.decode()
    stale = index.replace("<lastmod>2026-11-19T15:00:00+00:00</lastmod>", "<lastmod>2020-01-01</lastmod>", 1)
    assert stale != index
    web.replies["/sitemap.xml"] = Reply(stale.encode(), headers=HEADERS[".xml"])
    # When it is verified, then that file is named with both lastmods
    status, report = run(web, capsys)
    assert status == 1
    [problem] = report["problems"]
    assert "the index gives it lastmod 2020-01-01T00:00:00Z, older than its newest entry's" in problem


def test_robots_txt_without_a_sitemap_line_is_reported_and_the_index_read_anyway(
    web: Web, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    web.replies["/robots.txt"] = Reply(b"User-agent: *\nDisallow:\n")
    status, report = run(web, capsys)
    assert status == 1
    assert report["problems"] == [f"{web.url('/robots.txt')}: names no sitemap: add 'Sitemap: {BASE}/sitemap.xml'"]
    assert len(report["files"]) > 2


@pytest.mark.skipif(not SCHEMAS.exists(), reason="../shared/xsd is not beside the repository; schemas unavailable")
def test_with_the_official_schemas_an_element_they_do_not_allow_is_a_problem(
    web: Web, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = web.replies["/sitemap.xml"].body.decode().replace("<sitemap>", "<sitemap><priority>1</priority>", 1)
    web.replies["/sitemap.xml"] = Reply(index.encode(), headers=HEADERS[".xml"])
    status, report = run(web, capsys, "--schemas", str(SCHEMAS))
    assert status == 1
    assert any("(schema)" in p and "priority" in p for p in report["problems"])


def test_the_text_report_lists_each_file_and_ends_with_the_verdict(
    web: Web, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", web.url("/"), "--site", BASE]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"verify {web.url('/')}"
    assert lines[1] == f"  robots.txt: {web.url('/robots.txt')}: HTTP 200"
    assert lines[-1].endswith("pages read: no problem found")


def test_a_url_that_is_not_a_site_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "ftp://example.com/"]) == 2
    assert "must be an absolute http(s) URL" in capsys.readouterr().err


def served_stack(
    web: Web, tmp_path: Path, local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch, pages: list[dict[str, Any]]
) -> LocalRun:
    """A local stack that published ``pages``, its files served by ``web`` as its CDN would serve them, and the
    environment variables of its functions set (what ``--stack`` without a name reads)."""
    run = local_run()
    run.send_wave(bodies(pages))
    out = tmp_path / "served"
    run.download(out)
    publish(web, out)
    for name, value in {**run.stack.environment, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    return run


def test_with_the_stack_the_published_tree_is_compared_with_the_manifests(
    web: Web,
    tmp_path: Path,
    local_run: LocalRunFactory,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a local stack that published pages, served as its CDN would serve them
    pages = [event(f"{BASE}/blog/p{n}") for n in range(3)] + [event(f"{BASE}/news/a")]
    run = served_stack(web, tmp_path, local_run, monkeypatch, pages)
    # And then one file deleted from the bucket and another overwritten, behind the stack's back
    s3 = session().client("s3", endpoint_url=moto_endpoint)
    bucket = run.stack.physical["SitemapBucket"]
    s3.delete_object(Bucket=bucket, Key="sitemap-blog-00000000.xml.gz")
    s3.put_object(Bucket=bucket, Key="sitemap-news-00000000.xml.gz", Body=b"other bytes")
    capsys.readouterr()
    # When the site is verified with the stack's resources
    argv = ["verify", web.url("/"), "--site", BASE, "--stack", "--endpoint-url", moto_endpoint, "--json"]
    status = main(argv)
    report = json.loads(capsys.readouterr().out)
    # Then the crawl finds nothing wrong (the CDN still serves the old copies) but the stack's tree does
    assert status == 1
    assert report["problems"] == [
        f"s3://{bucket}: sitemap-blog-00000000.xml.gz: missing, though its record says it is published",
        f"s3://{bucket}: sitemap-news-00000000.xml.gz: holds other bytes than its record says (changed out of band)",
    ]
    assert run.published().get("sitemap-news-00000000.xml.gz") == b"other bytes"  # nothing repaired


def test_a_stack_whose_table_is_gone_midway_ends_unfinished_with_aws_reason(
    web: Web,
    tmp_path: Path,
    local_run: LocalRunFactory,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a local stack that published pages, served as its CDN would serve them
    run = served_stack(web, tmp_path, local_run, monkeypatch, [event(f"{BASE}/blog/p1")])
    # And its manifest table deleted after the stack's outputs could still be read
    table = run.stack.physical["ManifestTable"]
    session().client("dynamodb", endpoint_url=moto_endpoint).delete_table(TableName=table)
    capsys.readouterr()
    # When the site is verified with the stack's resources
    argv = ["verify", web.url("/"), "--site", BASE, "--stack", "--endpoint-url", moto_endpoint]
    status = main(argv)
    captured = capsys.readouterr()
    # Then the check is reported as not completed, with AWS's reason, and exits 3 without a traceback
    assert status == 3
    assert "Traceback" not in captured.out + captured.err
    last = captured.out.splitlines()[-2:]
    assert any(line.startswith("not completed: the stack's published tree could not be compared") for line in last)
    assert "ResourceNotFoundException" in captured.out


OFFICIAL = ("sitemap.xsd", "siteindex.xsd", "sitemap-image.xsd", "sitemap-video.xsd", "sitemap-news.xsd")
EXTENDED = (
    f'<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml">'
    '<url><loc>{base}/a</loc><xhtml:link rel="alternate" hreflang="de" href="{base}/de/a"/>'
    "<image:image><image:{field}>{base}/a.jpg</image:{field}></image:image></url></urlset>"
)


@pytest.mark.skipif(not SCHEMAS.exists(), reason="../shared/xsd is not beside the repository; schemas unavailable")
@pytest.mark.parametrize(("field", "problem"), [("loc", None), ("location", "image/1.1}location")])
def test_the_schemas_as_sitemaps_org_and_google_publish_them_are_enough(
    web: Web, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, problem: str | None
) -> None:
    # Given the published files only (no wrapper importing them) and an XHTML schema of the link element
    folder = tmp_path / "xsd"
    folder.mkdir()
    for name in (*OFFICIAL, "xhtml-link.xsd"):
        (folder / name).write_bytes((SCHEMAS / name).read_bytes())
    # And a sitemap with an image and an alternate, the image's element right or misnamed
    body = EXTENDED.format(base=web.url(""), field=field)
    web.replies["/s.xml"] = Reply(body.encode(), headers=HEADERS[".xml"])
    # When it is verified with that folder
    status = main(["verify", web.url("/s.xml"), "--json", "--schemas", str(folder)])
    report = json.loads(capsys.readouterr().out)
    # Then the extensions are validated by their own schemas
    if problem is None:
        assert (status, report["problems"]) == (0, [])
    else:
        assert status == 1
        assert any("(schema)" in p and problem in p for p in report["problems"]), report["problems"]


def test_a_schema_folder_without_the_sitemap_schemas_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sitemap-image.xsd").write_text(
        '<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
        'targetNamespace="http://www.google.com/schemas/sitemap-image/1.1"/>'
    )
    assert main(["verify", "http://127.0.0.1:9/", "--schemas", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"sitemap-updater: cannot use the schemas in {tmp_path}: no schema in {tmp_path} declares the sitemap "
        "namespace's <urlset> (sitemap.xsd) and <sitemapindex> (siteindex.xsd), from sitemaps.org\n"
    )


def test_a_stack_check_that_ran_is_labelled_by_what_it_compared() -> None:
    from sitemap_updater.cli_verify import report
    from sitemap_updater.service.verify import FileCheck, Verification

    result = Verification(f"{BASE}/", files=[FileCheck("s3://bucket", "stack", entries=3)])
    result.files[0].problems.append("sitemap-a.xml.gz: missing, though its record says it is published")
    assert report(result).splitlines()[1] == "  stack: s3://bucket: 3 published files compared with the records"


def test_a_note_many_files_share_is_one_line_and_a_rare_one_is_one_per_file() -> None:
    from sitemap_updater.cli_verify import report
    from sitemap_updater.service.verify import FileCheck, Verification

    # Given 5 files without Cache-Control, one of which also has a note of its own
    files = [FileCheck(f"{BASE}/sitemap-{n}.xml.gz", "sitemap", status=200) for n in range(5)]
    for f in files:
        f.notes.append("no Cache-Control: CDNs and crawlers may keep it as long as they like")
    files[2].notes.append("served as text/plain")
    # When the text report is made
    notes = [line for line in report(Verification(f"{BASE}/", files=files)).splitlines() if line.startswith("note:")]
    # Then the shared note is one line with its count and first file, and the rare one is named with its file
    assert notes == [
        f"note: 5 files, the first {BASE}/sitemap-0.xml.gz: no Cache-Control: CDNs and crawlers may keep it as long "
        "as they like",
        f"note: {BASE}/sitemap-2.xml.gz: served as text/plain",
    ]
