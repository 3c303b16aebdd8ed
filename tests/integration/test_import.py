"""`sitemap-updater import`: a site starts from a full export or by adopting its existing sitemap."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site
from sitemap_updater.service.adopt import Adoption
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import LocalRunFactory

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://www.example.com/a&secret;</loc></url>
</urlset>"""


def _use_stack_env(monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]) -> None:
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def test_import_from_events_publishes_the_site_once(
    local_run: LocalRunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = local_run()
    pages = [event(f"{BASE}/{s}/p{i}", version=1) for s in ("blog", "docs") for i in range(50)]
    export = tmp_path / "pages.jsonl"
    export.write_text("\n".join(json.dumps(p) for p in pages) + "\n{broken\n", encoding="utf-8")
    _use_stack_env(monkeypatch, run.stack.environment)
    assert main(["import", "--events", str(export), "--endpoint-url", str(run.endpoint_url)]) == 0
    assert run.published() == reference_site(pages, Limits()).all_bytes()


def test_an_import_into_a_stack_that_publishes_a_site_is_refused(
    local_run: LocalRunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack whose site was imported
    run = local_run()
    pages = [event(f"{BASE}/blog/p{i}", version=1) for i in range(5)]
    export = tmp_path / "pages.jsonl"
    export.write_text("\n".join(json.dumps(p) for p in pages) + "\n", encoding="utf-8")
    _use_stack_env(monkeypatch, run.stack.environment)
    assert main(["import", "--events", str(export), "--endpoint-url", str(run.endpoint_url)]) == 0
    published = run.published()
    # When another export is imported (one page moved, one older)
    again = tmp_path / "again.jsonl"
    moved = [event(f"{BASE}/blog/p0", version=2, section="docs"), event(f"{BASE}/blog/p1", version=0)]
    again.write_text("\n".join(json.dumps(p) for p in moved) + "\n", encoding="utf-8")
    # Then it is refused with the reason, and the published site is as it was
    assert main(["import", "--events", str(again), "--endpoint-url", str(run.endpoint_url)]) == 2
    assert "import is a site's first load; send changes as events to the ingest queue" in capsys.readouterr().err
    assert run.published() == published


def test_adopting_an_existing_sitemap_keeps_every_url(
    local_run: LocalRunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a site published by another tool (here: our own build), as an index and its files on disk
    pages = [event(f"{BASE}/blog/p{i}", lastmod="2026-11-02", images=[{"loc": f"{BASE}/i{i}.jpg"}]) for i in range(30)]
    built = reference_site(pages, Limits(max_urls=10))
    for name, data in built.all_bytes().items():
        (tmp_path / name).write_bytes(data)
    # When it is adopted
    run = local_run()
    _use_stack_env(monkeypatch, run.stack.environment)
    endpoint = str(run.endpoint_url)  # the tests' moto server
    assert main(["import", "--sitemap", str(tmp_path / "sitemap.xml"), "--endpoint-url", endpoint]) == 0
    # Then every URL, lastmod and image is published again: the same bytes as the site it came from
    assert run.published() == reference_site(pages, Limits()).all_bytes()


def test_adoption_never_resolves_entities(tmp_path: Path) -> None:
    path = tmp_path / "evil.xml"
    path.write_bytes(XXE)
    adoption = Adoption(Site.parse(BASE, sections=None))
    urls = [json.loads(e)["url"] for e in adoption.events(str(path))]
    # The file is refused whole: a page cut at its entity would be the text before it (here a wrong URL)
    assert urls == []
    [problem] = adoption.problems
    assert "its DTD declares entities (&secret;)" in problem and "root:" not in problem


def test_an_import_where_no_event_is_accepted_writes_nothing_and_exits_1(
    local_run: LocalRunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a new stack
    run = local_run()
    # When an export whose every line is rejected (another host) is imported
    export = tmp_path / "pages.jsonl"
    export.write_text("\n".join(json.dumps(event(f"https://example.com/p{i}")) for i in range(3)), encoding="utf-8")
    _use_stack_env(monkeypatch, run.stack.environment)
    assert main(["import", "--events", str(export), "--endpoint-url", str(run.endpoint_url)]) == 1
    # Then each line's reason and the refusal are printed, and nothing is published
    err = capsys.readouterr().err
    assert f"{export}:1: rejected: url: host 'example.com'" in err and "nothing imported" in err
    assert run.published() == {}


def test_import_rejections_name_the_line_of_the_export(
    local_run: LocalRunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an export with blank lines (2, 3), a CRLF line end, a title holding U+2028 (one line, valid JSON),
    # and bad events on lines 5 and 7
    pages = [event(f"{BASE}/blog/a"), event(f"{BASE}/blog/b", images=[{"loc": f"{BASE}/i.jpg", "title": "x\u2028y"}])]
    lines = [json.dumps(pages[0]), "", "  ", json.dumps(pages[1], ensure_ascii=False), "{broken"]
    lines += [json.dumps(event(f"{BASE}/blog/c")), json.dumps(event(f"{BASE}/blog/d", priority=7))]
    export = tmp_path / "pages.jsonl"
    export.write_bytes(("\n".join(lines[:4]) + "\r\n" + "\n".join(lines[4:]) + "\n").encode())
    run = local_run()
    _use_stack_env(monkeypatch, run.stack.environment)
    # When it is imported
    assert main(["import", "--events", str(export), "--endpoint-url", str(run.endpoint_url)]) == 0
    # Then exactly lines 5 and 7 are named, and the other three pages are published
    captured = capsys.readouterr()
    rejected = [line for line in captured.err.splitlines() if "rejected:" in line]
    assert [line.split(": rejected: ")[0] for line in rejected] == [f"{export}:5", f"{export}:7"]
    assert rejected[1].endswith("priority: Input should be less than or equal to 1")
    assert "3 pages" in captured.out
    assert run.published() == reference_site([*pages, event(f"{BASE}/blog/c")], Limits()).all_bytes()


def test_import_reads_the_export_from_standard_input(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = [event(f"{BASE}/docs/p{i}") for i in range(3)]
    text = "\n".join([json.dumps(pages[0]), "", "not json", *map(json.dumps, pages[1:])]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8"))
    run = local_run()
    _use_stack_env(monkeypatch, run.stack.environment)
    assert main(["import", "--events", "-", "--endpoint-url", str(run.endpoint_url)]) == 0
    captured = capsys.readouterr()
    assert "<stdin>:3: rejected: (body): not valid JSON" in captured.err
    assert "import (<stdin>): 3 pages" in captured.out
    assert run.published() == reference_site(pages, Limits()).all_bytes()


def test_a_page_adopted_but_refused_by_the_import_is_named_by_its_url_and_exits_1(
    local_run: LocalRunFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a sitemap whose second page has 1,000 long image URLs: its sitemap entry fits, its event (~300 KB)
    # is over the 262,144 bytes an event may have
    images = "".join(
        f"<image:image><image:loc>{BASE}/img/{i:04d}-{'x' * 250}.jpg</image:loc></image:image>" for i in range(1000)
    )
    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text(
        '<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
        f"<url><loc>{BASE}/a</loc></url>\n<url><loc>{BASE}/gallery</loc>{images}</url>\n</urlset>\n",
        encoding="utf-8",
    )
    run = local_run()
    _use_stack_env(monkeypatch, run.stack.environment)
    # When it is adopted
    assert main(["import", "--sitemap", str(sitemap), "--endpoint-url", str(run.endpoint_url)]) == 1
    # Then the page is named by its URL, as adoption names the pages it skips, not by a line of the XML
    err = capsys.readouterr().err
    assert f"not adopted: {sitemap}: page {BASE}/gallery skipped: (body): " in err
    assert f"{sitemap}:2:" not in err
    assert set(run.published()) == {"sitemap.xml", "sitemap-root-00000000.xml.gz"}
