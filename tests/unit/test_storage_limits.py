"""Every event the contract accepts can be stored and published (issue 15, item 1): DynamoDB's key and item
limits, the longest URLs, entries at the size budget, the ends of the date window. Values from AWS's and the
contract's numbers, not the code's constants."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.adapters.manifest import entry_sort_key, page_pk, sent_pk, url_id
from sitemap_updater.core.entry import entry_from_event
from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.urls import Site
from tests.conftest import BASE, HORIZON, event, parse
from tests.sim.dynamo import check_item, check_key
from tests.sim.fixed import run_fixed

SITE = Site.parse(BASE, sections=None)
PARTITION_KEY, SORT_KEY, ITEM = 2048, 1024, 400 * 1024  # DynamoDB's documented limits, in bytes
ENTRY_BUDGET = 400_000  # what the README promises one page's rendered entry may take


def _long(tail: str, length: int = 2047) -> str:
    return (f"{BASE}/blog/" + "segment-" * 300)[: length - len(tail)] + tail


def _rejected(raw: str | bytes) -> EventRejected:
    with pytest.raises(EventRejected) as caught:
        parse_event(raw, SITE, HORIZON)
    return caught.value


def test_keys_of_the_longest_urls_fit_dynamodb_and_stay_one_per_url() -> None:
    # Given URLs of 2,047 characters (the contract's longest) that differ only in their last character
    urls = [_long(tail) for tail in "abc"]
    for url in urls:
        # Then every key naming them is within DynamoDB's limits (a page state's pk keeps under 1,024 bytes too,
        # as it did while it was also the sort key of a secondary index: the keys of stored pages never change)
        assert len(page_pk(url).encode()) <= SORT_KEY
        assert len(sent_pk(url).encode()) <= PARTITION_KEY
        assert len(entry_sort_key(2**64 - 1, url).encode()) <= SORT_KEY
    # And no two URLs share a key, nor does a long URL's key look like a short URL's
    assert len({url_id(url) for url in urls}) == 3
    short = f"{BASE}/blog/a"
    assert url_id(short) == short and all(" " in url_id(url) for url in urls)


def test_the_simulated_dynamodb_refuses_what_aws_refuses() -> None:
    # So a key format that regresses fails in the tests, not on AWS
    url = _long("a")
    with pytest.raises(ClientError, match="2048 bytes"):
        check_key({"pk": {"S": f"page#{url}"}, "sk": {"S": "state"}}, "PutItem")
    with pytest.raises(ClientError, match="1024 bytes"):
        check_key({"pk": {"S": "sec#blog"}, "sk": {"S": f"{0:016x}#{url}"}}, "PutItem")
    with pytest.raises(ClientError, match="Item size"):
        check_item({"pk": {"S": "sec#blog"}, "sk": {"S": "k"}, "record": {"B": b"x" * ITEM}}, "PutItem")


def _caption(size: int, url: str = f"{BASE}/blog/a") -> dict[str, Any]:
    """An upsert whose entry renders to exactly ``size`` bytes: a caption of apostrophes (six bytes each)."""
    image = {"loc": "https://cdn.example.com/a.jpg", "caption": ""}
    base = entry_from_event(parse(event(url, images=[image]))).size
    quotes, extra = divmod(size - base, 6)
    return event(url, images=[{**image, "caption": "'" * quotes + "a" * extra}])


def test_an_entry_at_the_budget_is_accepted_and_one_byte_over_is_rejected_naming_the_caption() -> None:
    at, over = _caption(ENTRY_BUDGET), _caption(ENTRY_BUDGET + 1)
    assert entry_from_event(parse(at)).size == ENTRY_BUDGET
    problem = _rejected(json.dumps(over)).problems[0]
    assert problem.field == "images[0].caption"
    assert "400,000" in problem.reason and "400,001" in problem.reason
    # The build's fast path declines it, so the model path words the same rejection
    assert LineParser(SITE, HORIZON).record(json.dumps(over).encode()) is None
    assert LineParser(SITE, HORIZON).record(json.dumps(at).encode()) is not None


def test_a_100_kb_caption_of_apostrophes_is_rejected_up_front() -> None:
    # The case of the issue: 100 KB of text that escapes to 600 KB, over DynamoDB's item limit
    body = json.dumps(event(images=[{"loc": "https://cdn.example.com/a.jpg", "caption": "'" * 100_000}]))
    problem = _rejected(body).problems[0]
    assert (problem.field, "600,") == ("images[0].caption", problem.reason.split("would be ")[1][:4])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("occurred_at", "9999-12-31T23:00:00-05:00"),  # past 9999 in UTC
        ("occurred_at", "0001-01-01T00:00:00+01:00"),  # before year 1 in UTC
        ("occurred_at", "1970-01-01T00:30:00+01:00"),  # 1969 in UTC
        ("lastmod", "9999-12-31T23:00:00-05:00"),
        ("lastmod", "0001-01-01T00:00:00+01:00"),
        ("lastmod", "1969-12-31"),
    ],
)
def test_dates_outside_the_window_are_rejected_by_both_paths(field: str, value: str) -> None:
    body = json.dumps(event(**{field: value}))
    problem = _rejected(body).problems[0]
    assert problem.field == field and "1970-01-01T00:00:00Z" in problem.reason
    assert LineParser(SITE, HORIZON).record(body.encode()) is None


@pytest.mark.parametrize("field", ["version", "priority", "videos[0].view_count", "detail.version"])
def test_a_number_too_long_to_read_is_rejected_naming_its_field(field: str) -> None:
    digits = "9" * 5000
    video = '{"thumbnail_loc": "https://cdn.example.com/t.jpg", "title": "t", "description": "d", '
    video += f'"content_loc": "https://cdn.example.com/v.mp4", "view_count": {digits}}}'
    head = '{"type": "upsert", "url": "https://www.example.com/blog/a", "occurred_at": "2026-11-20T10:00:00Z"'
    raw = {
        "version": f'{head}, "version": {digits}}}',
        "priority": f'{head}, "priority": {digits}}}',
        "videos[0].view_count": f'{head}, "videos": [{video}]}}',
        "detail.version": f'{{"detail-type": "x", "source": "cms", "detail": {head}, "version": {digits}}}}}',
    }[field]
    problem = _rejected(raw).problems[0]
    assert problem.field == field and "5,000 digits" in problem.reason
    assert LineParser(SITE, HORIZON).record(raw.encode()) is None


def test_the_longest_urls_and_the_largest_entries_are_published_by_the_pipeline() -> None:
    # Given the longest URLs, an entry at the budget and the ends of the date window, through the real
    # handlers on the simulated AWS (which refuses what DynamoDB refuses)
    urls = [_long(tail) for tail in "ab"]
    bodies = [event(url, version=1) for url in urls]
    bodies.append({**_caption(ENTRY_BUDGET, _long("c")), "version": 1})
    # (a state of unknown time keeps a lastmod at the far end, as adoption keeps a source's future lastmod)
    bodies.append(event(f"{BASE}/blog/edge", occurred_at="1970-01-01T00:00:00Z", lastmod="9999-12-31T23:59:59Z"))
    bodies.append(event(urls[0], type="delete", version=2))  # and a delete of one of them
    sim = run_fixed(bodies)
    # Then nothing is dead-lettered and every page is published as the reference models say
    assert sim.result.violations == [] and sim.dead_letter_reasons() == {}
    text = b"".join(gzip.decompress(data) for name, data in sim.published().items() if name.endswith(".gz"))
    assert urls[1].encode() in text and _long("c").encode() in text
