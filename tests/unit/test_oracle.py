"""The independent reference model (tests/oracle.py): its own rules, then the core held to it over random
sequences with hostile text in every field."""

from __future__ import annotations

import gzip
import random
import re
from html import unescape
from typing import Any

import pytest

from sitemap_updater.core.sharding import Limits
from tests import oracle
from tests.conftest import AS_OF_US, BASE, event, reference_site

HOSTILE = "Tom & Jerry <b>\"q\" 's'</b> > café 日本 🎉 ]]> &amp;"


def test_a_newer_version_wins_whatever_the_order() -> None:
    old = event(version=1, lastmod="2026-11-01", occurred_at="2026-11-20T10:00:00Z")
    new = event(version=2, lastmod="2026-11-02", occurred_at="2026-11-01T00:00:00Z")
    assert oracle.winners([old, new])[old["url"]] is new
    assert oracle.winners([new, old])[old["url"]] is new


def test_a_missing_version_sorts_before_version_zero() -> None:
    versioned = event(version=0, lastmod="2026-11-01", occurred_at="2026-11-01T00:00:00Z")
    unversioned = event(lastmod="2026-11-02", occurred_at="2026-11-20T00:00:00Z")
    assert oracle.winners([unversioned, versioned])[versioned["url"]] is versioned


def test_on_equal_version_the_later_moment_wins_to_the_microsecond() -> None:
    early = event(version=3, occurred_at="2026-11-20T10:00:00.000001Z", lastmod="2026-11-01")
    late = event(version=3, occurred_at="2026-11-20T10:00:00.000002Z", lastmod="2026-11-02")
    assert oracle.winners([late, early])[early["url"]] is late


def test_a_delete_wins_a_tie_then_the_larger_element() -> None:
    up = event(version=3, lastmod="2026-11-01")
    gone = event(type="unpublish", version=3)
    assert oracle.expected_urls([up, gone]) == set()
    assert oracle.expected_urls([gone, up]) == set()
    a, b = event(version=3, priority=0.1), event(version=3, priority=0.9)
    digests = {body["priority"]: oracle.rank(body)[3] for body in (a, b)}
    bigger = a if digests[0.1] > digests[0.9] else b
    assert oracle.winners([a, b])[a["url"]] is bigger
    assert oracle.winners([b, a])[a["url"]] is bigger


def test_on_a_full_tie_the_larger_section_wins_whatever_the_order() -> None:
    # Two deletes of one order, and two upserts of one order and content, that differ only in their section
    gone_a, gone_b = event(type="delete", version=3, section="a"), event(type="delete", version=3, section="b")
    up_a, up_b = event(version=3, section="a"), event(version=3, section="b")
    for first, second in ((gone_a, gone_b), (up_a, up_b)):
        assert oracle.winners([first, second])[first["url"]] is second
        assert oracle.winners([second, first])[first["url"]] is second


def test_an_upsert_without_lastmod_shows_its_own_moment_whatever_came_before() -> None:
    early = event(occurred_at="2026-11-10T00:00:00Z")
    late = event(occurred_at="2026-11-12T00:00:00Z")
    for bodies in ([early, late], [late, early]):
        [element] = oracle.expected_elements(bodies, AS_OF_US).values()
        assert "<lastmod>2026-11-12T00:00:00+00:00</lastmod>" in element
    # a recorded lastmod that is not the winner's is reported
    problems: list[str] = []
    oracle.expected_elements([early, late], AS_OF_US, {early["url"]: "2026-11-10T00:00:00+00:00"}, problems)
    assert len(problems) == 1


def test_sections_by_rule() -> None:
    assert oracle.section_of(event(f"{BASE}/blog/a")) == "blog"
    assert oracle.section_of(event(f"{BASE}/a")) == "root"
    assert oracle.section_of(event(f"{BASE}/")) == "root"
    assert oracle.section_of(event(f"{BASE}/a?b/c")) == "root"
    assert oracle.section_of(event(f"{BASE}/blog/a", section="News")) == "News"


def test_dates_and_priorities_as_the_protocol_writes_them() -> None:
    assert oracle.w3c("2026-11-20") == "2026-11-20"
    assert oracle.w3c("2026-11-20T23:30:59.999+02:00") == "2026-11-20T21:30:59+00:00"
    assert [oracle.priority_text(v) for v in (0.0, 0.5, 0.25, 1.0)] == ["0.0", "0.5", "0.25", "1.0"]


def test_news_is_shown_up_to_exactly_48_hours() -> None:
    def body(published: str) -> dict[str, Any]:
        news = {"publication_name": "T", "publication_language": "en", "publication_date": published, "title": "x"}
        return event(news=news)

    assert oracle.news_fresh(body("2026-11-19T12:00:00Z"), AS_OF_US)
    assert not oracle.news_fresh(body("2026-11-19T11:59:59Z"), AS_OF_US)


# --- the core held to the model ----------------------------------------------------------------------------
def _text(rng: random.Random) -> str:
    return rng.choice([HOSTILE, "plain", "a&b", "<x>", "\"'", "Zürich"])


def random_bodies(rng: random.Random, count: int, pages: int = 25) -> list[dict[str, Any]]:
    """Events over ``pages`` URLs with every field, hostile text, rank ties, deletes and news of every age."""
    urls = [f"{BASE}/{rng.choice(['blog', 'docs', 'x'])}/p{i}" + rng.choice(["", "?a=1&b='2'"]) for i in range(pages)]
    urls.append(f"{BASE}/top")
    cdn = "https://cdn.example.com"
    bodies: list[dict[str, Any]] = []
    for _ in range(count):
        url = rng.choice(urls)
        version = rng.choice([None, 0, 1, 2, 3])
        moment = f"2026-11-{rng.randint(17, 20):02d}T{rng.randint(0, 23):02d}:00:00{rng.choice(['Z', '+05:30'])}"
        if rng.random() < 0.2:
            bodies.append({"type": rng.choice(["delete", "archive"]), "url": url, "occurred_at": moment,
                           "version": version})  # fmt: skip
            continue
        body = event(url, occurred_at=moment, version=version)
        if rng.random() < 0.8:
            body["lastmod"] = rng.choice(["2026-11-02", "2026-11-03T04:05:06.7+01:00"])
        if rng.random() < 0.5:
            body["changefreq"] = rng.choice(["daily", "never"])
        if rng.random() < 0.5:
            body["priority"] = rng.choice([0.0, 0.3, 0.25, 1.0])
        if rng.random() < 0.4:
            body["section"] = rng.choice(["blog", "special", "über"])
        if rng.random() < 0.4:
            body["images"] = [
                {"loc": f"{cdn}/i{rng.randint(0, 3)}.jpg?s=1&t=2", "title": _text(rng), "caption": _text(rng)}
                for _ in range(rng.randint(1, 3))
            ]
        if rng.random() < 0.3:
            body["videos"] = [{
                "thumbnail_loc": f"{cdn}/t.jpg?a&b", "title": _text(rng), "description": _text(rng),
                "content_loc": f"{cdn}/v.mp4?x=1&y=2", "player_loc": f"{cdn}/p?'q'", "duration": 61,
                "expiration_date": "2027-01-01T00:00:00+02:00", "rating": 4.25, "view_count": 7,
                "publication_date": "2026-11-01", "tags": [_text(rng), "t&t"], "family_friendly": False,
                "restriction": {"relationship": "deny", "countries": ["DE", "FR"]}, "requires_subscription": True,
                "uploader": {"name": _text(rng), "info": f"{cdn}/u?a=1&b=2"},
                "platform": {"relationship": "allow", "platforms": ["web", "tv"]}, "live": False,
            }]  # fmt: skip
        if rng.random() < 0.3:
            body["alternates"] = [
                {"hreflang": rng.choice(["de", "en-GB", "x-default"]), "href": f"{BASE}/l?x=1&y={rng.randint(0, 2)}"}
                for _ in range(rng.randint(1, 3))
            ]
        if rng.random() < 0.3:
            published = f"2026-11-{rng.choice([18, 19, 20, 21])}T{rng.choice(['11:59:59', '12:00:00'])}Z"
            body["news"] = {"publication_name": _text(rng), "publication_language": "de",
                            "publication_date": published, "title": _text(rng)}  # fmt: skip
        bodies.append(body)
        if rng.random() < 0.15:  # a rank tie with other content
            bodies.append({**body, "priority": rng.choice([0.1, 0.9]), "changefreq": "hourly"})
    return bodies


def shown_elements(files: dict[str, bytes]) -> dict[str, tuple[str, str]]:
    """URL -> (file name, its element) over every sitemap file."""
    shown: dict[str, tuple[str, str]] = {}
    for name, data in files.items():
        if name == "sitemap.xml":
            continue
        text = gzip.decompress(data).decode()
        for element in re.findall(r"<url>.*?</url>", text, re.DOTALL):
            loc = unescape(element.split("<loc>", 1)[1].split("</loc>", 1)[0])
            assert loc not in shown, f"{loc} is listed twice"
            shown[loc] = (name, element)
    return shown


@pytest.mark.parametrize("seed", range(12))
def test_the_core_shows_what_the_model_says(seed: int) -> None:
    rng = random.Random(seed)
    bodies = random_bodies(rng, 120)
    limits = Limits(max_urls=rng.choice([2, 5, 50]))
    shown = shown_elements(reference_site(bodies, limits).all_bytes())
    expected = oracle.expected_elements(bodies, AS_OF_US)
    assert sorted(shown) == sorted(expected)
    for url, (_name, element) in shown.items():
        assert element == expected[url]
    for section, urls in oracle.expected_sections(bodies).items():
        if section.isascii():
            assert {url for url in urls if shown[url][0].startswith(f"sitemap-{section}-")} == urls


def test_check_published_names_what_is_wrong() -> None:
    a, b = event(f"{BASE}/blog/a", lastmod="2026-11-01"), event(f"{BASE}/blog/b", lastmod="2026-11-01")
    files = reference_site([a, b]).all_bytes()
    assert oracle.check_published(files, [a, b], AS_OF_US) == []
    gone = {"type": "delete", "url": b["url"], "occurred_at": "2026-11-21T00:00:00Z"}
    assert oracle.check_published(files, [a, b, gone], AS_OF_US) == [
        f"{BASE}/blog/b is listed in ['sitemap-blog-00000000.xml.gz'] but its newest event deletes it"
    ]
    c = event(f"{BASE}/blog/c")
    assert oracle.check_published(files, [a, b, c], AS_OF_US) == [f"{BASE}/blog/c is not listed"]
    twice = {**files, "sitemap-other.xml.gz": files["sitemap-blog-00000000.xml.gz"]}
    assert len(oracle.check_published(twice, [a, b], AS_OF_US)) == 2
    changed = {**a, "priority": 0.5}
    [problem] = oracle.check_published(files, [changed, b], AS_OF_US)
    assert problem.startswith(f"{BASE}/blog/a in sitemap-blog-00000000.xml.gz shows")
