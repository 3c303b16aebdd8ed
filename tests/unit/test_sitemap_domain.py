"""Sitemaps on a host of their own (the stack's SitemapDomain, SITEMAP_BASE_URL to the functions): the protocol
lets an index name only sitemaps on its own host, so the index names its files there, while the files still list
the site's pages; the site's robots.txt names the index there (the cross-submission that vouches for them), and
Search Console is given that index. Without it, everything stays on the site's host."""

from __future__ import annotations

import gzip
import re
from typing import Any
from urllib.parse import quote

import pytest

from sitemap_updater.adapters.search_console import SearchConsole
from sitemap_updater.core.messages import index_change_record
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.notify import Notifiers, notify
from sitemap_updater.service.sweep import robots_warning
from sitemap_updater.settings import Settings, SettingsError
from tests.conftest import BASE
from tests.unit.test_recovery import Stack, page, replace_settings

OWN = "https://sitemaps.example.com"


class Answers:
    """An HTTP client (the Http and WebGet ports) answering every request with one status and body; records the URLs
    asked."""

    timeout = 20.0

    def __init__(self, status: int, body: str = "") -> None:
        self.status, self.body = status, body
        self.urls: list[str] = []

    def request(self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> HttpResponse:
        self.urls.append(url)
        return HttpResponse(self.status, {}, self.body)

    def get(self, url: str, max_bytes: int, seconds: float) -> HttpResponse:
        return self.request("GET", url)


def published_index(base: str) -> tuple[list[str], list[str]]:
    """The locations the index names and the pages its files list, on a stack serving its files at ``base``."""
    stack = Stack()
    stack.pipeline = replace_settings(stack, sitemap_base_url=base) if base else stack.pipeline
    stack.send(page("a", version=1), page("b", version=1))
    stack.drain()
    index = stack.s3.objects["sitemap.xml"].data.decode()
    locs = re.findall(r"<loc>([^<]+)</loc>", index)
    pages = [
        url
        for name, o in stack.s3.objects.items()
        if name.endswith(".xml.gz")
        for url in re.findall(r"<loc>([^<]+)</loc>", gzip.decompress(o.data).decode())
    ]
    return locs, pages


@pytest.mark.parametrize(("base", "host"), [(OWN, OWN), ("", BASE)])
def test_the_index_names_its_files_where_they_are_served_and_the_files_list_the_sites_pages(
    base: str, host: str
) -> None:
    locs, pages = published_index(base)
    assert locs and all(re.fullmatch(re.escape(host) + r"/sitemap-[a-z0-9-]+\.xml\.gz", loc) for loc in locs)
    assert pages and all(url.startswith(BASE + "/") for url in pages)


@pytest.mark.parametrize(
    ("base", "named", "warned"),
    [
        (OWN, f"{OWN}/sitemap.xml", False),  # the cross-submission
        (OWN, f"{BASE}/sitemap.xml", True),  # the index is not served on the site
        ("", f"{BASE}/sitemap.xml", False),
        ("", f"{OWN}/sitemap.xml", True),
    ],
)
def test_the_robots_check_asks_the_sites_robots_txt_to_name_the_index_where_it_is_served(
    base: str, named: str, warned: bool
) -> None:
    stack = Stack()
    pipeline = replace_settings(stack, sitemap_base_url=base)
    http = Answers(200, f"User-agent: *\nSitemap: {named}\n")
    warning = robots_warning(pipeline, http)
    assert http.urls == [f"{BASE}/robots.txt"]  # robots.txt is always the site's own
    assert (warning is not None) is warned
    if warning is not None:
        assert warning.endswith(f"'Sitemap: {(base or BASE)}/sitemap.xml'")


@pytest.mark.parametrize("base", [OWN, ""])
def test_search_console_is_given_the_index_where_it_is_served(base: str) -> None:
    pipeline = replace_settings(Stack(), sitemap_base_url=base, indexnow_key="0123456789abcdef")
    console = Answers(200)
    notifiers = Notifiers(
        console, SearchConsole(console, lambda: "token"), sleep=lambda _s: None, monotonic=lambda: 0.0
    )
    notify([index_change_record(1, "s", ["sitemap.xml"]).body], pipeline, notifiers)
    [url] = console.urls
    assert url.endswith("/sitemaps/" + quote(f"{base or BASE}/sitemap.xml", safe=""))
    assert url.startswith("https://www.googleapis.com/webmasters/v3/sites/")  # sitemaps.submit, as Google documents it


def test_the_sitemaps_base_is_a_scheme_host_and_path() -> None:
    env = {
        "SITE_URL": BASE,
        "MANIFEST_TABLE": "t",
        "BUCKET_NAME": "b",
        "REBUILD_QUEUE_URL": "r",
        "INDEX_QUEUE_URL": "i",
        "NOTIFY_QUEUE_URL": "n",
        "INGEST_DLQ_URL": "d",
    }
    assert (
        Settings.from_env({**env, "SITEMAP_BASE_URL": OWN}).files_site.file_url("sitemap.xml") == f"{OWN}/sitemap.xml"
    )
    assert Settings.from_env({**env, "SITEMAP_BASE_URL": ""}).files_site.base_url == BASE
    # a path (a site added at run time served under the stack's distribution: /sites/<host>), not a query
    under = Settings.from_env({**env, "SITEMAP_BASE_URL": f"{OWN}/sites/www.example.de/"})
    assert under.files_site.file_url("sitemap.xml") == f"{OWN}/sites/www.example.de/sitemap.xml"
    with pytest.raises(SettingsError, match="SITEMAP_BASE_URL"):
        Settings.from_env({**env, "SITEMAP_BASE_URL": f"{OWN}/sitemaps?x=1"})
