"""The fast path's URLs (core.fastline, core.fasturl) against the contract's canonical form (core.urls): query strings,
percent escapes, characters above ASCII, fragments, dot segments, ports, session IDs and the length limit."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_updater.core import fasturl
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.fasturl import KEPT_ESCAPE, UrlCanonicaliser, session_free
from sitemap_updater.core.text import forbidden_character
from sitemap_updater.core.urls import _PATH_SAFE, MAX_URL_LENGTH, Site, UrlError, _percent_encode, canonical_page_url
from tests.conftest import HORIZON
from tests.unit.test_fastline import BASE, SITES, model_record

SESSIONS = Site.parse(BASE, session_params=frozenset({"SID", "ü", "a&b", "x=y", "", "k"}), sections=None)


def oracle(url: str, site: Site) -> tuple[str, str] | None:
    """The contract's canonical form of a page URL and its page's section; None where it warns or refuses."""
    warnings: list[str] = []
    try:
        canonical = canonical_page_url(url, site, warnings)
    except UrlError:
        return None
    return None if warnings else (canonical, site.section_of(canonical))


PATH_PIECES = [
    *"aZ09-._~!$&'()*+,=:@/",
    "blog/",
    "%C3%A9",
    "%c3%a9",
    "%C3",
    "%2F",
    "%2f",
    "%7E",
    "%7e",
    "%2E",
    "%2e%2E",
    "%41",
    "%25",
    "%",
    "%G1",
    "%4",
    "/..",
    "/.",
    "/../",
    "./",
    "ü",
    "straße",
    "日本",
    "\U0001f600",
    "\u0085",
    "\u00a0",
    "\ufeff",
    ";jsessionid=1",
    ";JSESSIONID=1",
    ";x=1",
    ";",
    " ",
    "\t",
    "\x7f",
    "\\",
    "<",
    '"',
    "\ud800",
    "\uffff",
    "\x01",
]
QUERY_PIECES = [
    "ref=a",
    "&",
    "b=c",
    "=",
    "sid=42",
    "SID=1",
    "PHPSESSID",
    "sessionid=",
    "xsid=1",
    "sidx=1",
    "'x'",
    "<c>",
    ">",
    '"',
    "ü",
    "größe",
    "%41",
    "%3c",
    "%3C",
    "%",
    "/",
    "?",
    ";",
    "/.",
    "..",
    " ",
    "\\",
    "{}",
    "\x7f",
    "\ud800",
]
FRAGMENTS = ["", "#", "#top", "#a?b#c", "#ü", "# x", "#\x01", "#sid=1"]
PREFIXES = [
    BASE,
    BASE,
    BASE,
    "https://WWW.example.com",
    "HTTPS://www.example.com",
    f"{BASE}:443",
    f"{BASE}:8443",
    "http://www.example.com",
    "https://other.example.com",
    "https://user@www.example.com",
    " " + BASE,
]


@st.composite
def page_urls(draw: st.DrawFn) -> str:
    """A URL of the shapes sites export and the ones the rules change or refuse, around the length limit too."""
    prefix = draw(st.sampled_from(PREFIXES))
    path = "/" + "".join(draw(st.lists(st.sampled_from(PATH_PIECES), max_size=10)))
    url = prefix + path
    if draw(st.booleans()):
        url += "?" + "".join(draw(st.lists(st.sampled_from(QUERY_PIECES), max_size=8)))
    url += draw(st.sampled_from(FRAGMENTS))
    if draw(st.integers(0, 4)) == 0:  # about the limit: padded in the path to 2,040 to 2,050 characters
        pad = draw(st.integers(MAX_URL_LENGTH - 7, MAX_URL_LENGTH + 3)) - len(url)
        cut = len(prefix) + 1
        url = url[:cut] + "p" * max(pad, 0) + url[cut:]
    return url


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(url=page_urls(), site=st.sampled_from([*SITES, SESSIONS]), lastmod=st.booleans())
def test_a_url_of_any_shape_gets_the_contracts_record_or_the_model_path(url: str, site: Site, lastmod: bool) -> None:
    # Given an upsert of a page whose URL has any of the shapes sites export or the rules change or refuse
    body: dict[str, Any] = {"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}
    if lastmod:
        body["lastmod"] = None
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
    # When the fast path reads it, and canonicalises the URL on its own
    fast = LineParser(site, HORIZON).record(raw)
    found = UrlCanonicaliser(site).canonical(url)
    # Then the record is the model path's, byte for byte, or the line is left to it; the URL is the contract's
    expected = model_record(raw, site)
    if fast is not None:
        assert fast == expected
    assert found == oracle(url, site)
    if found is not None:
        assert fast == expected  # a URL the fast path canonicalises, it takes


PADDED = f"{BASE}/blog/" + "x" * (MAX_URL_LENGTH - len(BASE) - 6)  # MAX_URL_LENGTH characters


@pytest.mark.parametrize(
    ("url", "taken"),
    [
        (PADDED, True),
        (PADDED + "x", False),
        (PADDED[:-4] + "?a=b", True),
        (PADDED[:-3] + "?a=b", False),
        (PADDED[:-6] + "%C3%A9", True),
        (PADDED[:-5] + "%C3%A9", False),
        (PADDED[:-6] + "é", True),  # é is 6 characters once encoded
        (PADDED[:-5] + "é", False),
        (PADDED[:-1] + "é", False),
        (PADDED[:-6] + "%c3%a9", True),
        (PADDED[:-6] + "?a=<", True),  # < is 3 characters once encoded
        (PADDED[:-5] + "?a=<", False),
        (PADDED + "#fragment", True),  # the fragment is dropped
        (PADDED[:-3] + "%7E", True),  # %7E is ~
        (PADDED + "%7E", False),
    ],
)
def test_the_length_limit_holds_on_both_sides_after_canonicalisation(url: str, taken: bool) -> None:
    # Given a URL whose canonical form is just within or past sitemaps' 2,047 characters
    raw = json.dumps({"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}).encode()
    # When the fast path reads it
    fast = LineParser(SITES[0], HORIZON).record(raw)
    # Then it takes exactly the ones the contract accepts, making its record, and leaves the others to be rejected
    assert (fast is not None) is taken
    expected = model_record(raw, SITES[0])
    assert (expected != "rejected") is taken
    if taken:
        assert fast == expected
        assert len(fast[3]) > MAX_URL_LENGTH  # the record holds the URL


@pytest.mark.parametrize(
    "url",
    [
        f"{BASE}/shop/page-1?ref=a&b=c",
        f"{BASE}/shop/page-1?ref=a&b=c&q='1'",
        f"{BASE}/shop/page-1?ref=a&b=<c>",
        f"{BASE}/shop/page-1?q=größe",
        f"{BASE}/blog/caf%C3%A9-1",
        f"{BASE}/blog/caf%c3%a9-1",
        f"{BASE}/%7Euser/page",
        f"{BASE}/caf%C3%A9/x",
        f"{BASE}/blog/über-straße-1",
        f"{BASE}/日本/x?ref=a",
        f"{BASE}/blog/page-1#top",
        f"{BASE}/blog/page-1?ref=a#top",
    ],
)
@pytest.mark.parametrize("site", [*SITES, Site.parse(BASE, sections=frozenset({"café", "~user", "日本", "shop"}))])
def test_urls_of_the_shapes_sites_export_are_canonicalised_without_splitting_them(
    url: str, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a URL with a query string, percent escapes, characters above ASCII or a fragment, on a site with sections
    raw = json.dumps({"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}).encode()
    expected = model_record(raw, site)

    def split(*_args: Any, **_kwargs: Any) -> str:
        raise AssertionError(f"{url} was split by canonical_page_url")

    # When the fast path reads it, with the contract's URL parser out of its reach
    monkeypatch.setattr(fasturl, "canonical_page_url", split)
    fast = LineParser(site, HORIZON).record(raw)
    # Then it makes the contract's record (canonical URL, section) by itself
    assert fast is not None
    assert fast == expected


def test_an_escape_is_kept_exactly_where_the_rules_keep_it() -> None:
    # Given every "%" followed by two characters that may be hex digits, in either case
    digits = "0123456789ABCDEFabcdefG"
    for first in digits:
        for second in digits:
            escape = f"%{first}{second}"
            # When the fast path's pattern of a kept escape reads it, then it agrees with the rules' encoding
            kept = re.fullmatch(KEPT_ESCAPE, escape) is not None
            assert kept is (_percent_encode(escape, _PATH_SAFE) == escape), escape


def test_the_classes_are_the_characters_the_rules_take_as_they_are_or_encode() -> None:
    # Given every character
    every = "".join(map(chr, range(0x110000)))
    above = "\u0080-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"  # what XML allows above ASCII
    printable = re.escape("".join(map(chr, range(0x21, 0x7F))))
    for negated, worded in [
        (fasturl.NOT_PATH, f"[{fasturl.PATH_CHARS}/%{above}]"),
        (fasturl.NOT_QUERY, f"[{printable.replace('#', '')}{above}]"),
        (fasturl.NOT_FRAGMENT, f"[{printable}{above}]"),
    ]:
        # When each class (written as the characters it leaves out) is compared with its wording
        kept = re.compile(f"[^{negated}]").sub("", every)
        # Then it leaves out the same characters
        assert kept == re.compile(worded).sub("", every)
    assert re.fullmatch(f"[^{fasturl.NOT_PATH}]*", "a/%ü;") is None


NAMES = st.frozensets(st.sampled_from(["sid", "SID", "jsessionid", "ü", "a&b", "x=y", "", "k", "s", "phpsessid"]))


@settings(max_examples=300, deadline=None)
@given(
    names=NAMES,
    query=st.lists(st.sampled_from(["sid", "SID", "Sid", "=", "&", "1", "x", "jsessionid", "K", "y", "s", "a"])).map(
        "".join
    ),
)
def test_a_session_id_is_found_as_the_rules_find_it(names: frozenset[str], query: str) -> None:
    # Given a set of session parameter names (any case, ones no pair can have) and an ASCII query
    # When the fast path looks for a session ID in it
    found = re.fullmatch(session_free(names, "^&"), query) is None
    # Then it finds one exactly when the rules would remove one
    assert found is any(pair.split("=", 1)[0].lower() in names for pair in query.split("&"))


def test_the_characters_above_ascii_the_one_match_takes_are_the_ones_xml_allows() -> None:
    # Given every character above ASCII, and XML's rule as core.text states it
    every = "".join(map(chr, range(0x80, 0x110000)))
    # When the fast path's class of them reads each
    taken = re.compile(f"[{fasturl.ABOVE_ASCII}]").sub("", every)
    # Then it takes exactly the ones XML allows
    assert taken == "".join(c for c in every if forbidden_character(c) is not None)


WRITTEN = [
    f"{BASE}/blog/über-straße-1",
    f"{BASE}/日本/x",
    f"{BASE}/über/x",
    f"{BASE}/a/\U0001f600?x=1",
    f"{BASE}/a/\u0085\u00a0\ufeff",
    f"{BASE}/caf%C3%A9/ü",
    f"{BASE}/shop/page-1?q=größe",
    f"{BASE}/shop/page-1?q=größe&r='1'",
    f"{BASE}/blog/page-1#top",
    f"{BASE}/blog/page-1?ref=a#top",
    f"{BASE}/blog/page-1#",
    f'{BASE}/blog/page-1#a?b#c/<>"',
    f"{BASE}/blog/ü#ü",
    f"{BASE}/",
    f"{BASE}/ü",
]


@pytest.mark.parametrize("url", WRITTEN)
@pytest.mark.parametrize("site", [*SITES, SESSIONS, Site.parse(BASE, sections=frozenset({"über", "日本", "a"}))])
def test_urls_above_ascii_or_with_a_fragment_are_taken_by_one_match(
    url: str, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a URL on the site with characters above ASCII in its path or query, or a fragment, the rest canonical
    raw = json.dumps({"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}, ensure_ascii=False)
    expected = model_record(raw.encode(), site)

    def canonical(*_args: Any, **_kwargs: Any) -> str:
        raise AssertionError(f"{url} was canonicalised apart")

    # When the fast path reads it, with its own canonicaliser (and so the rules' parser) out of its reach
    monkeypatch.setattr(UrlCanonicaliser, "canonical", canonical)
    fast = LineParser(site, HORIZON).record(raw.encode())
    # Then it makes the contract's record (the URL encoded, the fragment dropped, the section) in its one match
    assert fast is not None
    assert fast == expected


CLEAN_PIECES = [
    *"aZ09-._~!$&'()*+,=:@/",
    "%C3%A9",
    "%2F",
    "%25",
    "%7E",  # the rules decode it: canonicalised apart
    "%c3%a9",  # the rules upper-case it: canonicalised apart
    "ü",
    "straße",
    "日本",
    "\U0001f600",
    "\u0085",
    "\ufeff",
    "<",  # encoded by the rules: canonicalised apart
    '"',
]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.lists(st.sampled_from(CLEAN_PIECES), max_size=10).map("".join),
    query=st.none() | st.lists(st.sampled_from([*CLEAN_PIECES, "&", "=", "?", "sid=1", "K=1", ">"])).map("".join),
    fragment=st.sampled_from(["", "#", "#top", "#ü", "#a?b&c", "#<x>", '#"']),
    site=st.sampled_from([*SITES, SESSIONS]),
)
def test_urls_real_sites_write_get_the_contracts_record_from_the_fast_path(
    path: str, query: str | None, fragment: str, site: Site
) -> None:
    # Given a URL of the shapes sites write: percent escapes in either case, characters above ASCII, a query, a
    # fragment, ' < > & "
    url = f"{BASE}/{path}" + ("" if query is None else f"?{query}") + fragment
    raw = json.dumps({"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}, ensure_ascii=False)
    # When the fast path reads it (noting the URLs it canonicalises apart from its one match)
    fast, apart = record_noting_apart(site, raw.encode())
    # Then it makes the model path's record byte for byte, or leaves it only where the rules warn (a session ID)
    expected = model_record(raw.encode(), site)
    assert fast == expected if expected != "warned" else fast is None
    # and its one match takes every URL but those holding what the rules change before the fragment (an empty query)
    # or a dot segment (perhaps, anywhere); escapes the rules rewrite, it rewrites in an ASCII URL without a fragment
    before = url.partition("#")[0]
    rewritten = any(p in before for p in ("%7E", "%c3%a9")) and not (url.isascii() and "#" not in url)
    changed = "/." in url or query == "" or rewritten or any(p in before for p in ("<", ">", '"'))
    if expected != "warned":
        assert bool(apart) is changed


ESCAPES = [f"%{a}{b}" for a in "0123456789ABCDEFabcdef" for b in "0123456789ABCDEFabcdef"]


@pytest.mark.parametrize("where", ["path", "query"])
def test_every_escape_in_either_case_is_written_as_the_rules_write_it_without_encoding_the_url(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given URLs holding each percent escape, in either case, between clean characters, in the path or the query
    urls = [f"{BASE}/blog/a{e}b/{e}" if where == "path" else f"{BASE}/blog/p?q=a{e}b&r={e}" for e in ESCAPES]
    expected = [oracle(url, SITES[2]) for url in urls]

    def encode(*_args: Any, **_kwargs: Any) -> str:
        raise AssertionError("encoded by the rules' function")

    # When the fast path canonicalises them, with the rules' encoding function out of its reach
    monkeypatch.setattr(fasturl, "_percent_encode", encode)
    found = [UrlCanonicaliser(SITES[2]).canonical(url) for url in urls]
    # Then each is the canonical URL the rules give (the escape upper-cased, or decoded where unreserved)
    assert found == expected
    assert found[ESCAPES.index("%7e")] == oracle(urls[ESCAPES.index("%7E")], SITES[2])


def record_noting_apart(site: Site, raw: bytes) -> tuple[Any, list[str]]:
    """The fast path's record of one line, and the URLs it canonicalised apart from its one match."""
    parser = LineParser(site, HORIZON)
    apart: list[str] = []
    whole = parser._urls.canonical

    def noted(found: str) -> tuple[str, str] | None:
        apart.append(found)
        return whole(found)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parser._urls, "canonical", noted)
        return parser.record(raw), apart
