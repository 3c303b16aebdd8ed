"""Event contract v1: aliases, envelopes, ordering, and rejections that name the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.urls import Site
from tests.conftest import BASE, HORIZON, event, parse

SITE = Site.parse(BASE, sections=None)
_VIDEO = {"thumbnail_loc": f"{BASE}/t.jpg", "title": "t", "description": "d", "content_loc": f"{BASE}/v.mp4"}
_NEWS = {"publication_name": "P", "publication_language": "en", "publication_date": "2026-11-20", "title": "T"}


def rejection(body: dict[str, Any] | str) -> str:
    raw = body if isinstance(body, str) else json.dumps(body)
    with pytest.raises(EventRejected) as caught:
        parse_event(raw, SITE, HORIZON)
    return str(caught.value)


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        ("upsert", "upsert"),
        ("publish", "upsert"),
        ("update", "upsert"),
        ("Publish", "upsert"),
        ("delete", "delete"),
        ("unpublish", "delete"),
        ("archive", "delete"),
    ],
)
def test_type_aliases_map_to_upsert_and_delete(given: str, kind: str) -> None:
    assert parse(event(type=given)).type == kind


def test_minimal_event_is_accepted_and_canonicalised() -> None:
    parsed = parse(event(url="https://WWW.example.com/blog/über"))
    assert parsed.url == f"{BASE}/blog/%C3%BCber"
    assert parsed.version is None and parsed.lastmod is None


def test_eventbridge_envelope_is_unwrapped() -> None:
    body = {"version": "0", "detail-type": "PagePublished", "source": "cms", "detail": event(version=3)}
    assert parse(body).version == 3


def test_sns_notification_is_unwrapped() -> None:
    body = {"Type": "Notification", "MessageId": "m-1", "Message": json.dumps(event(version=4))}
    assert parse(body).version == 4


def test_bad_detail_in_an_envelope_names_the_nested_field() -> None:
    body = {"detail-type": "PagePublished", "source": "cms", "detail": event(priority=2)}
    assert rejection(body).startswith("detail.priority:")


def test_unknown_fields_are_ignored_and_reported() -> None:
    body = event(author="ann", images=[{"loc": "https://cdn.example.com/a.jpg", "alt": "x"}])
    parsed = parse_event(json.dumps(body), SITE, HORIZON)
    assert parsed.unknown_fields == ("author", "images[0].alt")
    assert len(parsed.event.images) == 1


def test_session_id_removal_is_reported_as_a_warning() -> None:
    parsed = parse_event(json.dumps(event(url=f"{BASE}/a?jsessionid=1")), SITE, HORIZON)
    assert parsed.event.url == f"{BASE}/a"
    assert parsed.warnings and "jsessionid" in parsed.warnings[0]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("{not json", "(body)"),
        ("[1, 2]", "(body)"),
        ('"just a string"', "(body)"),
        ("[" * 100_000 + "]" * 100_000, "(body)"),
        (event(type="move"), "type"),
        (event(url=None), "url"),
        (event(url=42), "url"),
        (event(url="https://evil.example.net/a"), "url"),
        (event(occurred_at="2026-11-20T10:00:00"), "occurred_at"),
        (event(occurred_at="yesterday"), "occurred_at"),
        ({"type": "upsert", "url": f"{BASE}/a"}, "occurred_at"),
        (event(version=-1), "version"),
        (event(version="seven"), "version"),
        (event(lastmod="2026-11-20T10:00:00"), "lastmod"),
        (event(lastmod="20/11/2026"), "lastmod"),
        (event(changefreq="sometimes"), "changefreq"),
        (event(priority=2), "priority"),
        (event(priority=-0.1), "priority"),
        (event(section=""), "section"),
        (event(images=[{"loc": f"{BASE}/i.jpg"}] * 1001), "images"),
        (event(images=[{"loc": "relative.jpg"}]), "images[0].loc"),
        (event(images=[{}]), "images[0].loc"),
        (event(videos=[{"thumbnail_loc": f"{BASE}/t.jpg", "title": "t", "description": "d"}]), "videos[0]"),
        (event(videos=[{**_VIDEO, "title": "x" * 101}]), "videos[0].title"),
        (event(videos=[{**_VIDEO, "duration": 0}]), "videos[0].duration"),
        (event(videos=[{**_VIDEO, "duration": 28801}]), "videos[0].duration"),
        (event(videos=[{**_VIDEO, "rating": 5.5}]), "videos[0].rating"),
        (event(news={**_NEWS, "publication_language": "english"}), "news.publication_language"),
        (event(news={k: v for k, v in _NEWS.items() if k != "publication_date"}), "news.publication_date"),
        (event(alternates=[{"hreflang": "en_US", "href": f"{BASE}/en"}]), "alternates[0].hreflang"),
        (event(alternates=[{"hreflang": "de", "href": "javascript:x"}]), "alternates[0].href"),
    ],
)
def test_malformed_events_are_rejected_naming_the_field(body: dict[str, Any] | str, field: str) -> None:
    message = rejection(body)
    assert message.startswith(f"{field}:") or f"; {field}:" in message, message


TEXT_FIELDS: list[tuple[str, Any]] = [
    ("section", lambda s: event(section=s)),
    ("images[0].caption", lambda s: event(images=[{"loc": f"{BASE}/i.jpg", "caption": s}])),
    ("images[0].title", lambda s: event(images=[{"loc": f"{BASE}/i.jpg", "title": s}])),
    ("videos[0].title", lambda s: event(videos=[{**_VIDEO, "title": s}])),
    ("videos[0].description", lambda s: event(videos=[{**_VIDEO, "description": s}])),
    ("videos[0].tags[0]", lambda s: event(videos=[{**_VIDEO, "tags": [s]}])),
    ("videos[0].uploader.name", lambda s: event(videos=[{**_VIDEO, "uploader": {"name": s}}])),
    ("news.publication_name", lambda s: event(news={**_NEWS, "publication_name": s})),
    ("news.title", lambda s: event(news={**_NEWS, "title": s})),
]


@pytest.mark.parametrize(("field", "make"), TEXT_FIELDS)
@pytest.mark.parametrize("bad", ["a\x00b", "a\x08b", "a\x1bb", "a\ufffeb", "a\ud800b"])
def test_characters_xml_forbids_are_rejected_in_every_text_field(field: str, make: Any, bad: str) -> None:
    # Given a text field holding a character XML 1.0 forbids (a lone surrogate included)
    body = json.dumps(make(bad))
    # When the event is validated / Then it is rejected there, naming the field, never at render time
    message = rejection(body)
    assert message.startswith(f"{field}:"), message
    assert "not allowed in XML" in message


def test_text_with_markup_characters_is_accepted_for_escaping() -> None:
    parsed = parse(event(news={**_NEWS, "title": "Tom & Jerry <3 'quotes'"}))
    assert parsed.news is not None and parsed.news.title == "Tom & Jerry <3 'quotes'"


def test_order_is_version_then_occurred_at() -> None:
    older = parse(event(version=1, occurred_at="2026-11-20T12:00:00Z"))
    newer = parse(event(version=2, occurred_at="2026-11-20T11:00:00Z"))
    later_same_version = parse(event(version=2, occurred_at="2026-11-20T11:00:01Z"))
    unversioned = parse(event(occurred_at="2026-11-21T11:00:00Z"))
    assert older.order < newer.order < later_same_version.order
    assert unversioned.order < older.order


def test_offsets_are_compared_in_utc() -> None:
    a = parse(event(occurred_at="2026-11-20T12:00:00+02:00"))
    b = parse(event(occurred_at="2026-11-20T10:00:00Z"))
    assert a.order == b.order


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"url": "https://x', "(body): not valid JSON: Unterminated string starting at character 8"),
        ('{"url": 1,}', "(body): not valid JSON: Expecting property name enclosed in double quotes at character 10"),
    ],
)
def test_a_body_that_is_not_json_says_where_it_breaks_in_one_sentence(raw: str, reason: str) -> None:
    with pytest.raises(EventRejected) as caught:
        parse_event(raw, Site.parse(BASE), HORIZON)
    assert str(caught.value) == reason
