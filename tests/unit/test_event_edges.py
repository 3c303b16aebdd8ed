"""Edges of the event contract the mutation run found unstated: the last moment of the date window, the
window named in the rejection, every change frequency, reasons without pydantic's "Value error" prefix, a
relative URL named as such, and file names of ranges deeper than 32 levels."""

from __future__ import annotations

import gzip

import pytest

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.reduce import state_from_event
from sitemap_updater.core.render import render_urlset
from sitemap_updater.core.sharding import KeyRange
from tests.conftest import event, parse


@pytest.mark.parametrize("lastmod", ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999999+00:00", "9999-12-31"])
def test_the_last_moment_of_the_window_is_accepted(lastmod: str) -> None:
    # on a state of unknown time (occurred_at the epoch), as adoption keeps a source sitemap's future lastmod
    parsed = parse(event(lastmod=lastmod, occurred_at="1970-01-01T00:00:00Z"))
    assert parsed.lastmod is not None and parsed.lastmod.year == 9999


def test_a_date_outside_the_window_is_rejected_naming_the_window() -> None:
    with pytest.raises(EventRejected) as caught:
        parse(event(lastmod="1969-12-31T23:59:59Z"))
    assert str(caught.value) == (
        "lastmod: '1969-12-31T23:59:59Z' is out of range: dates must be from 1970-01-01T00:00:00Z to "
        "9999-12-31T23:59:59Z (UTC)"
    )


@pytest.mark.parametrize("changefreq", ["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"])
def test_every_change_frequency_of_the_protocol_is_accepted_and_shown(changefreq: str) -> None:
    entry = state_from_event(parse(event(changefreq=changefreq))).entry
    assert entry is not None
    assert f"<changefreq>{changefreq}</changefreq>".encode() in gzip.decompress(render_urlset([entry], 0).data)


def test_a_reason_from_a_value_check_has_no_value_error_prefix() -> None:
    with pytest.raises(EventRejected) as caught:
        parse(event(lastmod="2026-13-01"))
    assert str(caught.value) == "lastmod: '2026-13-01' is not a W3C date (YYYY-MM-DD) or date-time with offset"


def test_a_relative_url_is_named_as_such() -> None:
    with pytest.raises(EventRejected) as caught:
        parse(event(url="/blog/a"))
    assert str(caught.value) == "url: must be an absolute http or https URL, not a relative URL"


def test_a_range_deeper_than_32_levels_is_named_by_its_whole_start() -> None:
    assert KeyRange(0x01234567_00000000, 0x01234568_00000000, 32).file_name("blog") == "sitemap-blog-01234567.xml.gz"
    deep = KeyRange(0x01234567_80000000, 0x01234568_00000000, 33)
    assert deep.file_name("blog") == "sitemap-blog-0123456780000000.xml.gz"
