"""The build's fast path must make exactly the records the model path makes, or step aside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_updater.core import fastline
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.event_rules import MAX_BODY_BYTES
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastjson import DECODE, decode_chunk
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.fasturl import UrlCanonicaliser
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.spill import Spilled, SpillGroups, spill_state
from sitemap_updater.core.urls import Site, UrlError, canonical_page_url
from tests.conftest import HORIZON

SITE = Site.parse("https://www.example.com")
BASE = "https://www.example.com"
# The Sections setting: the default (every page in root), some first segments named, every first segment.
SITES = [SITE, Site.parse(BASE, sections=frozenset({"blog", "a", "über", "%7Euser"})), Site.parse(BASE, sections=None)]
BAD_EVENTS = Path(__file__).resolve().parents[1] / "data" / "bad_events"


def model_record(raw: bytes, site: Site = SITE) -> Spilled | str:
    """What the contract (pydantic) path makes of a line: a spilled state, or why the fast path must not take it."""
    try:
        parsed = parse_event(raw, site, HORIZON)
    except EventRejected:
        return "rejected"
    if parsed.warnings or parsed.unknown_fields:
        return "warned"
    state = state_from_event(parsed.event)
    return spill_state(state)


URLS = [
    f"{BASE}/blog/a-post",
    f"{BASE}/",
    f"{BASE}/a/b/c.html",
    f"{BASE}/shop/x?b=2&a=1",
    f"{BASE}/shop/x?sid=42",
    f"{BASE}/shop/x;jsessionid=42",
    f"{BASE}/über/straße",
    f"{BASE}/%7Euser/%e2%82%ac",
    f"{BASE}/a/./b/../c",
    f"{BASE}/a#fragment",
    f"{BASE}:443/blog/port",
    "HTTPS://WWW.EXAMPLE.COM/Blog/Case",
    "http://www.example.com/blog/other-scheme",
    "https://other.example.com/blog/x",
    "https://user:pw@www.example.com/x",
    "/blog/relative",
    f"{BASE}/tab\there",
    f"{BASE}/ctl\x01",
    f"{BASE}/" + "long-" * 420,
    f"{BASE}/{'x' * 2023}",
    "",
    "  ",
]
MOMENTS = [
    "2026-11-20T10:00:00Z",
    "2026-11-20T10:00:00+05:30",
    "2026-11-20T10:00:00-08:00",
    "2026-11-20T10:00:00-00:00",
    "2026-11-20T10:00:00+00:00",
    "2026-11-20T10:00:00.5Z",
    "2026-11-20T10:00:00.123456Z",
    "2026-11-20T10:00:00.1234567Z",
    "2026-11-20T10:00:00,5Z",
    "2026-11-20t10:00:00z",
    "2026-11-20 10:00:00Z",
    "2026-11-20T10:00Z",
    "2026-11-20T10:00:00",
    "2026-11-20",
    "2026-02-30T10:00:00Z",
    "2026-11-20T24:00:00Z",
    "2026-12-31T23:59:60Z",
    "2026-11-20T10:00:00+24:00",
    "2026-11-20T10:00:00+23:59",
    "1970-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:30:00+01:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2026-11-21T12:05:00Z",  # the tests' now plus the clock skew (HORIZON): the last moment accepted
    "2026-11-21T12:05:00.000001Z",  # the first rejected
    "2026-11-21T17:35:00.000001+05:30",
    " 2026-11-20T10:00:00Z",
    "１９７０-01-01T00:00:00Z",
    "1700000000",
    1700000000,
    None,
]
LASTMODS = [
    "2026-11-20",
    "2026-11-22",  # begun at UTC+14 by the tests' now
    "2026-11-23",  # begun nowhere
    "2026-11-21T12:05:00Z",
    "2026-11-21T12:05:00.000001Z",
    "9999-12-31",
    "2026-02-29",
    "2024-02-29",
    "2026-W47-1",
    "20261120",
    " 2026-11-20 ",
    "2026-11-20T10:00:00Z",
    "2026-11-20T10:00:00+02:00",
    "2026-11-20T10:00:00.999999-01:00",
    "2026-11-20T10:00:00",
    "2026-11",
    "",
    20261120,
    None,
]
NUMBERS: list[Any] = [0, 1, 7, -1, 10**18, 10**18 + 1, 0.5, 1.0, 0.123, 1.5, -0.1, True, False, "1", None]
TEXTS: list[Any] = ["blog", "Bücher & más", "", "x" * 100, "x" * 101, "a\x01b", "tab\tok", 5, None]
IMAGE_URLS = [
    "https://cdn.example.com/i/1.jpg",
    "https://CDN.example.com/i/1.jpg",
    "https://cdn.example.com/i/ü.jpg",
    "https://cdn.example.com/i/1.jpg?w=1&h=2",
    "ftp://cdn.example.com/i/1.jpg",
    "/relative.jpg",
    "",
]


def _image() -> st.SearchStrategy[Any]:
    plain = st.fixed_dictionaries(
        {"loc": st.sampled_from(IMAGE_URLS)},
        optional={"title": st.sampled_from(TEXTS), "caption": st.sampled_from(TEXTS), "width": st.just(10)},
    )
    return st.one_of(plain, st.just("not an object"), st.just({}))


VALUES: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(
        ["upsert", "publish", "update", "delete", "unpublish", "archive", "Upsert", " publish", "x", 1]
    ),
    "url": st.sampled_from(URLS),
    "occurred_at": st.sampled_from(MOMENTS),
    "version": st.sampled_from(NUMBERS),
    "lastmod": st.sampled_from(LASTMODS),
    "changefreq": st.sampled_from(["daily", "never", "Daily", "sometimes", 1, None]),
    "priority": st.sampled_from(NUMBERS),
    "section": st.sampled_from(TEXTS),
    "images": st.one_of(st.lists(_image(), max_size=3), st.just("x"), st.none(), st.just({})),
    "videos": st.sampled_from([[], None]),
    "news": st.sampled_from([None, {}]),
    "alternates": st.sampled_from([[], None]),
    "unknown": st.just(1),
}
VALID = {
    "type": "upsert",
    "url": f"{BASE}/blog/a",
    "occurred_at": "2026-11-20T10:00:00Z",
    "version": 1,
    "lastmod": "2026-11-19",
    "changefreq": "daily",
    "priority": 0.5,
    "section": "blog",
    "images": [{"loc": "https://cdn.example.com/1.jpg", "title": "t", "caption": "c"}],
}


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event with a few fields dropped or changed: each odd value meets otherwise valid events."""
    body = {
        name: value for name, value in VALID.items() if draw(st.booleans()) or name in ("type", "url", "occurred_at")
    }
    for name in draw(st.sets(st.sampled_from(sorted(VALUES)), max_size=3)):
        if draw(st.integers(0, 5)) == 0:
            body.pop(name, None)
        else:
            body[name] = draw(VALUES[name])
    return body


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=events(), ascii_only=st.booleans(), site=st.sampled_from(SITES))
def test_the_fast_path_makes_the_model_paths_record_or_steps_aside(
    body: dict[str, Any], ascii_only: bool, site: Site
) -> None:
    # Given any event, valid or not, in any shape, and a site with any Sections setting
    raw = json.dumps(body, ensure_ascii=ascii_only).encode()
    # When the fast path reads it
    fast = LineParser(site, HORIZON).record(raw)
    # Then it either declines or makes, byte for byte, the record of the model path
    if fast is not None:
        assert fast == model_record(raw, site)


@pytest.mark.parametrize(
    "body",
    [
        {"type": "upsert", "url": f"{BASE}/blog/a", "occurred_at": "2026-11-20T10:00:00Z"},
        {"type": "publish", "url": f"{BASE}/blog/a", "occurred_at": "2026-11-20T10:00:00+01:00", "version": 3},
        {
            "type": "upsert",
            "url": f"{BASE}/blog/a?x=1&y=2",
            "occurred_at": "2026-11-20T10:00:00Z",
            "lastmod": "2026-11-01",
        },
        {"type": "upsert", "url": f"{BASE}/über/straße", "occurred_at": "2026-11-20T10:00:00Z", "section": "Bücher"},
        {
            "type": "upsert",
            "url": f"{BASE}/p",
            "occurred_at": "2026-11-20T10:00:00Z",
            "lastmod": "2026-11-20T09:00:00-05:00",
            "changefreq": "weekly",
            "priority": 0.8,
            "images": [
                {"loc": "https://cdn.example.com/1.jpg", "title": "A & B"},
                {"loc": "https://cdn.example.com/1.jpg"},
            ],
        },
        {"type": "delete", "url": f"{BASE}/blog/a", "occurred_at": "2026-11-20T10:00:00Z", "version": 9},
        # adoption's shape for a page its sitemap gave no lastmod: none is shown (6x the CPU on the model path)
        {"type": "upsert", "url": f"{BASE}/blog/a", "occurred_at": "1970-01-01T00:00:00Z", "lastmod": None},
        {
            "type": "upsert",
            "url": f"{BASE}/a?b=1&c='2'",
            "occurred_at": "2026-11-20T10:00:00Z",
            "lastmod": None,
            "images": [{"loc": "https://cdn.example.com/1.jpg"}],
        },
        {"type": "upsert", "url": f"{BASE}/p", "occurred_at": "2026-11-20T10:00:00Z", "lastmod": None, "priority": 1},
        {"type": "delete", "url": f"{BASE}/blog/a", "occurred_at": "2026-11-20T10:00:00Z", "lastmod": None},
    ],
)
@pytest.mark.parametrize("site", SITES, ids=["default", "named", "every"])
def test_events_of_the_common_shape_take_the_fast_path(body: dict[str, Any], site: Site) -> None:
    # Given a plain, valid event of the shapes a CMS export is made of
    raw = json.dumps(body, ensure_ascii=False).encode()
    # When the fast path reads it
    fast = LineParser(site, HORIZON).record(raw)
    # Then it makes the record itself, the same as the model path
    assert fast is not None
    assert fast == model_record(raw, site)


@pytest.mark.parametrize("name", sorted(p.name for p in BAD_EVENTS.iterdir()))
def test_no_bad_event_takes_the_fast_path(name: str) -> None:
    # Given an event the contract rejects
    raw = (BAD_EVENTS / name).read_bytes()
    # When the fast path reads it, then it steps aside so the model path can word the error
    assert LineParser(SITE, HORIZON).record(raw) is None


# JSON the msgspec reader and the models' reader (jiter) must take the same way, or leave to the model path: escapes,
# duplicate keys, numbers written oddly, nulls where the common shape allows none, bytes that are not UTF-8.
VALID_JSON = json.dumps(VALID, ensure_ascii=False)
TRICKY_LINES = [
    VALID_JSON.encode(),
    json.dumps(VALID, ensure_ascii=True).encode(),  # every non-ASCII character as a \u escape
    f" \t{VALID_JSON}\t ".encode(),
    b"\xef\xbb\xbf" + VALID_JSON.encode(),  # a byte order mark: the models skip it, the fast path steps aside
    VALID_JSON.replace('"type": "upsert"', '"type": "delete", "type": "upsert"').encode(),  # the last one counts
    VALID_JSON.replace('"type": "upsert"', '"type": "upsert", "type": "delete"').encode(),
    VALID_JSON.replace(
        '"url": "https://www.example.com/blog/a"', '"url": "x", "url": "https://www.example.com/b"'
    ).encode(),
    VALID_JSON.replace('"ty', '"\\u0074y', 1).encode(),  # an escaped key
    VALID_JSON.replace("/blog/a", "\\/blog\\/a").encode(),  # escaped slashes
    VALID_JSON.replace("/blog/a", "/blog/\\u00fcber").encode(),
    VALID_JSON.replace("/blog/a", "/blog/\\ud83d\\ude00").encode(),  # a surrogate pair
    VALID_JSON.replace("/blog/a", "/blog/\\ud83d").encode(),  # a lone surrogate
    VALID_JSON.replace('"title": "t"', '"title": "\\ud800"').encode(),
    VALID_JSON.replace('"title": "t"', '"title": "a\\u0001b"').encode(),  # a control character, escaped
    VALID_JSON.replace('"title": "t"', '"title": "A & <B> \\"C\\" \'D\'"').encode(),
    VALID_JSON.replace('"caption": "c"', '"caption": null').encode(),
    VALID_JSON.replace("/blog/a", "/blog/a\xff").encode("latin-1"),  # not UTF-8
    VALID_JSON.replace('"version": 1', '"version": 1.0').encode(),
    VALID_JSON.replace('"version": 1', '"version": 1e0').encode(),
    VALID_JSON.replace('"version": 1', '"version": -0').encode(),
    VALID_JSON.replace('"version": 1', '"version": 01').encode(),
    VALID_JSON.replace('"version": 1', '"version": 1000000000000000000').encode(),
    VALID_JSON.replace('"version": 1', '"version": 1000000000000000001').encode(),
    VALID_JSON.replace('"version": 1', '"version": 99999999999999999999999').encode(),
    VALID_JSON.replace('"version": 1', '"version": null').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": 1').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": 0').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": -0.0').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": 5e-1').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": 0.125').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": 0.995').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": 1e400').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": NaN').encode(),
    VALID_JSON.replace('"priority": 0.5', '"priority": true').encode(),
    VALID_JSON.replace('"lastmod": "2026-11-19"', '"lastmod": null').encode(),
    VALID_JSON.replace('"changefreq": "daily"', '"changefreq": null').encode(),
    VALID_JSON.replace('"section": "blog"', '"section": null').encode(),
    VALID_JSON.replace('"section": "blog"', '"section": "' + "ü" * 100 + '"').encode(),
    VALID_JSON.replace('"section": "blog"', '"section": "' + "ü" * 101 + '"').encode(),
    VALID_JSON.replace('"section": "blog"', '"section": "\\ud83d\\ude00"').encode(),
    VALID_JSON.replace('"images": [', '"images": null, "x": [').encode(),
    VALID_JSON.replace('"images": [', '"videos": [], "images": [').encode(),
    VALID_JSON.replace('"images": [', '"alternates": [], "images": [').encode(),
    VALID_JSON.replace('"images": [', '"news": null, "images": [').encode(),
    VALID_JSON.replace('"images": [', '"images": [{"loc": "https://cdn.example.com/1.jpg"}], "images2": [').encode(),
    VALID_JSON[:-1].encode() + b', "images": []}',  # a later key replaces the images
    VALID_JSON.encode() + b" x",
    VALID_JSON.encode() + b"\x00",
    b"[" + VALID_JSON.encode() + b"]",
    b'{"detail-type": "x", "detail": ' + VALID_JSON.encode() + b"}",  # an EventBridge envelope
    b"{}",
    b"null",
    b'"text"',
    b"[" * 200 + b"]" * 200,
    b'{"images": ' + b"[" * 200 + b"]" * 200 + b"}",
]


@pytest.mark.parametrize("raw", TRICKY_LINES, ids=range(len(TRICKY_LINES)))
@pytest.mark.parametrize("site", SITES, ids=["default", "named", "every"])
def test_tricky_json_takes_the_fast_path_only_as_the_model_path_reads_it(raw: bytes, site: Site) -> None:
    # Given a line whose JSON the two readers could read differently
    # When the fast path reads it
    fast = LineParser(site, HORIZON).record(raw)
    # Then it steps aside, or makes exactly what the model path makes (so a rejection keeps the model's words)
    if fast is not None:
        assert fast == model_record(raw, site)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(st.characters(codec="utf-8"), max_size=12),
    field=st.sampled_from(["url", "section", "title", "caption", "loc"]),
    ascii_only=st.booleans(),
)
def test_any_text_in_any_field_takes_the_fast_path_only_as_the_model_path_reads_it(
    text: str, field: str, ascii_only: bool
) -> None:
    # Given a valid event with any text (controls, surrogates, entities, non-ASCII) put into one of its text fields
    body: dict[str, Any] = json.loads(VALID_JSON)
    if field == "url":
        body["url"] = f"{BASE}/blog/{text}"
    elif field == "section":
        body["section"] = text
    elif field == "loc":
        body["images"][0]["loc"] = f"https://cdn.example.com/{text}"
    else:
        body["images"][0][field] = text
    raw = json.dumps(body, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    # When the fast path reads it, then it steps aside or agrees with the model path
    fast = LineParser(SITE, HORIZON).record(raw)
    if fast is not None:
        assert fast == model_record(raw, SITE)


def test_parse_numbers_every_line_and_leaves_the_others_with_their_numbers() -> None:
    # Given lines split as the build splits them (\n, \r\n and a lone \r all end a line), blank ones included
    good = json.dumps(VALID).encode()
    data = b"\r\n".join([good, b"", b"not json", good]) + b"\r" + good + b"\n\n" + json.dumps(VALID | {"x": 1}).encode()
    spill = SpillGroups()
    # When the fast path parses the chunk
    lines, rest = LineParser(SITE, HORIZON).parse(data, spill)
    # Then every line is counted, the blank and undecided ones are left with their numbers
    assert lines == 7
    assert rest == [(2, b""), (3, b"not json"), (6, b""), (7, json.dumps(VALID | {"x": 1}).encode())]
    # and each decided line's state is spilled once, as record() makes it
    (head, blob) = (
        b"".join(bytes(h) for h in spill.groups["blog"][0]),
        b"".join(bytes(b) for b in spill.groups["blog"][1]),
    )
    one = LineParser(SITE, HORIZON).record(good)
    assert one is not None
    assert head == one[2] * 3
    assert blob == one[3] * 3


def one_by_one(data: bytes) -> list[Any]:
    """Each line read on its own, as the fast path read lines before it read a chunk at once."""
    decoded: list[Any] = []
    for raw in data.splitlines():
        try:
            decoded.append(None if len(raw) > MAX_BODY_BYTES else DECODE(raw))
        except ValueError:
            decoded.append(None)
    return decoded


TWO = json.dumps(VALID | {"url": f"{BASE}/blog/b"})
# Lines that must not be read as the lines around them: a value cut in two (in a string, between members, in the
# images), two values on one line (with the separator the chunk reader puts between lines among them), a bare null.
SPLIT_LINES = [
    VALID_JSON[:40].encode(),
    VALID_JSON[40:].encode(),
    VALID_JSON[: VALID_JSON.index(', "occurred_at"')].encode(),
    VALID_JSON[VALID_JSON.index(', "occurred_at"') + 1 :].encode(),
    VALID_JSON[: VALID_JSON.index('"version"')].encode(),
    VALID_JSON[VALID_JSON.index('"version"') :].encode(),
    VALID_JSON[: VALID_JSON.index('"title"')].encode(),
    VALID_JSON[VALID_JSON.index('"title"') :].encode(),
    f"{VALID_JSON},null,{TWO}".encode(),
    f"{VALID_JSON},null,".encode(),
    f"null,{TWO}".encode(),
    f"{VALID_JSON} {TWO}".encode(),
    f"{VALID_JSON},{TWO}".encode(),
    f"{VALID_JSON}],[{TWO}".encode(),
    b"null",
    b",null,",
    b"",
    b"  ",
    b"[",
    b"]",
]


@settings(max_examples=500, deadline=None)
@given(
    lines=st.lists(st.sampled_from([VALID_JSON.encode(), TWO.encode(), *TRICKY_LINES, *SPLIT_LINES]), max_size=12),
    ends=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    last=st.booleans(),
)
def test_a_chunk_read_at_once_is_read_as_its_lines_one_by_one(lines: list[bytes], ends: bytes, last: bool) -> None:
    # Given a chunk of any lines, whole or cut, with any line ends, the last line ended or not
    data = ends.join(lines) + (ends if last else b"")
    # When the fast path reads the chunk
    decoded, _ = decode_chunk(data)
    # Then it reads each line as that line alone reads
    assert decoded == one_by_one(data)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from([VALID_JSON.encode(), TWO.encode(), *TRICKY_LINES, *SPLIT_LINES]), max_size=12),
    ends=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    last=st.booleans(),
    block=st.integers(min_value=1, max_value=400),
)
def test_a_chunk_parsed_in_blocks_is_parsed_as_one(lines: list[bytes], ends: bytes, last: bool, block: int) -> None:
    # Given a chunk of any lines, whole or cut, with any line ends, and the parser's one block
    data = ends.join(lines) + (ends if last else b"")
    whole = SpillGroups()
    expected = LineParser(SITE, HORIZON).parse(data, whole)
    # When it is parsed in blocks of about ``block`` bytes (cut after a \n)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastline, "_DECODE_BYTES", block)
        blocks = SpillGroups()
        found = LineParser(SITE, HORIZON).parse(data, blocks)
    # Then it counts the same lines, leaves the same ones with the same numbers, and spills the same states
    assert found == expected
    assert blocks.groups == whole.groups


@pytest.mark.parametrize("size", [MAX_BODY_BYTES - 1000, MAX_BODY_BYTES, MAX_BODY_BYTES + 1, 3 * MAX_BODY_BYTES])
@pytest.mark.parametrize("before", [0, 1, 5000])
def test_a_line_over_the_queues_limit_is_left_to_the_model_path(size: int, before: int) -> None:
    # Given a line of the common shape of about ``size`` bytes among short ones
    body = VALID | {"images": [{"loc": "https://cdn.example.com/1.jpg", "title": "x" * 10}]}
    pad = size - len(json.dumps(body))
    long = json.dumps(VALID | {"images": [{"loc": "https://cdn.example.com/1.jpg", "title": "x" * (10 + pad)}]})
    assert len(long) == size
    data = "\n".join([TWO] * before + [long, TWO]).encode()
    # When the fast path reads the chunk
    decoded, _ = decode_chunk(data)
    # Then the long line is decoded only when it is within the limit, as one by one
    assert decoded == one_by_one(data)
    assert (decoded[before] is None) is (size > MAX_BODY_BYTES)


def test_a_chunk_of_the_common_shape_is_read_at_once() -> None:
    # Given a chunk whose every line is of the common shape, with \r\n line ends
    data = b"\r\n".join([VALID_JSON.encode(), TWO.encode()] * 3) + b"\r\n"
    # When the fast path reads it
    decoded, lines = decode_chunk(data)
    # Then it reads it in one call (no lines split) as one by one
    assert lines is None
    assert decoded == one_by_one(data)


@pytest.mark.parametrize("cut", [0, 2, 4, 6], ids=["in a string", "between members", "in a number", "in the images"])
@pytest.mark.parametrize("ends", [b"\n", b"\r\n"])
def test_a_value_cut_in_two_is_not_joined_again(cut: int, ends: bytes) -> None:
    # Given a value cut over two lines, and a line holding two values with the chunk reader's separator between them
    # (so that, joined again, the chunk would count as many values as lines)
    data = ends.join([SPLIT_LINES[cut], SPLIT_LINES[cut + 1], SPLIT_LINES[8]])
    # When the fast path reads the chunk
    decoded, _ = decode_chunk(data)
    # Then no line is of the common shape, as one by one
    assert decoded == one_by_one(data) == [None, None, None]


def _canonical_or_none(url: str, site: Site) -> tuple[str, str] | None:
    warnings: list[str] = []
    try:
        canonical = canonical_page_url(url, site, warnings)
    except UrlError:
        return None
    return None if warnings else (canonical, site.section_of(canonical))


@settings(max_examples=1000, deadline=None)
@given(
    path=st.lists(
        st.one_of(
            st.sampled_from("aZ09-._~!$&'()*+,=:@/;%?#. \t\x7f"),
            st.characters(min_codepoint=0x80, codec="utf-8"),
            st.sampled_from(["/.", "/..", "%C3%BC", "%7e", "\u00a0", "\u0085", "\ufeff", "\ufffe", "\U0001f600"]),
        ),
        max_size=20,
    ).map("".join),
    long=st.booleans(),
    site=st.sampled_from(SITES),
)
def test_a_url_above_ascii_is_canonicalised_as_the_contract_does(path: str, long: bool, site: Site) -> None:
    # Given a URL on the site whose path holds characters above ASCII among others, some of them very long
    url = f"{BASE}/{'x' * 2000 if long else ''}{path}"
    # When the fast path canonicalises it, then it agrees with the contract's canonical form (or its refusal)
    assert UrlCanonicaliser(site).canonical(url) == _canonical_or_none(url, site)
