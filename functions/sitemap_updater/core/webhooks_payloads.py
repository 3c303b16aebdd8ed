"""Each CMS's webhook payload read into one neutral shape (``Document``), or ``Ignored`` with the reason. Pure.

Only what the payload itself says is used: the action, the content type, per-locale fields, the CMS's own
updated-at and revision counter. Nothing is fetched and nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from sitemap_updater.core.webhooks_signatures import Cms

Action = Literal["upsert", "delete"]


@dataclass(frozen=True)
class Variant:
    """One language version of a document: its locale (None when the CMS has none) and its fields."""

    locale: str | None
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class Document:
    """A published (``upsert``) or withdrawn (``delete``) piece of content, in any CMS."""

    action: Action
    content_type: str
    id: str
    variants: tuple[Variant, ...]
    updated_at: str | None  # the CMS's own time of the change: occurred_at and lastmod
    published_at: str | None = None
    revision: int | None = None  # the CMS's revision counter, when it has one that every action carries
    # A change to a published document only (Storyblok's moved, sent for drafts too): ignored unless the endpoint
    # remembers URLs of the document, so that a draft's new place is never published.
    needs_published: bool = False
    payload: Mapping[str, Any] = field(default_factory=dict)  # the body as sent: a site may be chosen by a value of it


@dataclass(frozen=True)
class Ignored:
    """A valid webhook with nothing for the sitemap (a draft saved, an asset uploaded)."""

    reason: str


class PayloadError(ValueError):
    """The payload does not have the shape its CMS documents: a 400 with this reason."""


def read_document(cms: Cms, headers: Mapping[str, str], data: Any) -> Document | Ignored:
    """Read a decoded JSON payload (``headers`` lower-cased) into a Document, or say why it is ignored."""
    if not isinstance(data, dict):
        raise PayloadError("the body must be a JSON object")
    found = _READERS[cms](headers, data)
    return replace(found, payload=data) if isinstance(found, Document) else found


def lookup(data: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path (``slug.current``, ``sys.space.sys.id``) of a document's fields or of the body as
    sent, or None where a part is missing or what holds it is no object."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _text(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise PayloadError(f"{where}{key}: missing or not a string")
    return value


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def _counter(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _object(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise PayloadError(f"{where}{key}: missing or not an object")
    return value


# Contentful: the topic header names the action; fields are {name: {locale: value}}; sys.revision counts publishes
# and a DeletedEntry (unpublish, delete, archive) carries it too, one higher than the publish it withdraws.
_CONTENTFUL_ACTIONS: dict[str, Action] = {"publish": "upsert", "unpublish": "delete", "delete": "delete"}
_CONTENTFUL_ACTIONS["archive"] = "delete"


def _contentful(headers: Mapping[str, str], data: dict[str, Any]) -> Document | Ignored:
    topic = headers.get("x-contentful-topic", "")
    parts = topic.split(".")
    if len(parts) != 3 or parts[0] != "ContentManagement":
        raise PayloadError(f"x-contentful-topic: {topic!r} is not ContentManagement.<Type>.<action>")
    kind, verb = parts[1], parts[2]
    if kind != "Entry":
        return Ignored(f"{topic}: only entries are pages")
    action = _CONTENTFUL_ACTIONS.get(verb)
    if action is None:
        return Ignored(f"{topic}: only publish, unpublish, archive and delete change the public site")
    sys = _object(data, "sys", "")
    content_type = _text(_object(_object(sys, "contentType", "sys."), "sys", "sys.contentType."), "id", "sys.")
    fields = data.get("fields") or {}
    if not isinstance(fields, dict):
        raise PayloadError("fields: not an object")
    locales: list[str] = []
    for name, by_locale in fields.items():
        if not isinstance(by_locale, dict):
            raise PayloadError(f"fields.{name}: expected {{locale: value}}")
        locales.extend(k for k in by_locale if k not in locales)
    variants = tuple(Variant(loc, {n: v[loc] for n, v in fields.items() if loc in v}) for loc in locales)
    when = _optional_text(sys, "deletedAt") if action == "delete" else None
    return Document(
        action=action,
        content_type=content_type,
        id=_text(sys, "id", "sys."),
        variants=variants,
        updated_at=when or _optional_text(sys, "updatedAt"),
        published_at=_optional_text(sys, "firstPublishedAt") or _optional_text(sys, "publishedAt"),
        revision=_counter(sys.get("revision")),
    )


# Sanity: the body is the webhook's projection (the whole document by default); drafts are not public.
def _sanity(headers: Mapping[str, str], data: dict[str, Any]) -> Document | Ignored:
    doc_id = _text(data, "_id", "")
    if doc_id.startswith(("drafts.", "versions.")):
        return Ignored(f"{doc_id}: a draft is not public")
    operation = data.get("operation") or headers.get("sanity-operation") or "update"
    if operation not in ("create", "update", "delete"):
        raise PayloadError(f"operation: {operation!r} is not create, update or delete")
    locale = _optional_text(data, "language") or _optional_text(data, "__i18n_lang")
    return Document(
        action="delete" if operation == "delete" else "upsert",
        content_type=_text(data, "_type", ""),
        id=doc_id,
        variants=(Variant(locale, data),),
        updated_at=_optional_text(data, "_updatedAt"),
        published_at=_optional_text(data, "publishedAt"),
    )


# Storyblok: {action, story_id, full_slug (published and moved only), space_id, text}; no time, no revision.
_STORYBLOK_ACTIONS: dict[str, Action] = {
    "published": "upsert",
    "moved": "upsert",
    "unpublished": "delete",
    "deleted": "delete",
}


def _storyblok(headers: Mapping[str, str], data: dict[str, Any]) -> Document | Ignored:
    action = data.get("action")
    if "story_id" not in data:
        return Ignored(f"{action}: not a story event")
    mapped = _STORYBLOK_ACTIONS.get(str(action))
    if mapped is None:
        return Ignored(f"{action}: not a change to the published site")
    return Document(
        action=mapped,
        content_type="story",
        id=_text(data, "story_id", ""),
        variants=(Variant(None, data),),
        updated_at=None,
        needs_published=action == "moved",  # Storyblok sends moved for drafts too
    )


# Ghost: {"post"|"page": {"current": {...}, "previous": {...}}}; the event is read from the states: current
# published is an upsert; current empty (deleted) or not published (unpublished) is a delete of previous.
def _ghost(headers: Mapping[str, str], data: dict[str, Any]) -> Document | Ignored:
    kinds = [k for k in ("post", "page") if isinstance(data.get(k), dict)]
    if len(kinds) != 1:
        raise PayloadError("expected one of post or page")
    kind = kinds[0]
    current = data[kind].get("current") or {}
    previous = data[kind].get("previous") or {}
    if not isinstance(current, dict) or not isinstance(previous, dict):
        raise PayloadError(f"{kind}.current and {kind}.previous must be objects")
    if current.get("status") == "published":
        action: Action = "upsert"
        fields = current
    elif previous.get("status") == "published" or (not current and previous):
        action, fields = "delete", {**previous, **current} if current else previous
    else:
        return Ignored(f"{kind} {current.get('status') or 'change'}: not published")
    return Document(
        action=action,
        content_type=kind,
        id=_text(fields, "id", f"{kind}."),
        variants=(Variant(None, fields),),
        updated_at=_optional_text(current, "updated_at")
        if action == "upsert"
        else _optional_text(fields, "updated_at"),
        published_at=_optional_text(fields, "published_at"),
    )


# Strapi: {event: entry.<verb>, createdAt, model, entry: {...}}. With Draft & Publish, a create or update
# without publishedAt is a draft.
def _strapi(headers: Mapping[str, str], data: dict[str, Any]) -> Document | Ignored:
    event = _text(data, "event", "")
    if not event.startswith("entry."):
        return Ignored(f"{event}: not a content entry")
    verb = event.removeprefix("entry.")
    entry = _object(data, "entry", "")
    if verb in ("unpublish", "delete"):
        action: Action = "delete"
    elif verb == "publish" or (verb in ("create", "update") and entry.get("publishedAt")):
        action = "upsert"
    else:
        return Ignored(f"{event}: a draft is not public")
    return Document(
        action=action,
        content_type=_text(data, "model", ""),
        id=_text(entry, "documentId", "entry.") if "documentId" in entry else _text(entry, "id", "entry."),
        variants=(Variant(_optional_text(entry, "locale"), entry),),
        updated_at=_optional_text(data, "createdAt") or _optional_text(entry, "updatedAt"),
        published_at=_optional_text(entry, "publishedAt"),
    )


# Generic: our own documented shape, for any CMS that can sign a webhook with HMAC-SHA256.
_GENERIC_ACTIONS: dict[str, Action] = {
    "publish": "upsert",
    "update": "upsert",
    "upsert": "upsert",
    "unpublish": "delete",
    "archive": "delete",
    "delete": "delete",
}


def _generic(headers: Mapping[str, str], data: dict[str, Any]) -> Document | Ignored:
    action = _GENERIC_ACTIONS.get(str(data.get("action")))
    if action is None:
        raise PayloadError(f"action: {data.get('action')!r} is not one of {', '.join(_GENERIC_ACTIONS)}")
    fields = _object(data, "fields", "")
    return Document(
        action=action,
        content_type=_text(data, "type", ""),
        id=_text(data, "id", ""),
        variants=(Variant(_optional_text(data, "locale"), fields),),
        updated_at=_optional_text(data, "updated_at"),
        published_at=_optional_text(data, "published_at"),
        revision=_counter(data.get("revision")),
    )


_READERS = {
    "contentful": _contentful,
    "sanity": _sanity,
    "storyblok": _storyblok,
    "ghost": _ghost,
    "strapi": _strapi,
    "generic": _generic,
}
