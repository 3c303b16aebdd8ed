"""One webhook endpoint for several sites (core/webhooks_sites.py): the mapping's ``sites`` table chooses each
page's origin from the document (its locale, a value of the body, a field), with each vendor's real payload shape
(the samples of events/webhooks/); a document no site matches is refused with a 400 naming what was looked at."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from sitemap_updater.core.urls import Site
from sitemap_updater.core.webhooks_mapping import WebhookMapping
from sitemap_updater.core.webhooks_signatures import WebhookRequest
from sitemap_updater.local.webhooks import Sample
from sitemap_updater.service.webhooks import Reply, WebhookReceiver
from tests.unit.test_webhook_lifecycles import Documents, Queue, Secrets

SAMPLES = Path(__file__).resolve().parents[2] / "events" / "webhooks"
OWN = "https://www.example.com"
DE, FR = "https://www.example.de", "https://www.example.fr"
TYPES = {
    "blogPost": {"url": "/blog/{slug}"},
    "article": {"url": "/news/{slug}"},
    "story": {"url": "/{full_slug}"},
    "post": {"url": "/blog/{slug}"},
}


class Endpoint:
    def __init__(self, sites: dict[str, Any] | None, locales: dict[str, Any] | None = None) -> None:
        self.queue, self.documents = Queue(), Documents()
        data: dict[str, Any] = {"types": TYPES, "locales": locales or {}}
        if sites is not None:
            data["sites"] = sites
        mapping = WebhookMapping.model_validate(data)
        self.receiver = WebhookReceiver(Site.parse(OWN), mapping, Secrets(), self.queue, documents=self.documents)

    def post(self, name: str, **changes: Any) -> Reply:
        sample = Sample.load(SAMPLES / f"{name}.json")
        body = json.loads(sample.body)
        for path, value in changes.items():  # sys__space__sys__id="x" sets body["sys"]["space"]["sys"]["id"]
            *parents, last = path.split("__")
            target = body
            for part in parents:
                target = target[part]
            target[last] = value
        raw = json.dumps(body).encode()
        sample = Sample(sample.cms, sample.method, sample.path, sample.headers, raw)
        now_ms = int(time.time() * 1000)
        return self.receiver.receive(
            WebhookRequest("POST", sample.path, sample.signed("the-secret", now_ms), raw, now_ms)
        )


def test_contentful_locales_each_on_their_own_site_with_hreflang_across_them_and_an_unpublish_withdraws_both() -> None:
    # Given a mapping choosing the site by the entry's locale (a site per language, no path prefix)
    locales = {"en-US": {"hreflang": "en"}, "de-DE": {"hreflang": "de"}}
    endpoint = Endpoint({"by": "locale", "origins": {"en-US": OWN, "de-DE": DE}}, locales)
    # When Contentful publishes an entry in both locales
    reply = endpoint.post("contentful/publish")
    # Then each locale's page is on its site, and each names the other as its alternate
    assert reply.status == 202, reply.body
    assert reply.body["urls"] == [f"{OWN}/blog/webhooks-in", f"{DE}/blog/webhooks-rein"]
    alternates = [
        {"hreflang": "en", "href": f"{OWN}/blog/webhooks-in"},
        {"hreflang": "de", "href": f"{DE}/blog/webhooks-rein"},
    ]
    assert [e["alternates"] for e in endpoint.queue.sent] == [alternates, alternates]
    endpoint.queue.take()
    # And its unpublish (no fields, no slug) withdraws both sites' pages
    assert endpoint.post("contentful/unpublish").status == 202
    assert endpoint.queue.take() == [("delete", f"{OWN}/blog/webhooks-in"), ("delete", f"{DE}/blog/webhooks-rein")]


SPACE = {"by": "payload:sys.space.sys.id", "origins": {"examplespace01": DE, "examplespace02": FR}}


def test_contentful_spaces_each_a_site_and_the_same_entry_id_in_two_spaces_is_two_documents() -> None:
    endpoint = Endpoint(SPACE, {"en-US": {"hreflang": "en"}})
    fields = {"slug": {"en-US": "a"}}
    assert endpoint.post("contentful/publish", fields=fields).body["urls"] == [f"{DE}/blog/a"]
    # An entry of the same id in the other space (a copied space) is published on its own site...
    reply = endpoint.post("contentful/publish", fields={"slug": {"en-US": "b"}}, sys__space__sys__id="examplespace02")
    # ...and does not read as the first one's slug renamed: nothing of the first site is withdrawn
    assert reply.body["urls"] == [f"{FR}/blog/b"]
    assert endpoint.queue.take() == [("upsert", f"{DE}/blog/a"), ("upsert", f"{FR}/blog/b")]
    # Each space's unpublish withdraws its own page only
    assert endpoint.post("contentful/unpublish", sys__space__sys__id="examplespace02").status == 202
    assert endpoint.queue.take() == [("delete", f"{FR}/blog/b")]


@pytest.mark.parametrize(
    ("sample", "sites", "changes", "url"),
    [
        ("storyblok/publish", {"by": "payload:space_id", "origins": {"1000001": FR}}, {}, f"{FR}/pricing"),
        (
            "sanity/publish",
            {"by": "payload:dataset", "origins": {"prod-de": DE}},
            {"dataset": "prod-de"},
            f"{DE}/news/launch-notes",
        ),
        (
            "strapi/publish",
            {"by": "locale", "origins": {"fr": FR, "en": OWN}},
            {"entry__locale": "fr"},
            f"{FR}/news/strapi-goes-live",
        ),
        (
            "ghost/publish",
            {"by": "field:url", "key": "host", "origins": {"www.example.de": DE}},
            {"post__current__url": "https://WWW.example.de/blog/ghost-published/"},
            f"{DE}/blog/ghost-published",
        ),
        (
            "generic/publish",
            {"by": "field:site", "origins": {"fr": FR}},
            {"fields__site": "fr"},
            f"{FR}/blog/from-any-cms",
        ),
        ("generic/publish", {"by": "field:site", "origins": {"fr": FR}, "default": DE}, {}, f"{DE}/blog/from-any-cms"),
    ],
    ids=["storyblok space", "sanity dataset", "strapi locale", "ghost url host", "generic field", "default"],
)
def test_each_vendors_payload_chooses_its_site(
    sample: str, sites: dict[str, Any], changes: dict[str, Any], url: str
) -> None:
    endpoint = Endpoint(sites)
    reply = endpoint.post(sample, **changes)
    assert reply.status == 202, reply.body
    assert reply.body["urls"] == [url]


@pytest.mark.parametrize(
    ("sample", "sites", "changes", "error"),
    [
        (
            "storyblok/publish",
            {"by": "payload:space_id", "origins": {"1000002": FR}},
            {},
            "site: payload:space_id is '1000001', which is no site in the mapping's sites (it has: 1000002)",
        ),
        (
            "sanity/publish",
            {"by": "field:dataset", "origins": {"prod-de": DE}},
            {},
            "site: field:dataset is missing in the payload; the mapping's sites choose the site by it",
        ),
        (
            "ghost/publish",
            {"by": "field:url", "key": "host", "origins": {"www.example.de": DE}},
            {},
            "site: the host of field:url is 'www.example.com', which is no site in the mapping's sites "
            "(it has: www.example.de)",
        ),
    ],
    ids=["unknown space", "missing field", "unknown host"],
)
def test_a_document_no_site_matches_is_refused_naming_what_was_looked_at(
    sample: str, sites: dict[str, Any], changes: dict[str, Any], error: str
) -> None:
    endpoint = Endpoint(sites)
    reply = endpoint.post(sample, **changes)
    assert (reply.status, reply.body, endpoint.queue.sent) == (400, {"error": error}, [])
    assert reply.log["reason"] == error


def test_without_sites_the_stack_s_own_site_is_used_as_before() -> None:
    assert Endpoint(None).post("storyblok/publish").body["urls"] == [f"{OWN}/pricing"]


@pytest.mark.parametrize(
    ("sites", "where"),
    [
        ({"by": "space", "origins": {"a": DE}}, "sites.by"),
        ({"by": "locale", "origins": {"a": "https://www.example.de/de"}}, "sites.origins"),
        ({"by": "locale", "origins": {}}, "sites.origins"),
        ({"by": "locale", "origins": {"a": DE}, "default": "www.example.fr"}, "sites.default"),
        ({"by": "locale", "origins": {"a": DE}, "key": "path"}, "sites.key"),
    ],
    ids=["unknown selector", "origin with a path", "no origins", "default not a URL", "unknown key kind"],
)
def test_a_bad_sites_section_is_refused_when_the_file_is_read_naming_the_field(
    sites: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        WebhookMapping.model_validate({"types": TYPES, "sites": sites})
    assert {".".join(map(str, e["loc"][:2])) for e in caught.value.errors()} == {where}
    # and the same section with that field put right is accepted
    fixed = {**sites, "by": "locale", "origins": {"a": DE}, "key": "value"} | (
        {"default": FR} if "default" in sites else {}
    )
    assert WebhookMapping.model_validate({"types": TYPES, "sites": fixed}).sites is not None


def test_a_ghost_unpublish_without_its_url_withdraws_the_page_on_the_site_it_was_published_on() -> None:
    endpoint = Endpoint({"by": "field:url", "key": "host", "origins": {"www.example.de": DE}})
    endpoint.post("ghost/publish", post__current__url="https://www.example.de/blog/ghost-published/")
    endpoint.queue.take()
    reply = endpoint.post("ghost/unpublish")
    assert (reply.status, endpoint.queue.take()) == (202, [("delete", f"{DE}/blog/ghost-published")])
