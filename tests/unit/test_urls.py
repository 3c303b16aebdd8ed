"""URL rules: one canonical host, RFC 3986 encoding, no session IDs, under 2,048 characters."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater.core import urls
from sitemap_updater.core.urls import (
    MAX_URL_LENGTH,
    ROOT_SECTION,
    Site,
    UrlError,
    canonical_media_url,
    canonical_page_url,
    first_segment,
)

SITE = Site.parse("https://www.example.com")


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("https://www.example.com/blog/hello", "https://www.example.com/blog/hello"),
        ("https://www.example.com", "https://www.example.com/"),
        ("https://WWW.EXAMPLE.COM/Blog", "https://www.example.com/Blog"),
        ("https://www.example.com:443/a", "https://www.example.com/a"),
        ("http://www.example.com:80/a", "https://www.example.com/a"),
        ("https://www.example.com/a#section-2", "https://www.example.com/a"),
        ("https://www.example.com/über", "https://www.example.com/%C3%BCber"),
        ("https://www.example.com/a?q=ü", "https://www.example.com/a?q=%C3%BC"),
        ("https://www.example.com/a b", "https://www.example.com/a%20b"),
        ("https://www.example.com/a?x=1&y=2", "https://www.example.com/a?x=1&y=2"),
        ("https://www.example.com/it's", "https://www.example.com/it's"),
        ("https://www.example.com/a<b>", "https://www.example.com/a%3Cb%3E"),
        ("https://www.example.com/%7euser", "https://www.example.com/~user"),
        ("https://www.example.com/~user", "https://www.example.com/~user"),
        ("https://www.example.com/%c3%bc", "https://www.example.com/%C3%BC"),
        ("https://www.example.com/100%25", "https://www.example.com/100%25"),
        ("https://www.example.com/100%", "https://www.example.com/100%25"),
        ("https://www.example.com/%41", "https://www.example.com/A"),
        ("https://www.example.com/a/./b/../c", "https://www.example.com/a/c"),
        ("https://www.example.com/a/%2E%2E/b", "https://www.example.com/b"),
        ("  https://www.example.com/a  ", "https://www.example.com/a"),
    ],
)
def test_accepted_urls_are_canonicalised(given: str, canonical: str) -> None:
    # Given a page URL of the site / When it is canonicalised / Then it has the one canonical form
    assert canonical_page_url(given, SITE) == canonical


def test_canonical_form_is_a_fixed_point() -> None:
    once = canonical_page_url("https://www.example.com/ü/%7e?x=a b", SITE)
    assert canonical_page_url(once, SITE) == once


def test_escapes_are_never_double_encoded() -> None:
    assert canonical_page_url("https://www.example.com/%C3%BC", SITE) == "https://www.example.com/%C3%BC"
    assert canonical_page_url("https://www.example.com/%2541", SITE) == "https://www.example.com/%2541"


def test_idn_site_and_page_hosts_compare_after_idna() -> None:
    # Given a site on an internationalised domain
    site = Site.parse("https://www.Bücher.de")
    # Then the Unicode and punycode spellings are one host, written as punycode
    assert site.netloc == "www.xn--bcher-kva.de"
    assert canonical_page_url("https://www.bücher.de/a", site) == "https://www.xn--bcher-kva.de/a"
    assert canonical_page_url("https://WWW.XN--BCHER-KVA.DE/a", site) == "https://www.xn--bcher-kva.de/a"


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("https://evil.example.net/a", "is not the site's host"),
        ("https://example.com/a", "is not the site's host"),
        ("https://www.example.com.evil.net/a", "is not the site's host"),
        ("https://www.exаmple.com/a", "is not the site's host"),  # Cyrillic а: an IDN homograph
        ("https://www.example.com:8443/a", "is not the site's host"),
        ("https://user:secret@www.example.com/a", "user info"),
        ("https://www.example.com@evil.net/a", "user info"),
        ("javascript:alert(1)", "absolute http or https"),
        ("data:text/html,hi", "absolute http or https"),
        ("ftp://www.example.com/a", "absolute http or https"),
        ("/blog/relative", "relative URL"),
        ("//www.example.com/a", "relative URL"),
        ("https:///nohost", "must name a host"),
        ("https://www.example.com/a\x00b", r"U\+0000"),
        ("https://www.example.com/a\x1fb", r"U\+001F"),
        ("https://www.example.com/a\nb", "line break"),
        ("https://www.example.com/\ud800", "lone surrogate"),
        ("https://www.example.com:99999/", "port"),
    ],
)
def test_rejected_urls_say_why(given: str, reason: str) -> None:
    with pytest.raises(UrlError, match=reason):
        canonical_page_url(given, SITE)


def test_length_limit_is_under_2048_characters() -> None:
    prefix = "https://www.example.com/"
    longest = prefix + "a" * (MAX_URL_LENGTH - len(prefix))
    assert len(longest) == 2047
    assert canonical_page_url(longest, SITE) == longest
    with pytest.raises(UrlError, match="2,048 characters"):
        canonical_page_url(longest + "a", SITE)


def test_length_is_checked_after_percent_encoding() -> None:
    prefix = "https://www.example.com/"
    # 700 ü are 700 characters as given, 4,200 once encoded as %C3%BC
    with pytest.raises(UrlError, match="after canonicalisation"):
        canonical_page_url(prefix + "ü" * 700, SITE)


@pytest.mark.parametrize(
    ("given", "canonical", "removed"),
    [
        ("https://www.example.com/a?sid=42", "https://www.example.com/a", "sid"),
        ("https://www.example.com/a?x=1&PHPSESSID=abc&y=2", "https://www.example.com/a?x=1&y=2", "PHPSESSID"),
        ("https://www.example.com/a;jsessionid=ABC123?x=1", "https://www.example.com/a?x=1", "jsessionid"),
        ("https://www.example.com/a?sessionid=1", "https://www.example.com/a", "sessionid"),
    ],
)
def test_session_ids_are_stripped_with_a_warning(given: str, canonical: str, removed: str) -> None:
    warnings: list[str] = []
    assert canonical_page_url(given, SITE, warnings) == canonical
    assert len(warnings) == 1
    assert removed in warnings[0]


def test_session_parameter_names_are_configurable() -> None:
    site = Site.parse("https://www.example.com", session_params=frozenset({"token"}))
    assert canonical_page_url("https://www.example.com/a?token=1&sid=2", site) == "https://www.example.com/a?sid=2"


def test_media_urls_may_be_on_other_hosts_but_must_be_absolute_http() -> None:
    assert canonical_media_url("https://cdn.example.net/i/ü.jpg") == "https://cdn.example.net/i/%C3%BC.jpg"
    with pytest.raises(UrlError):
        canonical_media_url("img/relative.jpg")
    with pytest.raises(UrlError):
        canonical_media_url("javascript:x")


@pytest.mark.parametrize(
    "base", ["www.example.com", "https://www.example.com/blog", "https://u:p@www.example.com", "ftp://x.org"]
)
def test_site_must_be_a_scheme_and_host(base: str) -> None:
    with pytest.raises(UrlError):
        Site.parse(base)


URL_PIECES = st.lists(
    st.sampled_from(
        [
            "http",
            "https",
            "HTTPS",
            "://",
            "/",
            "//",
            "cdn",
            "CDN",
            ".",
            "..",
            "example",
            "com",
            ":",
            "443",
            "8080",
            "@",
            "?",
            "&",
            "=",
            "#",
            "%",
            "%2f",
            "%7E",
            "a",
            "Z",
            "ü",
            " ",
            "-",
            "_",
            "~",
            ";",
            "x=1",
            "\t",
        ]
    ),
    max_size=14,
).map("".join)


@settings(max_examples=3000, deadline=None)
@given(tail=URL_PIECES, scheme=st.sampled_from(["https://", "http://", "HTTP://", ""]))
def test_recognising_a_canonical_media_url_without_parsing_changes_no_result(tail: str, scheme: str) -> None:
    # Given any URL-ish text
    url = scheme + tail

    # When it is canonicalised with and without the shortcut for URLs already in canonical form
    def outcome() -> str:
        try:
            return urls.canonical_media_url(url)
        except UrlError as exc:
            return f"error: {exc}"

    fast = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(urls, "_CLEAN_MEDIA", re.compile(r"(?!)"))
        full = outcome()
    # Then the results are the same
    assert fast == full


def _section_by_parsing(url: str) -> str:
    """The default section as the contract states it: the first path segment when more segments follow."""
    first, slash, _rest = urlsplit(url).path[1:].partition("/")
    return unquote(first) if slash and first else ROOT_SECTION


@settings(max_examples=2000, deadline=None)
@given(tail=URL_PIECES)
def test_the_first_segment_is_the_first_of_several_path_segments(tail: str) -> None:
    # Given a canonical page URL
    try:
        url = canonical_page_url("https://www.example.com/" + tail, SITE)
    except UrlError:
        return
    # Then its first segment is the first path segment when more follow it, else root
    assert first_segment(url) == _section_by_parsing(url)
