"""``verify``'s fetcher against a server on 127.0.0.1: every redirect status HTTP defines is followed on the site's
host, a Location on any other answer is not."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from pytest_httpserver import HTTPServer

from sitemap_updater.adapters.fetch import WebFetcher


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_each_redirect_status_is_followed_on_the_site_s_host(httpserver: HTTPServer, status: int) -> None:
    httpserver.expect_request("/sitemap.xml").respond_with_data("", status=status, headers={"Location": "/moved.xml"})
    httpserver.expect_request("/moved.xml").respond_with_data("<urlset/>")
    fetch = WebFetcher({urlsplit(httpserver.url_for("/")).netloc})
    found = fetch(httpserver.url_for("/sitemap.xml"), 5.0)
    assert (found.status, found.body, found.url) == (200, b"<urlset/>", httpserver.url_for("/moved.xml"))


def test_a_location_on_an_answer_that_is_no_redirect_is_not_followed(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/sitemap.xml").respond_with_data("<urlset/>", headers={"Location": "/other.xml"})
    fetch = WebFetcher({urlsplit(httpserver.url_for("/")).netloc})
    found = fetch(httpserver.url_for("/sitemap.xml"), 5.0)
    assert (found.status, found.body, found.url) == (200, b"<urlset/>", httpserver.url_for("/sitemap.xml"))
