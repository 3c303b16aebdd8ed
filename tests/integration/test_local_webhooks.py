"""`sitemap-updater local --webhooks` as a user runs it: sample CMS webhooks signed, sent over HTTP on 127.0.0.1
through the real handler, and what they published (or why they were refused) printed and reported."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import EXIT_OK, EXIT_USAGE, main
from sitemap_updater.wiring.webhooks import FUNCTIONS_DIR
from tests.conftest import BASE, event

SAMPLES = Path(__file__).resolve().parents[2] / "events" / "webhooks"
CONTENTFUL = SAMPLES / "contentful" / "publish.json"
GENERIC = json.loads((SAMPLES / "generic" / "publish.json").read_text(encoding="utf-8"))


def _published(out: Path) -> str:
    """Every URL a crawler can read in ``out``: the sitemap files, unzipped, and the index."""
    files = sorted(out.glob("sitemap-*.xml.gz"))
    return "".join(gzip.decompress(f.read_bytes()).decode("utf-8") for f in files) + (out / "sitemap.xml").read_text()


def _recipe_sample(tmp_path: Path) -> Path:
    """The generic sample for a content type the shipped mapping does not know."""
    body = {**GENERIC["body"], "type": "recipe", "id": "rx-7", "fields": {"slug": "lemon-tart"}}
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps({**GENERIC, "body": body}), encoding="utf-8")
    return path


def _run(tmp_path: Path, *args: str) -> tuple[int, list[dict[str, Any]]]:
    report = tmp_path / "report.json"
    status = main(["local", "--site", BASE, *args, "--out", str(tmp_path / "out"), "--report", str(report)])
    return status, json.loads(report.read_text(encoding="utf-8")) if report.exists() else []


def test_a_cms_publish_sent_as_a_webhook_is_published_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "wave.jsonl"
    events.write_text(json.dumps(event(f"{BASE}/about")) + "\n", encoding="utf-8")
    log = tmp_path / "functions.log"
    # When an events wave runs, then Contentful's publish sample is delivered as a webhook
    status, report = _run(tmp_path, "--events", str(events), "--webhooks", str(CONTENTFUL), "--log", str(log))
    assert status == EXIT_OK
    printed = capsys.readouterr().out
    # Then both locales of the entry are in the published sitemaps, next to the page of the events wave
    published = _published(tmp_path / "out")
    for url in (f"{BASE}/blog/webhooks-in", f"{BASE}/de/blog/webhooks-rein", f"{BASE}/about"):
        assert f"<loc>{url}</loc>" in published
    assert "<loc>https://www.example.com/sitemap-blog-00000000.xml.gz</loc>" in published
    # And the summary shows the webhook's answer and what its wave changed
    assert "wave 2 (webhooks): 2 accepted" in printed
    assert f"webhook {CONTENTFUL}: HTTP 202, queued {BASE}/blog/webhooks-in, {BASE}/de/blog/webhooks-rein" in printed
    assert f"  changed: {BASE}/de/blog/webhooks-rein" in printed
    # And the JSON report has the webhook wave, with the status of each webhook
    assert [w["wave"] for w in report] == [1, 2]
    assert [(h["file"], h["status"]) for h in report[1]["webhooks"]] == [(str(CONTENTFUL), 202)]
    assert report[1]["changed_urls"] == [f"{BASE}/blog/webhooks-in", f"{BASE}/de/blog/webhooks-rein"]
    assert report[1]["s3"]["put"] == ["sitemap-blog-00000000.xml.gz", "sitemap.xml"]
    # And the webhook function logged to --log, not to the terminal
    assert '"message":"webhook accepted"' in log.read_text(encoding="utf-8")
    assert "webhook accepted" not in printed


def test_refused_webhooks_are_reported_with_their_status_and_publish_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unpublish = SAMPLES / "contentful" / "unpublish.json"  # a DeletedEntry for an entry never published here
    recipe = _recipe_sample(tmp_path)
    status, report = _run(tmp_path, "--webhooks", str(recipe), "--webhooks", str(unpublish))
    assert status == EXIT_OK  # as for rejected events: the run completes and says what was refused
    printed = capsys.readouterr().out
    assert f"webhook {recipe}: HTTP 400, refused: content type 'recipe' is not in the mapping" in printed
    # (nothing to remove is no failure: answered 2xx, so that Contentful records no failed delivery)
    assert f"webhook {unpublish}: HTTP 200, ignored: nothing to remove: no URL is remembered" in printed
    assert "wave 1 (webhooks): 0 accepted" in printed and "  written: nothing" in printed
    [wave] = report
    assert [h["status"] for h in wave["webhooks"]] == [400, 200]
    assert (wave["changed_urls"], wave["s3"]["put"], wave["events"]["accepted"]) == ([], [], 0)
    assert not list((tmp_path / "out").glob("sitemap*"))


def test_a_mapping_given_with_mapping_places_a_type_the_shipped_one_does_not_know(tmp_path: Path) -> None:
    mapping = json.loads((FUNCTIONS_DIR / "webhook-mapping.json").read_text(encoding="utf-8"))
    mapping["types"]["recipe"] = {"url": "/recipes/{slug}", "section": "recipes"}
    mapping_file = tmp_path / "mapping.json"
    mapping_file.write_text(json.dumps(mapping), encoding="utf-8")
    status, report = _run(tmp_path, "--webhooks", str(_recipe_sample(tmp_path)), "--mapping", str(mapping_file))
    assert status == EXIT_OK
    assert report[0]["webhooks"][0]["status"] == 202
    assert f"<loc>{BASE}/recipes/lemon-tart</loc>" in _published(tmp_path / "out")


@pytest.mark.parametrize("problem", ["missing sample", "not a sample", "bad mapping"])
def test_a_bad_sample_or_mapping_stops_the_run_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1, "types": {"post": {"url": "/{slug}", "colour": "red"}}}', encoding="utf-8")
    args = {
        "missing sample": ["--webhooks", str(tmp_path / "nope.json")],
        "not a sample": ["--webhooks", str(broken)],
        "bad mapping": ["--webhooks", str(CONTENTFUL), "--mapping", str(broken)],
    }[problem]
    status, _ = _run(tmp_path, *args)
    assert status == EXIT_USAGE
    assert str(broken if problem != "missing sample" else tmp_path / "nope.json") in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
