"""`verify`'s limits, on a fake fetcher: on a clock of its own, each fetch is given what is left of both time
limits and no file is begun once the whole check's time is up (none is listed as read that was never asked for);
a file's entries past 100 problems are counted by kind, and entries past a file's or an index's limit counted,
not checked or read."""

from __future__ import annotations

import pytest

from sitemap_updater.core.urls import Site
from sitemap_updater.ports import Fetched
from sitemap_updater.service.verify import TimeLimits, verify

BASE = "https://www.example.com"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEADERS = {"content-type": "application/xml", "cache-control": "max-age=60"}


class SlowSite:
    """An index of five sitemaps; each GET takes one second of the clock, or raises as a fetcher does when given
    no time at all."""

    def __init__(self) -> None:
        self.now = 0.0
        self.asked: list[tuple[str, float]] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, url: str, timeout: float) -> Fetched:
        self.asked.append((url.removeprefix(BASE), timeout))
        if timeout <= 0:
            raise TimeoutError("no time left")
        self.now += 1.0
        if url.endswith("/sitemap.xml"):
            entries = "".join(f"<sitemap><loc>{BASE}/s{n}.xml</loc></sitemap>" for n in range(5))
            return Fetched(url, 200, HEADERS, f'<sitemapindex xmlns="{NS}">{entries}</sitemapindex>'.encode())
        page = url.removesuffix(".xml")
        return Fetched(url, 200, HEADERS, f'<urlset xmlns="{NS}"><url><loc>{page}</loc></url></urlset>'.encode())


def test_no_file_is_begun_after_the_whole_checks_time_and_each_gets_what_is_left() -> None:
    site = SlowSite()
    result = verify(
        f"{BASE}/sitemap.xml", Site.parse(BASE), site, limits=TimeLimits(file_s=0.75, total_s=2.5), clock=site.clock
    )
    assert site.asked == [("/sitemap.xml", 0.75), ("/s0.xml", 0.75), ("/s1.xml", 0.5)]
    assert [f.url.removeprefix(BASE) for f in result.files] == ["/sitemap.xml", "/s0.xml", "/s1.xml"]
    assert result.unfinished == "the time limit of 2.5 s for the whole check ran out: 3 more files named were not read"
    assert (result.pages, result.problems) == (2, [])


def test_a_check_within_its_time_is_finished() -> None:
    site = SlowSite()
    result = verify(f"{BASE}/sitemap.xml", Site.parse(BASE), site, limits=TimeLimits(total_s=6.5), clock=site.clock)
    assert (len(result.files), result.pages, result.unfinished, result.problems) == (6, 5, "", [])


class OneFile:
    """A fetcher serving one body for every URL."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __call__(self, url: str, timeout: float) -> Fetched:
        return Fetched(url, 200, HEADERS, self.body)


def urlset(locs: list[str]) -> bytes:
    return (f'<urlset xmlns="{NS}">' + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs) + "</urlset>").encode()


def test_past_100_problems_a_files_entries_are_counted_by_kind() -> None:
    # Given a sitemap of 150 entries that are not URLs, then one URL listed 31 times
    body = urlset(["not a url"] * 150 + [f"{BASE}/a"] * 31)
    result = verify(f"{BASE}/s.xml", Site.parse(BASE), OneFile(body), limits=TimeLimits(total_s=60))
    problems = result.problems
    assert len(problems) == 102
    assert (
        problems[:100] == [f"{BASE}/s.xml: not a url: must be an absolute http or https URL, not a relative URL"] * 100
    )
    assert problems[100:] == [
        f"{BASE}/s.xml: 50 more entries: not a URL the URL rules accept (not listed)",
        f"{BASE}/s.xml: 30 more entries: listed twice in this file (not listed)",
    ]
    assert result.pages == 181


def test_entries_past_50000_are_counted_not_checked() -> None:
    # Given 50,000 good entries, then two that are not URLs
    body = urlset([f"{BASE}/p{n}" for n in range(50_000)] + ["not a url", "nor this"])
    result = verify(f"{BASE}/s.xml", Site.parse(BASE), OneFile(body), limits=TimeLimits(total_s=60))
    assert result.problems == [f"{BASE}/s.xml: more than 50,000 URLs: over the limit (the rest counted only)"]
    assert (result.pages, result.files[0].entries) == (50_002, 50_002)


def test_an_index_naming_more_sitemaps_than_the_limit_is_read_no_further(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an index naming 5 sitemaps where the limit is 3
    monkeypatch.setattr("sitemap_updater.service.verify.MAX_FILES_PER_INDEX", 3)
    locs = "".join(f"<sitemap><loc>{BASE}/s{n}.xml</loc></sitemap>" for n in range(5))
    index = f'<sitemapindex xmlns="{NS}">{locs}</sitemapindex>'.encode()
    asked: list[str] = []

    def fetch(url: str, timeout: float) -> Fetched:
        asked.append(url.removeprefix(BASE))
        return Fetched(url, 200, HEADERS, index if url.endswith("/sitemap.xml") else urlset([url[:-4]]))

    result = verify(f"{BASE}/sitemap.xml", Site.parse(BASE), fetch)
    # Then the first 3 are read, the rest counted
    assert asked == ["/sitemap.xml", "/s0.xml", "/s1.xml", "/s2.xml"]
    assert result.files[0].entries == 5
    assert result.problems == [f"{BASE}/sitemap.xml: names 5 sitemaps: over the limit of 3 (the rest not read)"]
