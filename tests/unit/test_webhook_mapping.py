"""The mapping file and the events it makes: what a site owner sees in the sitemap, or the reason it is refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sitemap_updater.core.webhooks_mapping import Unmapped, WebhookMapping, map_document
from sitemap_updater.core.webhooks_payloads import Document, PayloadError, Variant, read_document

BASE = "https://www.example.com"
WHEN = "2026-11-23T10:00:00Z"


def mapping(**extra: Any) -> WebhookMapping:
    data: dict[str, Any] = {"types": {"post": {"url": "/blog/{slug}", "images": ["hero"]}}, **extra}
    return WebhookMapping.model_validate(data)


def doc(*variants: Variant, action: str = "upsert", **extra: Any) -> Document:
    return Document(action, "post", "id-1", variants, extra.pop("updated_at", "2026-11-23T09:00:00Z"), **extra)  # type: ignore[arg-type]


def urls(document: Document, m: WebhookMapping | None = None) -> list[str]:
    return [e["url"] for e in map_document(document, m or mapping(), BASE, WHEN).events]


@pytest.mark.parametrize("url", ["blog/{slug}", "/blog/{slug", "/blog/{a b}", "/blog/{0}"])
def test_a_bad_url_template_is_refused_when_the_file_is_read(url: str) -> None:
    with pytest.raises(ValidationError):
        WebhookMapping.model_validate({"types": {"post": {"url": url}}})


def test_an_unknown_key_in_the_file_is_refused_rather_than_ignored() -> None:
    with pytest.raises(ValidationError, match="urll"):
        WebhookMapping.model_validate({"types": {"post": {"urll": "/x"}}})


def test_slugs_are_percent_encoded_and_dot_segments_refused() -> None:
    assert urls(doc(Variant(None, {"slug": "grüße aus köln"}))) == [f"{BASE}/blog/gr%C3%BC%C3%9Fe%20aus%20k%C3%B6ln"]
    with pytest.raises(Unmapped, match=r"\.\. segment"):
        urls(doc(Variant(None, {"slug": "../admin"})))


def test_an_unknown_content_type_names_the_known_ones() -> None:
    other = Document("upsert", "recipe", "r1", (Variant(None, {"slug": "x"}),), None)
    with pytest.raises(Unmapped, match=r"'recipe' is not in the mapping \(it has: post\)"):
        urls(other)


def test_locales_become_prefixed_urls_with_alternates_and_unknown_locales_are_left_out() -> None:
    m = mapping(locales={"en-US": {"hreflang": "en"}, "de-DE": {"hreflang": "de-DE", "prefix": "/de"}})
    document = doc(Variant("en-US", {"slug": "hello"}), Variant("de-DE", {"slug": "hallo"}), Variant("fr", {}))
    events = map_document(document, m, BASE, WHEN).events
    assert [e["url"] for e in events] == [f"{BASE}/blog/hello", f"{BASE}/de/blog/hallo"]
    assert events[1]["alternates"] == [
        {"hreflang": "en", "href": f"{BASE}/blog/hello"},
        {"hreflang": "de-DE", "href": f"{BASE}/de/blog/hallo"},
    ]


def test_a_locale_outside_the_mapping_is_refused_when_it_is_the_only_one() -> None:
    m = mapping(locales={"en": {"hreflang": "en"}})
    with pytest.raises(Unmapped, match="locale fr is not in the mapping"):
        urls(doc(Variant("fr", {"slug": "bonjour"})), m)


def test_several_locales_without_a_locales_section_are_refused() -> None:
    with pytest.raises(Unmapped, match="add them to 'locales'"):
        urls(doc(Variant("en", {"slug": "a"}), Variant("de", {"slug": "b"})))


def test_images_absolute_relative_and_links() -> None:
    fields = {"slug": "a", "hero": [{"url": "/uploads/a.jpg"}, "//cdn.example.net/b.jpg", {"sys": {"type": "Link"}}]}
    result = map_document(doc(Variant(None, fields)), mapping(media_base="https://cms.example.com"), BASE, WHEN)
    assert result.events[0]["images"] == [
        {"loc": "https://cms.example.com/uploads/a.jpg"},
        {"loc": "https://cdn.example.net/b.jpg"},
    ]
    assert len(result.warnings) == 1  # the unresolved link, left out and said so


def test_a_delete_carries_only_what_identifies_and_orders_it() -> None:
    event = map_document(
        doc(Variant(None, {"slug": "a", "hero": "https://x.example/a.jpg"}), action="delete", revision=7),
        mapping(),
        BASE,
        WHEN,
    ).events[0]
    assert event == {"type": "delete", "url": f"{BASE}/blog/a", "occurred_at": "2026-11-23T09:00:00Z", "version": 7}


def test_without_a_cms_time_the_arrival_is_the_event_time_and_the_lastmod() -> None:
    event = map_document(doc(Variant(None, {"slug": "a"}), updated_at=None), mapping(), BASE, WHEN).events[0]
    assert event["occurred_at"] == event["lastmod"] == WHEN


def test_news_language_comes_from_the_locale() -> None:
    m = WebhookMapping.model_validate(
        {
            "locales": {"de-AT": {"hreflang": "de-AT"}},
            "types": {"post": {"url": "/n/{slug}", "news": {"publication_name": "Zeitung", "title": "title"}}},
        }
    )
    event = map_document(
        doc(Variant("de-AT", {"slug": "a", "title": "Titel"}), published_at=WHEN), m, BASE, WHEN
    ).events[0]
    assert event["news"] == {
        "publication_name": "Zeitung",
        "publication_language": "de",
        "publication_date": WHEN,
        "title": "Titel",
    }


def test_ghost_reads_publish_unpublish_and_delete_from_the_post_states() -> None:
    published = {"post": {"current": {"id": "1", "slug": "a", "status": "published"}, "previous": {"status": "draft"}}}
    unpublished = {
        "post": {"current": {"id": "1", "slug": "a", "status": "draft"}, "previous": {"status": "published"}}
    }
    deleted = {"page": {"current": {}, "previous": {"id": "2", "slug": "b", "status": "published"}}}
    draft = {"post": {"current": {"id": "3", "status": "draft"}, "previous": {"status": "draft"}}}
    actions = [getattr(read_document("ghost", {}, d), "action", None) for d in (published, unpublished, deleted, draft)]
    assert actions == ["upsert", "delete", "delete", None]


def test_a_payload_of_the_wrong_shape_is_a_payload_error() -> None:
    with pytest.raises(PayloadError, match="x-contentful-topic"):
        read_document("contentful", {}, {"sys": {}})
    with pytest.raises(PayloadError, match="must be a JSON object"):
        read_document("generic", {}, [1, 2])
