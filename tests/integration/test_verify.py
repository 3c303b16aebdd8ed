"""`sitemap-updater verify`: a published site read over HTTP as a crawler reads it, and what is wrong with it."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
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


def test_with_the_stack_the_published_tree_is_compared_with_the_manifests(
    web: Web,
    tmp_path: Path,
    local_run: LocalRunFactory,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a local stack that published pages, served as its CDN would serve them
    run = local_run()
    run.send_wave(bodies([event(f"{BASE}/blog/p{n}") for n in range(3)] + [event(f"{BASE}/news/a")]))
    out = tmp_path / "served"
    run.download(out)
    publish(web, out)
    for name, value in {**run.stack.environment, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
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
