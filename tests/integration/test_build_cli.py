"""`sitemap-updater build`: what a user runs on a full export, checked against schemas and a real parser."""

from __future__ import annotations

import functools
import gzip
import importlib.metadata
import io
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from sitemap_updater.cli import main
from sitemap_updater.core.sharding import MAX_BYTES_PER_FILE, Limits
from tests.conftest import BASE, SECTIONS, event, reference_site

ROOT = Path(__file__).resolve().parents[2]
XSD_VALIDATE = ROOT.parent / "shared" / "xsd" / "validate.py"
SAMPLE = ROOT / "events" / "pages.jsonl"
AS_OF = "2026-11-21T12:00:00Z"
NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def write_jsonl(path: Path, bodies: list[dict[str, Any]], extra_lines: tuple[str, ...] = ()) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for body in bodies:
            out.write(json.dumps(body, ensure_ascii=False) + "\n")
        for line in extra_lines:
            out.write(line + "\n")
    return path


def run_build(events: Path, out: Path, *extra: str) -> int:
    """``build`` with the tests' Sections setting (every first segment) unless ``extra`` gives one."""
    sections = () if "--sections" in extra else ("--sections", SECTIONS)
    return main(
        ["build", "--site", BASE, "--events", str(events), "--out", str(out), "--as-of", AS_OF, *sections, *extra]
    )


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The command as a user runs it, in another process, with ``stdin`` piped in."""
    entry = "import sys; from sitemap_updater.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", entry, *args], input=stdin, capture_output=True, check=False)


def published(out: Path) -> dict[str, bytes]:
    """The files a crawler can read in ``out`` (not the build's record of what it wrote there)."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    assert run_build(SAMPLE, out) == 0
    return out


def test_sample_build_writes_sitemaps_and_index(sample_out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = set(published(sample_out))
    assert "sitemap.xml" in names
    assert {n for n in names if n.endswith(".xml.gz")} == {
        "sitemap-blog-00000000.xml.gz", "sitemap-de-at-00000000.xml.gz", "sitemap-en-00000000.xml.gz",
        "sitemap-news-00000000.xml.gz", "sitemap-products-00000000.xml.gz", "sitemap-root-00000000.xml.gz",
        "sitemap-videos-00000000.xml.gz",
    }  # fmt: skip


@pytest.mark.skipif(not XSD_VALIDATE.exists(), reason="../shared/xsd is not beside the repository; schemas unavailable")
def test_every_written_file_validates_against_the_official_schemas(sample_out: Path) -> None:
    files = [str(sample_out / name) for name in published(sample_out)]
    run = subprocess.run([sys.executable, str(XSD_VALIDATE), *files], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_third_party_parser_reads_every_page(sample_out: Path) -> None:
    from usp.tree import sitemap_from_str  # ultimate-sitemap-parser

    pages = []
    for path in sorted(sample_out.glob("*.xml.gz")):
        parsed = sitemap_from_str(gzip.decompress(path.read_bytes()).decode("utf-8"))
        pages += [page.url for page in parsed.all_pages()]
    assert sorted(pages) == sorted([
        f"{BASE}/about", f"{BASE}/blog/hello-world", f"{BASE}/blog/%C3%BCber-uns%20&%20mehr",
        f"{BASE}/de-at/preise", f"{BASE}/en/pricing", f"{BASE}/news/city-council-vote",
        f"{BASE}/products/espresso-machine", f"{BASE}/videos/latte-art",
    ])  # fmt: skip


def test_newest_event_wins_and_deleted_pages_are_gone(sample_out: Path) -> None:
    blog = etree.fromstring(gzip.decompress((sample_out / "sitemap-blog-00000000.xml.gz").read_bytes()))
    lastmods = {u.findtext("s:loc", namespaces=NS): u.findtext("s:lastmod", namespaces=NS) for u in blog}
    assert lastmods[f"{BASE}/blog/hello-world"] == "2026-11-20T11:30:00+00:00"  # version 2, not the late version 1
    assert f"{BASE}/blog/old-post" not in lastmods


def test_rejected_lines_are_reported_with_line_number_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = [event(f"{BASE}/blog/p{i}") for i in range(8)]
    events = write_jsonl(tmp_path / "e.jsonl", pages, ("{broken", json.dumps(event(priority=7))))
    assert run_build(events, tmp_path / "out") == 0  # 2 of 10 rejected: under the default share of 25%
    err = capsys.readouterr()
    assert f"{events}:9: rejected: (body): not valid JSON" in err.err
    assert f"{events}:10: rejected: priority:" in err.err
    assert "10 lines read: 8 events accepted, 2 rejected" in err.out
    assert "8 URLs" in err.out


def _old_output(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    out = tmp_path / "out"
    pages = [event(f"{BASE}/{s}/p{i}") for s in ("blog", "docs") for i in range(20)]
    assert run_build(write_jsonl(tmp_path / "old.jsonl", pages), out) == 0
    return out, published(out)


def test_a_build_that_accepts_nothing_leaves_the_old_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a published site, and the same export built with --site missing "www": every line is rejected
    out, before = _old_output(tmp_path)
    capsys.readouterr()
    export = tmp_path / "old.jsonl"
    status = main(["build", "--site", "https://example.com", "--events", str(export), "--out", str(out)])
    # Then the build is refused with its reason, every line's rejection is shown, and no file changed
    err = capsys.readouterr().err
    assert status == 1
    assert f"nothing written, {out} left as it was: no event was accepted (40 rejected)" in err
    assert f"{export}:1: rejected: url: host 'www.example.com' is not the site's host 'example.com'" in err
    assert published(out) == before


def test_an_empty_export_leaves_the_old_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, before = _old_output(tmp_path)
    assert run_build(write_jsonl(tmp_path / "empty.jsonl", [], ("", "  ")), out) == 1
    assert "no event was accepted (0 rejected)" in capsys.readouterr().err
    assert published(out) == before


def test_a_build_over_the_rejected_share_leaves_the_old_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a published site, and an export where 3 of 10 events are rejected (30%, over the default 25%)
    out, before = _old_output(tmp_path)
    bad = [json.dumps(event(f"{BASE}/blog/p{i}", priority=2)) for i in range(3)]
    export = write_jsonl(tmp_path / "new.jsonl", [event(f"{BASE}/new/p{i}") for i in range(7)], tuple(bad))
    # When it is built, the build is refused and nothing in --out changes
    assert run_build(export, out) == 1
    err = capsys.readouterr().err
    assert "3 of 10 events were rejected (30.0%), more than the 25% allowed" in err
    assert f"{export}:8: rejected: priority:" in err
    assert published(out) == before
    # And with a share that allows it, the same export replaces the site
    assert run_build(export, out, "--max-rejected-share", "30%") == 0
    assert set(published(out)) == {"sitemap.xml", "sitemap-new-00000000.xml.gz"}


def test_a_limit_that_cannot_be_met_leaves_the_old_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a published site, and an index limit of 3 files (50,000 in truth: lowered to keep the test small)
    out, before = _old_output(tmp_path)
    monkeypatch.setattr("sitemap_updater.core.render.MAX_FILES_PER_INDEX", 3)
    # When an export of 4 sections is built, every file is rendered before the index meets the limit
    export = write_jsonl(tmp_path / "many.jsonl", [event(f"{BASE}/{s}/p") for s in "abcd"])
    assert run_build(export, out) == 1
    assert "nothing written" in capsys.readouterr().err
    # Then none of those files replaced or joined the old ones
    assert published(out) == before


@pytest.mark.parametrize("share", ["-0.1", "1.5", "lots"])
def test_an_invalid_share_is_a_usage_error(tmp_path: Path, share: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_build(SAMPLE, tmp_path / "out", "--max-rejected-share", share)
    assert exit_.value.code == 2


def test_unreadable_input_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_build(tmp_path / "missing.jsonl", tmp_path / "out") != 0
    assert "cannot read" in capsys.readouterr().err


def test_help_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = capsys.readouterr().out
    options = ("--site", "--events", "--out", "--max-urls-per-file", "--as-of", "--workers", "--quiet")
    for option in (*options, "--max-rejected-share"):
        assert option in text


def test_build_output_equals_the_reference_whatever_the_line_order(tmp_path: Path) -> None:
    # Given a site with updates and deletes, written in two different line orders
    bodies = [event(f"{BASE}/{s}/p{i}", version=1, lastmod="2026-11-02") for s in ("a", "b") for i in range(400)]
    bodies += [dict(b, version=2, lastmod="2026-11-09") for b in bodies[::7]]
    bodies += [event(b["url"], type="delete", version=3, occurred_at="2026-11-12T00:00:00Z") for b in bodies[::11]]
    forward = write_jsonl(tmp_path / "forward.jsonl", bodies)
    backward = write_jsonl(tmp_path / "backward.jsonl", bodies[::-1])
    # When both are built
    assert run_build(forward, tmp_path / "f", "--max-urls-per-file", "100") == 0
    assert run_build(backward, tmp_path / "b", "--max-urls-per-file", "100") == 0
    # Then both equal, byte for byte, what the reference model renders
    expected = reference_site(bodies, Limits(max_urls=100)).all_bytes()
    assert published(tmp_path / "f") == expected
    assert published(tmp_path / "b") == expected


def test_every_kind_of_entry_and_tie_builds_exactly_the_reference(tmp_path: Path) -> None:
    # Given sections with news (fresh and stale), videos, alternates, images, ties between events of the same
    # order, deletes, and events that need the model path (aliases to map, URLs to canonicalise, unknown fields)
    video = {"thumbnail_loc": "https://cdn.example.com/t.jpg", "title": "T", "description": "D",
             "content_loc": "https://cdn.example.com/v.mp4"}  # fmt: skip
    bodies: list[dict[str, Any]] = []
    for i in range(300):
        news = {"publication_name": "Daily", "publication_language": "en", "title": f"N{i}",
                "publication_date": "2026-11-21T08:00:00Z" if i % 2 else "2026-11-01T08:00:00Z"}  # fmt: skip
        bodies.append(event(f"{BASE}/news/n{i}", version=1, news=news))
        bodies.append(event(f"{BASE}/shop/p{i}", version=1, lastmod=f"2026-11-0{1 + i % 9}"))
        bodies.append(event(f"{BASE}/shop/p{i}", version=1, lastmod=f"2026-10-0{1 + i % 9}"))  # a tie
        bodies.append(
            event(f"{BASE}/video/v{i}", videos=[video], alternates=[{"hreflang": "de", "href": f"{BASE}/de/v{i}"}])
        )
        bodies.append(event(f"{BASE}/blog/b{i}", type="Publish", images=[{"loc": "https://cdn.example.com/b.jpg"}]))
        bodies.append(event(f"HTTPS://WWW.EXAMPLE.COM/docs/d{i}?b=2&a=1", version=2, extra="ignored"))
        if i % 5 == 0:
            bodies.append(event(f"{BASE}/shop/p{i}", type="delete", version=1))  # a delete beats its tie
    path = write_jsonl(tmp_path / "mixed.jsonl", bodies)
    # When it is built
    assert run_build(path, tmp_path / "out", "--max-urls-per-file", "50", "--quiet") == 0
    # Then every file equals, byte for byte, what the reference model renders
    assert published(tmp_path / "out") == reference_site(bodies, Limits(max_urls=50)).all_bytes()


def test_a_rebuild_removes_files_no_longer_in_the_site(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_build(write_jsonl(tmp_path / "1.jsonl", [event(f"{BASE}/old/x")]), out) == 0
    assert run_build(write_jsonl(tmp_path / "2.jsonl", [event(f"{BASE}/new/x")]), out) == 0
    assert set(published(out)) == {"sitemap.xml", "sitemap-new-00000000.xml.gz"}


@pytest.mark.slow
def test_120001_urls_in_one_section_stay_within_every_limit(tmp_path: Path) -> None:
    # Given 120,001 pages in one section, some with long URLs, built with processes
    bodies = [event(f"{BASE}/blog/{'long-' * (i % 7 * 40)}{i}") for i in range(120_001)]
    events = write_jsonl(tmp_path / "big.jsonl", bodies)
    for max_urls in ("10000", "50000"):
        out = tmp_path / f"out-{max_urls}"
        assert run_build(events, out, "--max-urls-per-file", max_urls, "--workers", "2", "--quiet") == 0
        # Then each file is within the URL and byte limits and every page is there once
        total = 0
        for path in out.glob("*.xml.gz"):
            xml = gzip.decompress(path.read_bytes())
            count = xml.count(b"<url>")
            assert count <= int(max_urls)
            assert len(xml) <= MAX_BYTES_PER_FILE
            total += count
        assert total == 120_001


def test_pages_without_a_lastmod_are_published_without_one(tmp_path: Path) -> None:
    # Given pages whose events say they have no lastmod (as adoption sends them), beside a dated page
    undated = [event(f"{BASE}/archive/{i}", lastmod=None, occurred_at="1970-01-01T00:00:00Z") for i in range(3)]
    dated = event(f"{BASE}/blog/a", lastmod="2026-11-02")
    export = write_jsonl(tmp_path / "events.jsonl", [*undated, dated])
    # When they are built
    out = tmp_path / "out"
    assert run_build(export, out) == 0
    files = published(out)
    archive = gzip.decompress(files["sitemap-archive-00000000.xml.gz"])
    # Then each undated page shows no lastmod, and its file is named in the index without one
    assert archive.count(b"<lastmod>") == 0 and archive.count(b"<url><loc>") == 3
    index = etree.fromstring(files["sitemap.xml"])
    lastmods = {
        s.findtext("s:loc", namespaces=NS).rsplit("/", 1)[1]: s.findtext("s:lastmod", namespaces=NS)  # type: ignore[union-attr]
        for s in index.iterfind("s:sitemap", NS)
    }
    assert lastmods == {
        "sitemap-archive-00000000.xml.gz": None,
        "sitemap-blog-00000000.xml.gz": "2026-11-02T00:00:00+00:00",
    }
    # And the pipeline's rules publish the same bytes
    assert files == reference_site([*undated, dated]).all_bytes()


def test_version_prints_the_installed_version() -> None:
    run = cli("--version")
    assert run.returncode == 0
    assert run.stdout.decode() == f"sitemap-updater {importlib.metadata.version('sitemap-updater')}\n"


def test_version_falls_back_to_the_package_version_when_not_installed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    monkeypatch.setattr("sitemap_updater.__version__", "9.8.7")
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == "sitemap-updater 9.8.7\n"


def test_schema_help_says_what_it_prints(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["schema", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Print the JSON Schema of the page event contract v1 to stdout" in text
    assert "the same document as docs/event.schema.json" in text


@pytest.mark.parametrize("workers", ["0", "-1", "two"])
def test_workers_below_one_is_a_usage_error_naming_the_option(
    tmp_path: Path, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_build(SAMPLE, tmp_path / "out", "--workers", workers)
    assert exit_.value.code == 2
    assert "error: argument --workers: " in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_export_piped_to_standard_input_builds_what_the_file_builds(
    tmp_path: Path, sample_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the sample export built from its file, its rejected lines named by number
    assert run_build(SAMPLE, tmp_path / "from-file") == 0
    from_file = capsys.readouterr().err.replace(str(SAMPLE), "<stdin>")
    # When it is piped to `build --events -`
    out = tmp_path / "out"
    argv = ("build", "--site", BASE, "--events", "-", "--out", str(out), "--as-of", AS_OF, "--sections", SECTIONS)
    run = cli(*argv, stdin=SAMPLE.read_bytes())
    # Then the same files are written and the same lines rejected, named as lines of <stdin>
    assert run.returncode == 0, run.stderr
    assert published(out) == published(sample_out)
    assert "<stdin>:" in from_file and run.stderr.decode() == from_file


class _Pipe(io.BytesIO):
    """Standard input's bytes, recording how much each read asks for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.sizes: list[int | None] = []

    def read(self, size: int | None = -1, /) -> bytes:
        self.sizes.append(size)
        return super().read(size)


def test_standard_input_is_spooled_in_chunks_and_its_lines_numbered_across_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an export on standard input with blank lines (11, 12) and bad lines (31, 64), parsed in byte ranges
    # of 512 bytes by two processes, with temporary files under tmp/
    pages = [event(f"{BASE}/blog/p{i}") for i in range(60)]
    lines = [json.dumps(page) for page in pages]
    lines[10:10] = ["", "  "]
    lines.insert(30, "{broken")
    lines.append(json.dumps(event(priority=7)))
    stdin = _Pipe(("\n".join(lines) + "\n").encode())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin, encoding="utf-8"))
    monkeypatch.setattr("sitemap_updater.service.build._CHUNK_BYTES", 512)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    # When it is built
    out = tmp_path / "out"
    assert run_build(Path("-"), out, "--workers", "2") == 0
    # Then each rejection names its line, the site is every valid page, and no copy of the input is left
    err = capsys.readouterr().err
    assert err.count("rejected:") == 2
    assert "<stdin>:31: rejected: (body): not valid JSON" in err and "<stdin>:64: rejected: priority:" in err
    assert published(out) == reference_site(pages, Limits()).all_bytes()
    assert list((tmp_path / "tmp").iterdir()) == []
    # And standard input was read a bounded chunk at a time, never whole
    assert stdin.sizes and all(size is not None and 0 < size <= 1 << 20 for size in stdin.sizes)


def test_build_prints_the_robots_txt_line_of_the_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = write_jsonl(tmp_path / "events.jsonl", [event(f"{BASE}/blog/a")])
    assert run_build(export, tmp_path / "out", "--quiet") == 0
    assert f"\nSitemap: {BASE}/sitemap.xml\n" in capsys.readouterr().out


def test_50001_distinct_first_segments_build_into_a_few_files_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given 50,001 user profiles, each under a first path segment of its own
    export = write_jsonl(tmp_path / "users.jsonl", [event(f"{BASE}/user-{n}/profile") for n in range(50_001)])
    # When they are built with the default Sections setting
    out = tmp_path / "out"
    assert run_build(export, out, "--sections", "", "--quiet") == 0
    # Then they share a handful of root files (split by key range), each page listed once
    files = [out / name for name in published(out) if name != "sitemap.xml"]
    assert 6 <= len(files) <= 8
    assert all(p.name.startswith("sitemap-root-") for p in files)
    assert sum(gzip.decompress(p.read_bytes()).count(b"<url>") for p in files) == 50_001
    # And naming some of them gives those their own files, the rest staying in root
    named = tmp_path / "named"
    assert run_build(export, named, "--sections", "user-1,user-2", "--quiet") == 0
    names = set(published(named))
    assert {"sitemap-user-1-00000000.xml.gz", "sitemap-user-2-00000000.xml.gz"} <= names
    capsys.readouterr()


def test_past_the_files_one_index_may_name_build_writes_several_index_files_and_prints_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 10 sections of one file each, and index files that may name 3 files (50,000 in use)
    monkeypatch.setattr("sitemap_updater.cli_build.Limits", functools.partial(Limits, max_files_per_index=3))
    export = write_jsonl(tmp_path / "many.jsonl", [event(f"{BASE}/s{n}/page") for n in range(10)])
    out = tmp_path / "out"
    # When the site is built
    assert run_build(export, out, "--sections", "*", "--workers", "1") == 0
    # Then several index files name every file once, none more than 3, and robots.txt gets a line for each
    indexes = sorted(p.name for p in out.glob("sitemap*.xml"))
    assert "sitemap.xml" in indexes and len(indexes) >= 4
    named = [loc for name in indexes for loc in re.findall(r"<loc>[^<]+/([^<]+)</loc>", (out / name).read_text())]
    assert all((out / name).read_text().count("<sitemap>") <= 3 for name in indexes)
    assert sorted(named) == sorted(p.name for p in out.glob("*.xml.gz"))
    printed = capsys.readouterr().out
    assert sorted(re.findall(r"^Sitemap: \S+/(\S+)$", printed, re.M)) == indexes
    if XSD_VALIDATE.exists():
        checked = subprocess.run(
            [sys.executable, str(XSD_VALIDATE), *(str(out / n) for n in published(out))], capture_output=True
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
    # And a smaller site built into the same directory leaves sitemap.xml alone, the other index files removed
    assert run_build(write_jsonl(tmp_path / "few.jsonl", [event(f"{BASE}/s0/page")]), out, "--sections", "*") == 0
    assert sorted(published(out)) == ["sitemap-s0-00000000.xml.gz", "sitemap.xml"]


def test_text_sitemaps_are_written_beside_the_files_and_removed_when_no_longer_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the sample export built with text sitemaps
    out = tmp_path / "out"
    assert run_build(SAMPLE, out, "--text-sitemaps") == 0
    # Then each sitemap file has a text twin with its URLs, one a line, in its order
    files = sorted(out.glob("*.xml.gz"))
    assert sorted(p.name for p in out.glob("*.txt")) == sorted(p.name.replace(".xml.gz", ".txt") for p in files)
    for path in files:
        urls = re.findall(r"<loc>([^<]+)</loc>", gzip.decompress(path.read_bytes()).decode())
        text = (out / path.name.replace(".xml.gz", ".txt")).read_text(encoding="utf-8")
        assert text == "".join(url.replace("&amp;", "&") + "\n" for url in urls)
    assert "(and 7 text sitemaps)" in capsys.readouterr().out
    # And a build without them removes the twins it wrote, and only those
    (out / "robots.txt").write_text("User-agent: *\n", encoding="utf-8")
    assert run_build(SAMPLE, out) == 0
    assert sorted(p.name for p in out.glob("*.txt")) == ["robots.txt"]
