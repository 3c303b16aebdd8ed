"""An oversized entry is rejected naming the part of the event that weighs most, one test per part, and the
build's fast path takes an entry of exactly the budget (issue 13's survivors of core/entry.py and fastline)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.core.entry import entry_from_event
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.urls import Site
from tests.conftest import BASE, HORIZON, event, parse

SITE = Site.parse(BASE, sections=None)
BUDGET = 400_000  # the README's budget for one page's rendered entry
VIDEO = {
    "thumbnail_loc": "https://cdn.example.com/t.jpg",
    "title": "t",
    "description": "d",
    "content_loc": "https://cdn.example.com/v.mp4",
}


def _rejection(body: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(EventRejected) as caught:
        parse_event(json.dumps(body), SITE, HORIZON)
    problem = caught.value.problems[0]
    return problem.field, problem.reason


def test_a_long_url_with_a_heavy_caption_names_the_caption_not_the_url() -> None:
    # The URL is as long as the contract allows and escapes to five times its length, but the caption weighs most
    url = f"{BASE}/blog/a?" + "b&" * 1000
    image = {"loc": "https://cdn.example.com/a.jpg", "caption": "'" * 70_000}
    field, reason = _rejection(event(url, images=[image]))
    assert field == "images[0].caption"
    assert "from images" in reason and "at most 400,000 bytes" in reason


def test_many_alternates_are_named_as_the_alternates() -> None:
    # 1,000 alternates of escaped apostrophes: no one of them is most of the entry
    href = "https://cdn.example.com/" + "'" * 200
    alternates = [{"hreflang": "en", "href": f"{href}{i}"} for i in range(1000)]
    field, reason = _rejection(event(alternates=alternates))
    assert field == "alternates"
    # The share reported counts the hrefs as escaped (each apostrophe is the six bytes of &apos;)
    share = int(reason.split(" of them from alternates)")[0].rsplit("(", 1)[1].replace(",", ""))
    assert share > sum(len(a["href"]) + 5 * a["href"].count("'") for a in alternates)


def test_several_heavy_videos_are_named_as_the_videos() -> None:
    video = {**VIDEO, "description": "'" * 2048, "tags": ["'" * 1000] * 32}
    field, reason = _rejection(event(videos=[video, video, video]))
    assert field == "videos"
    assert "from videos)" in reason


def test_one_heavy_video_is_named_with_its_heaviest_text() -> None:
    small = {**VIDEO, "description": "small"}
    heavy = {**VIDEO, "tags": ["'" * 2100] * 32}
    field, reason = _rejection(event(videos=[small, heavy]))
    assert field == "videos[1].tags"
    assert "from videos)" in reason


def test_a_heavy_uploader_is_named_as_the_videos_uploader() -> None:
    field, reason = _rejection(event(videos=[{**VIDEO, "uploader": {"name": "'" * 100_000}}]))
    assert field == "videos[0].uploader.name"
    assert "would be 600,365 bytes" in reason


def test_a_heavy_video_without_an_uploader_is_named_too() -> None:
    field, reason = _rejection(event(videos=[{**VIDEO, "tags": ["'" * 2100] * 32}]))
    assert field == "videos[0].tags"
    assert "from videos)" in reason


def _caption_event(size: int) -> dict[str, Any]:
    """An upsert whose entry renders to exactly ``size`` bytes (a caption of apostrophes, six bytes each)."""
    image = {"loc": "https://cdn.example.com/a.jpg", "caption": ""}
    base = entry_from_event(parse(event(images=[image]))).size
    quotes, extra = divmod(size - base, 6)
    return event(images=[{**image, "caption": "'" * quotes + "a" * extra}])


def test_the_fast_path_takes_an_entry_of_exactly_the_budget_and_declines_one_byte_more() -> None:
    at, over = _caption_event(BUDGET), _caption_event(BUDGET + 1)
    assert entry_from_event(parse(at)).size == BUDGET
    assert LineParser(SITE, HORIZON).record(json.dumps(at).encode()) is not None
    assert LineParser(SITE, HORIZON).record(json.dumps(over).encode()) is None
