"""Each CMS's payload variants as its documentation words them, and the mapping's answers for them (issue 13's
survivors of core/webhooks_payloads.py and core/webhooks_mapping.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sitemap_updater.core.webhooks_mapping import Unmapped, WebhookMapping, map_document
from sitemap_updater.core.webhooks_payloads import Document, Ignored, PayloadError, Variant, read_document

BASE = "https://www.example.com"
WHEN = "2026-11-23T10:00:00Z"


def _contentful(verb: str, **sys: Any) -> Document | Ignored:
    headers = {"x-contentful-topic": f"ContentManagement.Entry.{verb}"}
    body = {
        "sys": {"id": "e1", "contentType": {"sys": {"id": "post"}}, **sys},
        "fields": {"slug": {"en-US": "hello"}},
    }
    return read_document("contentful", headers, body)


def _document(found: Document | Ignored) -> Document:
    assert isinstance(found, Document), found
    return found


@pytest.mark.parametrize(("verb", "action"), [("publish", "upsert"), ("unpublish", "delete"), ("delete", "delete")])
def test_contentful_verbs_publish_and_withdraw(verb: str, action: str) -> None:
    assert _document(_contentful(verb)).action == action


def test_contentful_without_a_content_type_names_the_sys_path() -> None:
    headers = {"x-contentful-topic": "ContentManagement.Entry.publish"}
    with pytest.raises(PayloadError, match=r"^sys\.contentType: missing or not an object$"):
        read_document("contentful", headers, {"sys": {"id": "e1"}})
    with pytest.raises(PayloadError, match=r"^sys: missing or not an object$"):
        read_document("contentful", headers, {"fields": {}})


def test_contentful_first_publication_is_the_publication_date() -> None:
    # firstPublishedAt is when the article first appeared; publishedAt moves with every republish
    both = _contentful("publish", firstPublishedAt="2026-01-01T00:00:00Z", publishedAt="2026-11-01T00:00:00Z")
    assert _document(both).published_at == "2026-01-01T00:00:00Z"
    assert _document(_contentful("publish", publishedAt="2026-11-01T00:00:00Z")).published_at == "2026-11-01T00:00:00Z"


@pytest.mark.parametrize(("field", "value"), [("language", "de"), ("__i18n_lang", "fr")])
def test_sanity_reads_the_locale_from_either_plugin_field(field: str, value: str) -> None:
    found = _document(read_document("sanity", {}, {"_id": "p1", "_type": "post", "slug": "x", field: value}))
    assert [v.locale for v in found.variants] == [value]


def test_sanity_prefers_language_over_the_i18n_plugin_field() -> None:
    data = {"_id": "p1", "_type": "post", "language": "de", "__i18n_lang": "fr"}
    assert _document(read_document("sanity", {}, data)).variants[0].locale == "de"


def test_a_storyblok_action_that_changes_nothing_public_is_ignored() -> None:
    found = read_document("storyblok", {}, {"action": "branch_deployed", "story_id": 1})
    assert isinstance(found, Ignored)
    assert found.reason == "branch_deployed: not a change to the published site"


def _strapi(event: str, **entry: Any) -> Document | Ignored:
    return read_document("strapi", {}, {"event": event, "model": "post", "entry": {"id": 7, "slug": "x", **entry}})


@pytest.mark.parametrize("event", ["entry.unpublish", "entry.delete"])
def test_strapi_withdrawals_are_deletes(event: str) -> None:
    assert _document(_strapi(event)).action == "delete"


@pytest.mark.parametrize("event", ["entry.create", "entry.update"])
def test_strapi_create_or_update_with_published_at_is_an_upsert_and_without_it_a_draft(event: str) -> None:
    assert _document(_strapi(event, publishedAt="2026-11-23T09:00:00Z")).action == "upsert"
    draft = _strapi(event)
    assert isinstance(draft, Ignored) and draft.reason == f"{event}: a draft is not public"


def test_strapi_reads_the_entry_locale() -> None:
    found = _document(_strapi("entry.publish", locale="fr"))
    assert [v.locale for v in found.variants] == ["fr"]


def test_strapi_without_an_entry_object_is_a_payload_error_naming_it() -> None:
    with pytest.raises(PayloadError, match=r"^entry: missing or not an object$"):
        read_document("strapi", {}, {"event": "entry.publish", "model": "post"})


def test_generic_without_fields_is_a_payload_error_naming_them() -> None:
    with pytest.raises(PayloadError, match=r"^fields: missing or not an object$"):
        read_document("generic", {}, {"action": "publish", "type": "post", "id": "1"})


def _mapping(**kind: Any) -> WebhookMapping:
    return WebhookMapping.model_validate({"types": {"post": {"url": "/blog/{slug}", **kind}}})


def _post(*variants: Variant, published_at: str | None = "2026-11-23T08:00:00Z") -> Document:
    return Document("upsert", "post", "id-1", variants, "2026-11-23T09:00:00Z", published_at)


def test_a_template_with_text_after_its_last_field_keeps_that_text() -> None:
    mapped = map_document(_post(Variant(None, {"slug": "hello"})), _mapping(url="/blog/{slug}.html"), BASE, WHEN)
    assert [e["url"] for e in mapped.events] == [f"{BASE}/blog/hello.html"]
    mapped = map_document(_post(Variant(None, {})), _mapping(url="/about"), BASE, WHEN)
    assert [e["url"] for e in mapped.events] == [f"{BASE}/about"]


def test_the_mappings_warnings_are_a_tuple_naming_each_asset_left_out() -> None:
    document = _post(
        Variant(None, {"slug": "a", "hero": [{"url": "/rel.jpg"}, {"url": "https://cdn.example.com/a.jpg"}]})
    )
    mapped = map_document(document, _mapping(images=["hero"]), BASE, WHEN)
    assert mapped.warnings == ("hero: an asset without an absolute URL is left out (a link, or no media_base)",)
    assert mapped.events[0]["images"] == [{"loc": "https://cdn.example.com/a.jpg"}]


def test_news_without_a_language_is_refused_as_unmapped() -> None:
    news = {"publication_name": "Example News", "title": "title"}
    document = _post(Variant(None, {"slug": "a", "title": "Breaking"}))
    with pytest.raises(Unmapped, match=r"^news: no language; set news.language or the locale's hreflang"):
        map_document(document, _mapping(news=news), BASE, WHEN)
    with_language = map_document(document, _mapping(news={**news, "language": "en"}), BASE, WHEN)
    assert with_language.events[0]["news"]["publication_language"] == "en"


def test_generic_reads_its_locale() -> None:
    data = {"action": "publish", "type": "post", "id": "1", "locale": "de", "fields": {"slug": "x"}}
    assert [v.locale for v in _document(read_document("generic", {}, data)).variants] == ["de"]


def test_the_mapped_events_are_a_tuple_of_contract_bodies() -> None:
    mapped = map_document(_post(Variant(None, {"slug": "hello"})), _mapping(), BASE, WHEN)
    assert mapped.events == (
        {
            "type": "upsert",
            "url": f"{BASE}/blog/hello",
            "occurred_at": "2026-11-23T09:00:00Z",
            "lastmod": "2026-11-23T09:00:00Z",
        },
    )
    assert mapped.warnings == ()
