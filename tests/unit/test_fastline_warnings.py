"""URLs the rules canonicalise with a warning (a session ID removed) take the fast path: the record and the warnings
the model path makes, in line order, on both sides of the length limit, and without the model path at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_updater.core import events as events_module
from sitemap_updater.core import fasturl
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.fasturl import UrlCanonicaliser
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.spill import Spilled, spill_state
from sitemap_updater.core.urls import MAX_URL_LENGTH, Site, UrlError, canonical_page_url
from sitemap_updater.service.build import build
from tests.conftest import AS_OF_US, HORIZON
from tests.unit.test_fastline import BASE, SITES

SESSIONS = Site.parse(BASE, session_params=frozenset({"SID", "ü", "a&b", "x=y", "", "k"}), sections=None)


def line(url: str, **more: Any) -> bytes:
    body = {"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z", **more}
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")


def model(raw: bytes, site: Site) -> tuple[Spilled, list[str]] | str:
    """The contract's (pydantic) record of a line and its warnings as ``build`` lists them, or "rejected"."""
    try:
        parsed = parse_event(raw, site, HORIZON)
    except EventRejected:
        return "rejected"
    assert not parsed.unknown_fields
    return spill_state(state_from_event(parsed.event)), [f"url: {text}" for text in parsed.warnings]


QUERY = "?sid=1&ref=a"
PAD = "p" * (MAX_URL_LENGTH - len(f"{BASE}/blog/"))  # a path that makes the canonical URL MAX_URL_LENGTH long


# Written from the rules as docs/events.md states them: the site's session parameters (jsessionid, phpsessid, sid,
# sessionid by default) are removed from the query (each "&"-separated pair whose name, lower-cased, is one) and
# from path parameters (";name=value"), a warning each in the order they appear; the rest is canonicalised as usual.
@pytest.mark.parametrize(
    ("url", "canonical", "removed"),
    [
        (f"{BASE}/blog/p?sid=1&ref=a", f"{BASE}/blog/p?ref=a", [("sid", "query")]),
        (
            f"{BASE}/blog/p?ref=a&SID=2&b=c&PhpSessId=3",
            f"{BASE}/blog/p?ref=a&b=c",
            [("SID", "query"), ("PhpSessId", "query")],
        ),
        (f"{BASE}/blog/p?sessionid", f"{BASE}/blog/p", [("sessionid", "query")]),
        (f"{BASE}/blog/p;jsessionid=AB12?x=1", f"{BASE}/blog/p?x=1", [("jsessionid", "path")]),
        (f"{BASE}/blog/p;JSESSIONID=1;v=2?sid=3", f"{BASE}/blog/p;v=2", [("JSESSIONID", "path"), ("sid", "query")]),
        (f"{BASE}/über/straße?sid=1&q=größe", f"{BASE}/%C3%BCber/stra%C3%9Fe?q=gr%C3%B6%C3%9Fe", [("sid", "query")]),
        (f"{BASE}/blog/a b?sid=1&q=<x>#top", f"{BASE}/blog/a%20b?q=%3Cx%3E", [("sid", "query")]),
        ("HTTPS://WWW.EXAMPLE.COM:443/Blog/../blog/p?sid=1", f"{BASE}/blog/p", [("sid", "query")]),
        (f"{BASE}/blog/{PAD}?sid=1", f"{BASE}/blog/{PAD}", [("sid", "query")]),  # the limit, once it is removed
    ],
)
def test_a_session_id_is_removed_with_the_warning_the_rules_give(
    url: str, canonical: str, removed: list[tuple[str, str]]
) -> None:
    # Given an upsert whose URL carries session IDs
    raw = line(url)
    # When the fast path reads it
    found = LineParser(SITES[2], HORIZON).noted_record(raw)
    # Then it takes it: the page is the canonical URL without them, each removal warned about as the rules word it
    assert found is not None
    record, warnings = found
    assert record[3].startswith(canonical.encode() + b"<url><loc>")
    assert warnings == [f"url: session ID parameter {name!r} removed from the {part}" for name, part in removed]
    assert found == model(raw, SITES[2])


@pytest.mark.parametrize(
    ("url", "taken"),
    [
        (f"{BASE}/blog/{PAD}?sid=1", True),
        (f"{BASE}/blog/{PAD}x?sid=1", False),
        (f"{BASE}/blog/{PAD[:-4]}?sid=1&a=b", True),
        (f"{BASE}/blog/{PAD[:-3]}?sid=1&a=b", False),
        (f"{BASE}/blog/{PAD[:-6]}é?sid=1", True),  # é is 6 characters once encoded
        (f"{BASE}/blog/{PAD[:-5]}é?sid=1", False),
    ],
)
def test_the_length_limit_holds_on_both_sides_after_a_session_id_is_removed(url: str, taken: bool) -> None:
    # Given a URL whose canonical form, without its session ID, is just within or past 2,047 characters
    raw = line(url)
    # When the fast path reads it
    found = LineParser(SITES[0], HORIZON).noted_record(raw)
    # Then it takes exactly the ones the contract accepts, and leaves the others to be rejected in the contract's words
    assert (found is not None) is taken
    expected = model(raw, SITES[0])
    assert (expected != "rejected") is taken
    if taken:
        assert found == expected


PIECES = [
    "sid=1",
    "SID=x",
    "Sid",
    "sessionid=",
    "k=1",
    "K",
    "a&b=1",
    "ü=1",
    "Ü=2",
    "x=y=1",
    "=1",
    "ref=a",
    "&",
    "<",
    "'",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.lists(st.sampled_from(["blog/", "a", "ü", "%c3%a9", ";jsessionid=1", ";x=1", "/..", "%7E"]), max_size=5),
    query=st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
    site=st.sampled_from([*SITES, SESSIONS]),
    images=st.booleans(),
)
def test_a_url_the_rules_warn_about_gets_the_contracts_record_and_warnings(
    path: list[str], query: list[str], site: Site, images: bool
) -> None:
    # Given an upsert whose URL the rules may strip of session IDs (any site's names, any case, any other shape)
    more: dict[str, Any] = {"images": [{"loc": "https://cdn.example.com/a.jpg"}]} if images else {}
    raw = line(f"{BASE}/{''.join(path)}?{''.join(query)}", **more)
    # When the fast path reads it
    found = LineParser(site, HORIZON).noted_record(raw)
    # Then it makes the model path's record and warnings, byte for byte, or leaves a line the contract rejects
    expected = model(raw, site)
    assert found == (None if expected == "rejected" else expected)


def test_a_build_lists_the_warnings_in_line_order_without_the_model_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export of URLs the rules change, with session IDs on some lines, and a line only the models read
    urls = [
        f"{BASE}/blog/a?sid=1&ref=a",
        f"{BASE}/blog/b",
        f"{BASE}/blog/c;jsessionid=9?SID=2",
        f"{BASE}:443/blog/d",
        f"{BASE}/blog/../e?q=<x>",
        "HTTPS://WWW.EXAMPLE.COM/blog/f?PHPSESSID=7",
    ]
    lines = [line(url) for url in urls]
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    limits = Limits()

    # When it is built with the model path unavailable
    def unavailable(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model path read a line")

    with monkeypatch.context() as patch:
        patch.setattr(events_module, "parse_event", unavailable)
        result = build(events, tmp_path / "out", Site.parse(BASE, sections=None), limits, AS_OF_US, workers=1)
    # Then every page is published and the session IDs are warned about, line by line
    assert (result.lines, result.accepted, result.rejections) == (6, 6, [])
    assert result.warnings == [
        (1, "url: session ID parameter 'sid' removed from the query"),
        (3, "url: session ID parameter 'jsessionid' removed from the path"),
        (3, "url: session ID parameter 'SID' removed from the query"),
        (6, "url: session ID parameter 'PHPSESSID' removed from the query"),
    ]
    # And a line only the models read (an unknown field) has its warnings between them, in line order
    lines.insert(2, line(f"{BASE}/blog/g?sessionid=1", note="x"))
    events.write_bytes(b"\n".join(lines) + b"\n")
    mixed = build(events, tmp_path / "out2", Site.parse(BASE, sections=None), limits, AS_OF_US, workers=1)
    assert mixed.warnings == [
        (1, "url: session ID parameter 'sid' removed from the query"),
        (3, "url: session ID parameter 'sessionid' removed from the query"),
        (3, "ignored unknown fields: note"),
        (4, "url: session ID parameter 'jsessionid' removed from the path"),
        (4, "url: session ID parameter 'SID' removed from the query"),
        (7, "url: session ID parameter 'PHPSESSID' removed from the query"),
    ]


# The rules as docs/events.md states them, written out apart from core.urls: RFC 3986's unreserved characters and
# sub-delimiters, ":" and "@" (and "/" and "?" in the query) are kept; an escape is upper-cased, or decoded when it
# stands for an unreserved character; a "%" that starts no escape is "%25"; any other character is percent-encoded
# as UTF-8; the fragment is dropped; query pairs named as a session ID (any case) are removed with a warning each.
UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
PATH_KEPT = UNRESERVED | set("!$&'()*+,;=:@/")
HEX = set("0123456789abcdefABCDEF")
SESSION_NAMES = {"jsessionid", "phpsessid", "sid", "sessionid"}


def documented_encoding(text: str, kept: set[str]) -> str:
    out: list[str] = []
    at = 0
    while at < len(text):
        char = text[at]
        if char == "%" and len(text) >= at + 3 and text[at + 1] in HEX and text[at + 2] in HEX:
            byte = int(text[at + 1 : at + 3], 16)
            out.append(chr(byte) if chr(byte) in UNRESERVED else "%" + text[at + 1 : at + 3].upper())
            at += 3
            continue
        out.append(char if char in kept else "".join(f"%{b:02X}" for b in char.encode("utf-8")))
        at += 1
    return "".join(out)


def documented(url: str) -> tuple[str, list[str]] | None:
    """The canonical URL and warnings the documented rules give a URL of BASE with a path of no dot segment or path
    parameter; None where it comes to more than 2,047 characters."""
    rest = url.strip(" ")[len(BASE) :].partition("#")[0]  # spaces at the URL's ends are not part of it
    path, _, query = rest.partition("?")
    warnings: list[str] = []
    kept_pairs = []
    for pair in query.split("&") if query else []:
        name = pair.split("=", 1)[0]
        if name.lower() in SESSION_NAMES:
            warnings.append(f"url: session ID parameter {name!r} removed from the query")
        else:
            kept_pairs.append(pair)
    canonical = BASE + documented_encoding(path, PATH_KEPT)
    if kept_pairs and "&".join(kept_pairs):  # an empty query is dropped with its "?"
        canonical += "?" + documented_encoding("&".join(kept_pairs), PATH_KEPT | {"?"})
    return (canonical, warnings) if len(canonical) <= MAX_URL_LENGTH else None


WORDS = ["blog/", "a", "Z9-._~", "!$'()*+,=:@", "über", "straße", "日本", "\U0001f600", "%c3%a9", "%C3%A9", "%7e"]
WORDS += ["%41", "%2F", "%", "%4", "%zz", " ", "<", ">", '"', "\\", "^", "|", "{", "`"]
PAIRS = ["sid=1", "SID=2", "PhpSessId=3", "sessionid", "jsessionid=4", "ref=a", "b=c", "q=größe", "x=<y>", "", "s=%7e"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.lists(st.sampled_from(WORDS), max_size=8).map("".join),
    query=st.none() | st.lists(st.sampled_from(PAIRS), min_size=1, max_size=5).map("&".join),
    fragment=st.sampled_from(["", "#top", "#ü<x>"]),
    pad=st.none() | st.integers(-8, 8),
)
def test_the_fast_path_canonicalises_as_the_documented_rules_say(
    path: str, query: str | None, fragment: str, pad: int | None
) -> None:
    # Given an upsert whose URL holds characters above ASCII, escapes in either case, characters to encode, session
    # IDs and a fragment, perhaps padded to about the 2,047-character limit
    url = f"{BASE}/{path}" + ("" if query is None else f"?{query}") + fragment
    short = documented(url)
    assert short is not None
    if pad is not None:  # each "p" adds one character: the canonical URL comes to MAX_URL_LENGTH + pad
        url = f"{BASE}/" + "p" * (MAX_URL_LENGTH + pad - len(short[0])) + url[len(BASE) + 1 :]
    raw = line(url)
    # When the fast path reads it
    found = LineParser(SITES[2], HORIZON).noted_record(raw)
    # Then it takes the page at the URL the documented rules give, with their warnings, and leaves what they refuse
    expected = documented(url)
    if expected is None:
        assert found is None
        assert model(raw, SITES[2]) == "rejected"
        return
    assert found is not None
    (_, _, _, blob), warnings = found
    assert blob.startswith(expected[0].encode() + b"<url><loc>")
    assert warnings == expected[1]


# What the matches let through to be encoded: printable ASCII but a space (with "=", "." and "%", which
# quoted-printable treats apart) and characters above ASCII of every UTF-8 length.
PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from([*PRINTABLE, "=.", "ü", "ß", "日", "\U0001f600", "\u0080"]), max_size=200).map(
        "".join
    )
)
def test_characters_above_ascii_are_percent_encoded_as_utf8_bytes_in_upper_case(text: str) -> None:
    # Given text the matches take, long enough to pass quoted-printable's 76-character lines, ending anywhere
    for sample in (text, text + ".", "." + text, "=" * 75 + "." + text):
        # When its characters above ASCII are encoded
        encoded = fasturl.encode_above_ascii(sample)
        # Then each is its UTF-8 bytes as %XX in upper-case hex (RFC 3986 2.1), and nothing else changed
        assert encoded == "".join(c if c < "\x80" else "".join(f"%{b:02X}" for b in c.encode()) for c in sample)


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("HTTPS://WWW.EXAMPLE.COM/NEWS/Page-1", f"{BASE}/NEWS/Page-1"),  # the path's case is kept
        ("https://Www.Example.Com/a?q=<x>#top", f"{BASE}/a?q=%3Cx%3E"),
        (f"{BASE}:443/blog/p", f"{BASE}/blog/p"),
        ("HTTPS://www.example.com:443/über", f"{BASE}/%C3%BCber"),
        (f"{BASE}/blog/a/../p", f"{BASE}/blog/p"),
        (f"{BASE}/blog/./%2e%2E/b/%2E/", f"{BASE}/b/"),
        ("HTTPS://WWW.EXAMPLE.COM:443/a/b/../../c/./d?x=1", f"{BASE}/c/d?x=1"),
    ],
)
def test_another_spelling_of_the_sites_address_or_a_dot_segment_is_canonicalised_without_splitting(
    url: str, canonical: str
) -> None:
    # Given a URL with the site's scheme and host in capitals, its default port or a dot segment
    urls = UrlCanonicaliser(SITES[2])

    def split(url: str) -> None:
        raise AssertionError(f"split {url!r}")

    # When the fast path canonicalises it, with the rules' own splitting unavailable
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(urls, "_full", split)
        found = urls.canonical(url)
    # Then it is the canonical URL the rules give
    assert found == (canonical, SITES[2].section_of(canonical))
    assert canonical_page_url(url, SITES[2]) == canonical


@pytest.mark.parametrize(
    "url", ["https://www.example.com.evil.com/a", "https://www.example.com@evil.com/a", f"{BASE}:8443/a", f"{BASE}:443"]
)
def test_a_url_that_only_starts_like_the_sites_address_is_left_to_the_rules(url: str) -> None:
    # Given a URL on another host or port, or with no path after the default port
    urls = UrlCanonicaliser(SITES[2])
    # When the fast path canonicalises it, then it is what the rules make of it (refused, or canonicalised)
    expected: tuple[str, str] | None
    try:
        page = canonical_page_url(url, SITES[2])
        expected = (page, SITES[2].section_of(page))
    except UrlError:
        expected = None
    assert urls.canonical(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        f"{BASE}/blog/p?sid=1&ref=a",
        f"{BASE}/blog/p?ref=a&SID=2&b=c&PhpSessId=3",
        f"{BASE}/blog/p?sessionid",  # nothing left: no "?"
        f"{BASE}/über/straße?sid=1&q=größe",
        f"{BASE}/blog/caf%c3%a9/p?q=<x>&sid=1#top",
        f"{BASE}/blog/a/../p?jsessionid=9&x=1",
        f"{BASE}/blog/{PAD}?sid=1",  # the limit, once it is removed
    ],
)
@pytest.mark.parametrize("site", [SITES[0], SITES[2], SESSIONS])
def test_a_session_id_in_the_query_is_removed_without_splitting_the_url(url: str, site: Site) -> None:
    # Given an upsert whose URL, written with the site's scheme and host, carries session IDs in its query
    raw = line(url)

    def split(*_args: Any, **_kwargs: Any) -> str:
        raise AssertionError(f"{url} was split by canonical_page_url")

    # When the fast path reads it, with the contract's URL parser out of its reach
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fasturl, "canonical_page_url", split)
        found = LineParser(site, HORIZON).noted_record(raw)
    # Then it makes the contract's record and warnings by itself
    assert found == model(raw, site)
