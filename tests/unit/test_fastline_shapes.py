"""The fast path on the URL shapes of `bench/url_exports.py` (issue 31): escapes the rules rewrite (lower-case hex, an
unreserved character) rewritten in the one match, and a block's URLs above ASCII percent-encoded all at once; each
held to the contract (core.urls, the event models) on both sides."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_updater.core import fastline, fasturl
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.fasturl import UrlCanonicaliser, encode_each_above_ascii
from sitemap_updater.core.spill import HEAD, SpillGroups
from sitemap_updater.core.urls import Site, canonical_page_url
from tests.conftest import HORIZON
from tests.unit.test_fastline import BASE, SITES, model_record
from tests.unit.test_fastline_urls import record_noting_apart

# A site whose session parameter's name holds an escape: the rules look for it in the query as written
ESCAPED_NAME = Site.parse(BASE, session_params=frozenset({"s%41"}), sections=frozenset({"~user", "café"}))


def upsert(url: str) -> bytes:
    body = {"type": "upsert", "url": url, "occurred_at": "2026-11-20T10:00:00Z"}
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")


def utf8_escaped(text: str) -> str:
    """RFC 3986 2.1, character by character: each one above ASCII as its UTF-8 bytes in upper-case hex."""
    return "".join(c if c < "\x80" else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in text)


TEXT = st.lists(
    st.sampled_from([*map(chr, range(0x21, 0x7F)), "=.", "ü", "ß", "日", "\U0001f600", "\u0080", "\ufffd"]),
    max_size=120,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(TEXT, max_size=12), broken=st.sampled_from(["", "\n", "\r", "a\r\nb"]))
def test_texts_above_ascii_are_encoded_all_at_once_as_each_on_its_own(texts: list[str], broken: str) -> None:
    # Given texts the matches take (printable ASCII and characters above ASCII of every UTF-8 length), and perhaps one
    # holding a line break
    # When they are percent-encoded all at once
    found = encode_each_above_ascii(texts)
    # Then each comes out as its own UTF-8 percent-encoding, in order; with a line break in one, none does
    assert found == [utf8_escaped(text) for text in texts]
    if broken:
        assert encode_each_above_ascii([*texts, f"x{broken}y"]) is None


REWRITTEN = [
    f"{BASE}/news/ni%c3%b1o-3",  # lower-case hex: upper-cased
    f"{BASE}/guides/caf%C3%A9-%7Euser-7",  # an unreserved character: decoded
    f"{BASE}/%7euser/page",  # decoded into the first segment, which names the section
    f"{BASE}/caf%c3%a9/x?q=%3c&r=%41",
    f"{BASE}/blog/%E6%97%a5?ref=a&b=c",
]
APART = [
    f"{BASE}/blog/%2e%2E/x",  # a dot segment once decoded
    f"{BASE}/blog/%%41",  # a "%" that starts no escape, before one
    f"{BASE}/blog/%41%",
    f"{BASE}/blog/%zz%41",
    f"{BASE}/blog/a%4",
    f"{BASE}/blog/p?%73id=1&b=%41",  # decoded, a session ID's name, which the rules read as written
    f"{BASE}/blog/%c3%a9#top",  # a fragment: the second match's
    f"{BASE}/blog/ü%c3%a9",  # above ASCII: the second match's
]


@pytest.mark.parametrize("url", REWRITTEN + APART)
@pytest.mark.parametrize("site", [*SITES, ESCAPED_NAME])
def test_escapes_the_rules_rewrite_are_rewritten_in_the_one_match(url: str, site: Site) -> None:
    # Given an ASCII URL with escapes the rules rewrite, or one they change in other ways too
    raw = upsert(url)
    # When the fast path reads it (noting the URLs it canonicalises apart from its one match)
    fast, apart = record_noting_apart(site, raw)
    # Then it makes the contract's record byte for byte, and only a URL whose escapes are all that changes and whose
    # query has no session parameter's name with an escape in it is taken without the canonicaliser
    expected = model_record(raw, site)
    assert fast == expected if expected not in ("warned", "rejected") else fast is None
    assert bool(apart) is (url in APART or site is ESCAPED_NAME)


ESCAPE_PIECES = [
    *"aZ09-._~!$&'()*+,=:@/",
    "blog/",
    "%C3%A9",
    "%c3%a9",
    "%7E",
    "%7e",
    "%2E",
    "%2e",
    "%2F",
    "%41",
    "%5f",
    "%25",
    "%",
    "%G1",
    "/..",
    "/.",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.lists(st.sampled_from(ESCAPE_PIECES), max_size=10).map("".join),
    query=st.none()
    | st.lists(st.sampled_from([*ESCAPE_PIECES, "&", "sid=1", "%73id=1", "s%41=1", "sA=1"])).map("".join),
    site=st.sampled_from([*SITES, ESCAPED_NAME]),
)
def test_ascii_urls_with_escapes_in_either_case_get_the_contracts_record(
    path: str, query: str | None, site: Site
) -> None:
    # Given an ASCII URL of escapes in either case (of unreserved characters too), lone "%", dots and session IDs
    url = f"{BASE}/{path}" + ("" if query is None else f"?{query}")
    raw = upsert(url)
    # When the fast path reads it, and canonicalises it on its own
    fast = LineParser(site, HORIZON).record(raw)
    # Then it makes the contract's record, byte for byte, or leaves the line to the model path where that warns
    expected = model_record(raw, site)
    assert fast == expected if expected not in ("warned", "rejected") else fast is None
    warnings: list[str] = []
    canonical = canonical_page_url(url, site, warnings)
    assert UrlCanonicaliser(site).canonical(url) == (None if warnings else (canonical, site.section_of(canonical)))


WORDS = ["über", "straße", "café", "niño", "日本", "доступ", "smörgåsbord", "\U0001f600", "a=b", "x."]


def spilled_urls(spill: SpillGroups) -> set[str]:
    """The URL of every state spilled."""
    urls = set()
    for heads, blobs in spill.groups.values():
        for head, blob in zip(heads, blobs, strict=True):
            at = 0
            for offset in range(0, len(head), HEAD.size):
                fields = HEAD.unpack_from(head, offset)
                url_size, body_size = fields[7], fields[8]
                urls.add(blob[at : at + url_size].decode())
                at += url_size + body_size
    return urls


@pytest.mark.parametrize("every", [1, 3, 20])
def test_a_block_of_urls_above_ascii_is_encoded_at_once_or_one_by_one(
    every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an export of several blocks, one URL in ``every`` above ASCII (some with a query, a fragment, a first
    # segment above ASCII; some long enough for quoted-printable's lines)
    urls = []
    for i in range(10_000):
        if i % every:
            urls.append(f"{BASE}/blog/page-{i}")
            continue
        tail = ["", "?ref=a&q=ü", "#top", "/x" * 40][i // every % 4]
        first = "blog" if i // every % 7 else "日本"
        urls.append(f"{BASE}/{first}/{WORDS[i // every % len(WORDS)]}-{i}{tail}")
    data = b"\n".join(upsert(url) for url in urls) + b"\n"
    assert len(data) > 3 * fastline._DECODE_BYTES
    calls: list[int] = []
    one_by_one, at_once = fasturl.encode_above_ascii, fasturl.encode_each_above_ascii

    def single(text: str) -> str:
        calls.append(1)
        return one_by_one(text)

    def each(texts: list[str]) -> list[str] | None:
        calls.append(len(texts))
        return at_once(texts)

    monkeypatch.setattr(fastline, "encode_above_ascii", single)
    monkeypatch.setattr(fastline, "encode_each_above_ascii", each)
    # When the fast path reads it
    spill = SpillGroups()
    lines, rest = LineParser(SITES[2], HORIZON).parse(data, spill)
    # Then it takes every line, each with the contract's canonical URL
    assert (lines, rest) == (len(urls), [])
    assert spilled_urls(spill) == {canonical_page_url(url, SITES[2]) for url in urls}
    # encoding the URLs above ASCII of each block at once where they are many, one by one where they are few
    batched = [n for n in calls if n > 1]
    if every == 20:
        assert len(batched) == 1  # the first block, before any was seen
    else:
        assert sum(batched) == sum(not url.isascii() for url in urls)  # every block's, at once


def test_a_line_break_in_a_url_above_ascii_leaves_its_block_to_be_encoded_one_by_one() -> None:
    # Given a block of URLs above ASCII, one of which holds a line break (the models refuse it)
    urls = [f"{BASE}/blog/über-{i}" for i in range(50)] + [f"{BASE}/blog/ü\nx"]
    data = b"\n".join(upsert(url) for url in urls) + b"\n"
    # When the fast path reads it
    spill = SpillGroups()
    lines, rest = LineParser(SITES[0], HORIZON).parse(data, spill)
    # Then every other URL is the contract's, and that line is left to the model path
    assert lines == 51
    assert [number for number, _ in rest] == [51]
    assert spilled_urls(spill) == {canonical_page_url(url, SITES[0]) for url in urls[:-1]}
