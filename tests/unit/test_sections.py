"""Sections: which pages share files. Bounded by the Sections setting, whatever the shapes of the site's URLs."""

from __future__ import annotations

import json

import pytest

from sitemap_updater.core.events import parse_event
from sitemap_updater.core.layout import build_site
from sitemap_updater.core.reduce import reduce_states, split_states, state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import ROOT_SECTION, Site, parse_sections
from sitemap_updater.settings import Settings, SettingsError
from tests.conftest import AS_OF_US, BASE, HORIZON, event

ENV = {
    "SITE_URL": BASE,
    "MANIFEST_TABLE": "t",
    "BUCKET_NAME": "b",
    "REBUILD_QUEUE_URL": "r",
    "INDEX_QUEUE_URL": "i",
    "NOTIFY_QUEUE_URL": "n",
    "INGEST_DLQ_URL": "d",
}


def section(url: str, sections: str, **fields: object) -> str:
    site = Site.parse(BASE, sections=parse_sections(sections))
    return parse_event(json.dumps(event(url, **fields)), site, HORIZON).event.page_section


def test_by_default_every_page_is_in_root() -> None:
    assert {section(f"{BASE}/{path}", "") for path in ("blog/a", "alice/repo", "x", "")} == {ROOT_SECTION}


def test_named_first_segments_get_their_own_section_and_the_rest_stay_in_root() -> None:
    assert section(f"{BASE}/blog/a", "blog, news") == "blog"
    assert section(f"{BASE}/news/2026/a", "blog, news") == "news"
    assert section(f"{BASE}/alice/repo", "blog, news") == ROOT_SECTION
    assert section(f"{BASE}/blog", "blog, news") == ROOT_SECTION  # a page at the root, not in the directory
    assert section(f"{BASE}/caf%C3%A9/x", "café") == "café"  # named as the segment reads, decoded


def test_a_star_gives_every_first_segment_its_own_section() -> None:
    assert section(f"{BASE}/alice/repo", "*") == "alice"
    assert section(f"{BASE}/x", "*") == ROOT_SECTION


def test_an_events_own_section_always_wins() -> None:
    assert section(f"{BASE}/alice/repo", "", section="people") == "people"
    assert section(f"{BASE}/blog/a", "blog", section="people") == "people"


@pytest.mark.parametrize("text", ["blog,,news", "a/b", "blog,*", "x?", " , "])
def test_a_section_list_that_cannot_be_one_is_refused_naming_the_setting(text: str) -> None:
    with pytest.raises(SettingsError, match="SECTIONS"):
        Settings.from_env({**ENV, "SECTIONS": text})


def test_the_setting_reaches_the_site_the_functions_validate_with() -> None:
    assert Settings.from_env({**ENV, "SECTIONS": "blog,news"}).site.sections == frozenset({"blog", "news"})
    assert Settings.from_env({**ENV, "SECTIONS": "*"}).site.sections is None
    assert Settings.from_env(ENV).site.sections == frozenset()


def test_50001_distinct_first_segments_make_a_bounded_number_of_files() -> None:
    # Given 50,001 pages, each under a first path segment of its own (user profiles), and the default setting
    site = Site.parse(BASE)
    raws = [json.dumps(event(f"{BASE}/user-{n}/profile")) for n in range(50_001)]
    states = reduce_states(state_from_event(parse_event(raw, site, HORIZON).event) for raw in raws)
    entries, tombstones = split_states(states.values())
    # When the site is laid out in files of at most 10,000 URLs
    files = build_site(entries, tombstones, Limits(), AS_OF_US, BASE)
    # Then a handful of root files hold every page once, not 50,001 files of one page each
    assert 6 <= len(files.files) <= 8
    assert all(name.startswith("sitemap-root-") for name in files.files)
    assert files.url_count == 50_001
    assert files.index.count(b"<sitemap>") == len(files.files)
