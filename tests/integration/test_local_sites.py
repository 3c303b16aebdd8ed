"""`local --site A --site B`: the further sites added to the local stack as `sites add` adds them, their events
(and a CMS's webhooks, through one endpoint) routed by host through the real handlers under their IAM policies, and
each site's files copied to DIR/sites/<host>/: the trees `build` with the same sites writes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sitemap_updater.cli import main
from tests.conftest import BASE
from tests.integration.test_build_sites import DE, SAMPLE, tree

ROOT = Path(__file__).resolve().parents[2]


def test_local_with_several_sites_copies_out_the_trees_build_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given one export over two sites
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    events = tmp_path / "two.jsonl"
    events.write_text("\n".join(ln.replace(BASE, DE) if i % 2 else ln for i, ln in enumerate(lines)) + "\n", "utf-8")
    sites = ["--site", BASE, "--site", DE]
    # When the local stack runs it (the second site added as `sites add` does), and build builds it
    assert main(["local", *sites, "--events", str(events), "--out", str(tmp_path / "local")]) == 0
    assert "site www.example.de added" in capsys.readouterr().out
    assert main(["build", *sites, "--events", str(events), "--out", str(tmp_path / "build"), "--quiet"]) == 0  # now
    # Then both copy out the same trees, each site's in the bucket's layout (their records of what they wrote aside)
    local = {k: v for k, v in tree(tmp_path / "local").items() if ".sitemap-updater" not in k and "indexnow" not in k}
    built = {k: v for k, v in tree(tmp_path / "build").items() if ".sitemap-updater" not in k}
    assert local == built
    assert "sites/www.example.de/sitemap.xml" in local and "sitemap.xml" in local


def test_one_contentful_webhook_publishes_each_locale_on_its_site_with_hreflang_across_them(tmp_path: Path) -> None:
    # Given a mapping that puts en-US on the stack's own site and de-DE on www.example.de
    mapping = json.loads((ROOT / "functions" / "webhook-mapping.json").read_text(encoding="utf-8"))
    mapping["locales"] = {"en-US": {"hreflang": "en"}, "de-DE": {"hreflang": "de"}}
    mapping["sites"] = {"by": "locale", "origins": {"en-US": BASE, "de-DE": DE}}
    (tmp_path / "mapping.json").write_text(json.dumps(mapping), encoding="utf-8")
    sample = ROOT / "events" / "webhooks" / "contentful" / "publish.json"
    # When Contentful's publish of an entry in both locales reaches the one endpoint
    argv = [
        "local",
        "--site",
        BASE,
        "--site",
        DE,
        "--webhooks",
        str(sample),
        "--mapping",
        str(tmp_path / "mapping.json"),
    ]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    # Then each site's sitemap lists its locale's page, with the other site's as its alternate
    files = tree(tmp_path / "out")
    own = gzip.decompress(files["sitemap-blog-00000000.xml.gz"]).decode()
    de = gzip.decompress(files["sites/www.example.de/sitemap-blog-00000000.xml.gz"]).decode()
    assert f"<loc>{BASE}/blog/webhooks-in</loc>" in own and "webhooks-rein</loc>" not in own
    assert f"<loc>{DE}/blog/webhooks-rein</loc>" in de and "webhooks-in</loc>" not in de
    for text in (own, de):
        assert f'hreflang="de" href="{DE}/blog/webhooks-rein"' in text
        assert f'hreflang="en" href="{BASE}/blog/webhooks-in"' in text
