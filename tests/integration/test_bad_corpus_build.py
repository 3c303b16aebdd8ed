"""The bad-input corpus through ``build``: each case that is one line is rejected on its own line, with a reason
naming its field, and every good line around it is published."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site
from sitemap_updater.service.build import build
from tests.conftest import AS_OF_US, BASE, event
from tests.unit.test_bad_events import CORPUS, EXPECTED


def test_every_one_line_case_is_rejected_on_its_line_and_the_rest_is_built(tmp_path: Path) -> None:
    # Given an export where each case that fits on one line (blank lines are skipped, not events) follows
    # three good lines, so the rejected share stays under the build's refusal threshold
    lines: list[bytes] = []
    bad_lines: dict[int, str] = {}
    good_urls: list[str] = []
    for name in sorted(EXPECTED):
        data = (CORPUS / name).read_bytes()
        if not data.strip() or b"\n" in data.strip() or b"\r" in data:
            continue
        for _ in range(3):
            url = f"{BASE}/blog/good-{len(good_urls)}"
            good_urls.append(url)
            lines.append(json.dumps(event(url, version=1)).encode())
        lines.append(data.strip())
        bad_lines[len(lines)] = name
    assert len(bad_lines) >= 150
    source = tmp_path / "events.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    # When it is built
    result = build(source, tmp_path / "out", Site.parse(BASE, sections=None), Limits(), AS_OF_US, workers=1)
    # Then exactly the bad lines are rejected, each with a reason naming its field
    reasons = {r.line: r.reason for r in result.rejections}
    assert set(reasons) == set(bad_lines)
    for line, name in bad_lines.items():
        assert f"; {reasons[line]}".count(f"; {EXPECTED[name]}: ") == 1, f"{name}: {reasons[line]}"
    # And every good line is published
    assert result.accepted == len(good_urls) and result.urls == len(good_urls)
    shown = b"".join(gzip.decompress(p.read_bytes()) for p in (tmp_path / "out").glob("*.xml.gz"))
    assert all(f"<loc>{url}</loc>".encode() in shown for url in good_urls)
