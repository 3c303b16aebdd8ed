"""How `build --site A --site B` finds each line's site (service/build_sites.py): the bytes' fast path agrees with
decoding the JSON whenever it answers, and a line it cannot read whole goes the JSON way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_updater.core.urls import Site
from sitemap_updater.service.build_sites import _decoded_origin, _plain_origin, split_by_site

CASES = [
    {"url": "https://www.example.de/a"},
    {"url": "https://WWW.Example.DE?x=1"},
    {"url": "https://www.example.de"},
    {"url": " https://www.example.de#f"},
    {"url": "https://bücher.de/a"},
    {"url": "https://www.example.de:8443/a"},
    {"title": '"url": "https://www.example.fr/"', "url": "https://www.example.de/a"},
    {"extra": {"url": "https://www.example.fr/"}, "url": "https://www.example.de/a"},
    {"url": "https://www.example.fr/", "type": "url"},
]


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_the_fast_path_agrees_with_the_decoded_json_or_leaves_the_line_to_it(
    case: dict[str, str], ascii_only: bool
) -> None:
    line = json.dumps(case, ensure_ascii=ascii_only).encode()
    assert _plain_origin(line) in (None, _decoded_origin(line))


def test_each_line_goes_to_the_site_of_its_own_url_whatever_nested_or_escaped(tmp_path: Path) -> None:
    lines = [json.dumps(case) for case in CASES] + ['{"url":"https:\\/\\/www.example.fr\\/a"}']
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sites = [
        Site.parse("https://www.example.de"),
        Site.parse("https://www.example.fr"),
        Site.parse("https://xn--bcher-kva.de"),
    ]
    split = split_by_site(tmp_path / "in.jsonl", sites, tmp_path)
    assert [list(part.numbers) for part in split.sites] == [[1, 2, 3, 4, 7, 8], [9, 10], [5]]
    assert [(r.line, r.reason.split(" is ")[0]) for r in split.rejections] == [(6, "url: host 'www.example.de:8443'")]
