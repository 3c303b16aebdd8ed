"""Event contract v1: what the CMS sends for each page change, validated and canonicalised."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sitemap_updater.core.entry import check_entry_size, entry_from_event
from sitemap_updater.core.errors import EventRejected, Oversized, Problem
from sitemap_updater.core.event_rules import (
    MAX_ALTERNATES,
    MAX_BODY_BYTES,
    MAX_IMAGES,
    MAX_INT_DIGITS,
    MAX_SECTION_CHARS,
    MAX_VERSION,
    MAX_VIDEOS,
    TYPE_ALIASES,
    UNKNOWN_TIME,
    WINDOW_TEXT,
    ChangeFreq,
    Horizon,
    in_window,
    oversized_body,
    w3c_datetime,
)
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.text import check_xml_text
from sitemap_updater.core.urls import ROOT_SECTION, Site, UrlError, canonical_media_url, canonical_page_url


def _event_type(value: object) -> object:
    if isinstance(value, str):
        mapped = TYPE_ALIASES.get(value.strip().lower())
        if mapped is None:
            names = ", ".join(TYPE_ALIASES)
            raise ValueError(f"unknown event type {value!r}; expected one of {names}")
        return mapped
    return value


def _rfc3339_text(value: object) -> object:
    """occurred_at is RFC 3339 text: a number would be read as a Unix time, which the contract does not allow."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("must be an RFC 3339 date-time string with an offset, not a number")
    return value


def _media_url(value: str) -> str:
    try:
        return canonical_media_url(value)
    except UrlError as exc:
        raise ValueError(str(exc)) from exc


Text = Annotated[str, AfterValidator(check_xml_text)]
NonEmptyText = Annotated[str, Field(min_length=1), AfterValidator(check_xml_text)]
MediaUrl = Annotated[str, Field(min_length=1), AfterValidator(_media_url)]
W3CDate = Annotated[date | datetime, BeforeValidator(w3c_datetime)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Image(_Model):
    """``image:image``: the image's URL, which may be on a CDN host."""

    loc: MediaUrl
    title: Text | None = None
    caption: Text | None = None


class VideoRestriction(_Model):
    relationship: Literal["allow", "deny"]
    countries: list[Annotated[str, Field(pattern=r"^[A-Z]{2}$")]] = Field(default_factory=list)


class VideoPlatform(_Model):
    relationship: Literal["allow", "deny"]
    platforms: list[Literal["web", "mobile", "tv"]] = Field(default_factory=list)


class VideoUploader(_Model):
    name: NonEmptyText
    info: MediaUrl | None = None


class Video(_Model):
    """``video:video``: Google's required fields plus the common optional ones."""

    thumbnail_loc: MediaUrl
    title: Annotated[str, Field(min_length=1, max_length=100), AfterValidator(check_xml_text)]
    description: Annotated[str, Field(min_length=1, max_length=2048), AfterValidator(check_xml_text)]
    content_loc: MediaUrl | None = None
    player_loc: MediaUrl | None = None
    duration: Annotated[int, Field(ge=1, le=28800)] | None = None
    expiration_date: W3CDate | None = None
    rating: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    view_count: Annotated[int, Field(ge=0)] | None = None
    publication_date: W3CDate | None = None
    tags: list[NonEmptyText] = Field(default_factory=list, max_length=32)
    family_friendly: bool | None = None
    restriction: VideoRestriction | None = None
    requires_subscription: bool | None = None
    uploader: VideoUploader | None = None
    platform: VideoPlatform | None = None
    live: bool | None = None

    @model_validator(mode="after")
    def _needs_a_location(self) -> Video:
        if self.content_loc is None and self.player_loc is None:
            raise ValueError("a video needs content_loc or player_loc")
        return self


class News(_Model):
    """``news:news`` for Google News; left out of the sitemap once older than two days."""

    publication_name: NonEmptyText
    publication_language: Annotated[str, Field(pattern=r"^(zh-cn|zh-tw|[a-z]{2,3})$")]
    publication_date: W3CDate
    title: NonEmptyText


class Alternate(_Model):
    """``xhtml:link rel="alternate"``: a language version of the page, on any host."""

    hreflang: Annotated[str, Field(pattern=r"^(x-default|[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*)$")]
    href: MediaUrl


class PageEvent(_Model):
    """One page change. ``occurred_at`` is required; ``version`` (a CMS revision) orders events first."""

    type: Annotated[Literal["upsert", "delete"], BeforeValidator(_event_type)] = Field(
        description="upsert (aliases publish, update) or delete (aliases unpublish, archive)"
    )
    url: Annotated[str, Field(min_length=1, description="absolute URL on the site's canonical host")]
    occurred_at: Annotated[AwareDatetime, BeforeValidator(_rfc3339_text)] = Field(
        description="RFC 3339 date-time with offset; at most 300 s (the clock skew allowed) past now"
    )
    version: Annotated[int, Field(ge=0, le=MAX_VERSION)] | None = Field(
        default=None, description="monotonic per URL; events are ordered by (version, occurred_at)"
    )
    lastmod: W3CDate | None = Field(
        default=None,
        description="W3C date or date-time, not in the future (as occurred_at; a date once it has begun anywhere); "
        "left out, the event's occurred_at is shown; null, the page has no lastmod and none is shown (as adopted "
        "from a sitemap that gave none)",
    )
    changefreq: ChangeFreq | None = None
    priority: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    section: (
        Annotated[str, Field(min_length=1, max_length=MAX_SECTION_CHARS), AfterValidator(check_xml_text)] | None
    ) = None
    images: list[Image] = Field(default_factory=list, max_length=MAX_IMAGES)
    videos: list[Video] = Field(default_factory=list, max_length=MAX_VIDEOS)
    news: News | None = None
    alternates: list[Alternate] = Field(default_factory=list, max_length=MAX_ALTERNATES)

    @field_validator("url")
    @classmethod
    def _canonical_url(cls, value: str, info: ValidationInfo) -> str:
        context = info.context
        if not isinstance(context, dict) or not isinstance(context.get("site"), Site):
            raise TypeError("PageEvent must be validated with context={'site': Site, 'warnings': [...]}")
        try:
            return canonical_page_url(value, context["site"], context.setdefault("warnings", []))
        except UrlError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("occurred_at")
    @classmethod
    def _in_window(cls, value: datetime) -> datetime:
        if not in_window(value):
            raise ValueError(f"out of range: must be {WINDOW_TEXT}")
        return value

    # The section the site's Sections setting gives the URL, found while validating; not a field of the event, so
    # an event read and written again (adoption) still names no section and the reading stack's setting decides.
    _site_section: str = PrivateAttr(default=ROOT_SECTION)

    @model_validator(mode="after")
    def _section_by_site(self, info: ValidationInfo) -> PageEvent:
        context = info.context
        if self.section is None and isinstance(context, dict) and isinstance(context.get("site"), Site):
            self._site_section = context["site"].section_of(self.url)
        return self

    @property
    def page_section(self) -> str:
        """The page's section: named by the event, else given by the site's setting when it was validated."""
        return self._site_section if self.section is None else self.section

    @property
    def no_lastmod(self) -> bool:
        """True when the event says the page has no lastmod (``"lastmod": null``): its entry shows none."""
        return self.lastmod is None and "lastmod" in self.model_fields_set

    @property
    def order(self) -> tuple[int, int]:
        """Ordering key: (version, occurred_at in microseconds); a missing version sorts first."""
        return (-1 if self.version is None else self.version, to_micros(self.occurred_at))


def event_json_schema() -> dict[str, Any]:
    """JSON Schema of the event contract, as published in ``docs/event.schema.json``."""
    schema = PageEvent.model_json_schema(mode="validation")
    schema["$id"] = "urn:sitemap-updater:event:v1"
    schema["title"] = "sitemap-updater page event, contract v1"
    return schema


@dataclass(frozen=True, slots=True)
class ParsedEvent:
    """A valid event with what was noticed on the way: removed session IDs, ignored unknown fields."""

    event: PageEvent
    warnings: tuple[str, ...]
    unknown_fields: tuple[str, ...]


def parse_event(body: str | bytes | Mapping[str, Any], site: Site, horizon: Horizon) -> ParsedEvent:
    """Decode, unwrap (EventBridge, SNS) and validate one event; raise EventRejected naming the field. An
    ``occurred_at`` or ``lastmod`` past ``horizon`` (now plus a skew for clocks that differ) is rejected."""
    if isinstance(body, str | bytes):
        body = _without_bom(body)
        size = len(body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body)
        if size > MAX_BODY_BYTES:
            raise body_too_large(size)
        # Fast path: a plain event validated straight from JSON. Anything else (an envelope, an error, a number
        # too long to read) takes the general path below, which also words the errors.
        context: dict[str, Any] = {"site": site, "warnings": []}
        try:
            event = PageEvent.model_validate_json(body, context=context)
        except ValueError:
            pass
        else:
            found = ParsedEvent(event, tuple(context["warnings"]), tuple(_unknown_fields(event, "")))
            return _checked(found, "", horizon)
    data, prefix = _unwrap(_decode(body, "(body)"), "")
    context = {"site": site, "warnings": []}
    try:
        event = PageEvent.model_validate(data, context=context)
    except ValidationError as exc:
        raise EventRejected.from_validation_error(exc, prefix) from None
    found = ParsedEvent(event, tuple(context["warnings"]), tuple(_unknown_fields(event, prefix)))
    return _checked(found, prefix, horizon)


def body_too_large(size: int) -> EventRejected:
    """The rejection of a body of ``size`` bytes (without a byte order mark), past :data:`MAX_BODY_BYTES`; also
    for a line too long for a reader to keep (``core.lines.LongLine``)."""
    return EventRejected.single("(body)", oversized_body(size))


def _without_bom(body: str | bytes) -> str | bytes:
    """A byte order mark before the JSON is ignored (RFC 8259 allows it), as text and as bytes alike."""
    if isinstance(body, str):
        return body.removeprefix("\ufeff")
    return body.removeprefix(b"\xef\xbb\xbf")


def _checked(parsed: ParsedEvent, prefix: str, horizon: Horizon) -> ParsedEvent:
    """A valid event's checks against what lies outside it: no moment past ``horizon`` (a lastmod is kept on a
    state of unknown time, occurred_at the epoch, as adoption writes for a page its sitemap dated in the future:
    it ranks below every other event); and an upsert whose entry would not fit one stored item is rejected, naming
    its largest part."""
    event = parsed.event
    problems = []
    if horizon.passes(event.occurred_at):
        problems.append(Problem(f"{prefix}occurred_at", horizon.reason(event.occurred_at)))
    if event.lastmod is not None and event.occurred_at != UNKNOWN_TIME and horizon.passes(event.lastmod):
        problems.append(Problem(f"{prefix}lastmod", horizon.reason(event.lastmod)))
    if problems:
        raise EventRejected(problems)
    if event.type == "upsert":
        check_entry_size(event, entry_from_event(event), prefix)
    return parsed


def _json_int(text: str) -> int | Oversized:
    """JSON integers as Python reads them, except one too long to read, which its field then rejects."""
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else Oversized(len(text.lstrip("-")))


def _decode(body: str | bytes | Mapping[str, Any], field: str) -> Any:
    if isinstance(body, Mapping):
        return body
    try:
        return json.loads(body, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise EventRejected.single(
            field, f"not valid JSON: {exc.msg.removesuffix(' at')} at character {exc.pos}"
        ) from None
    except RecursionError:
        raise EventRejected.single(field, "JSON is nested too deeply") from None
    except UnicodeDecodeError:
        raise EventRejected.single(field, "not valid UTF-8") from None


def _unwrap(data: Any, prefix: str) -> tuple[Any, str]:
    if not isinstance(data, Mapping):
        raise EventRejected.single(prefix.rstrip(".") or "(body)", "must be a JSON object")
    if "detail" in data and "detail-type" in data:  # EventBridge
        return _unwrap(data["detail"], f"{prefix}detail.")
    if data.get("Type") == "Notification" and isinstance(data.get("Message"), str):  # SNS
        field = f"{prefix}Message"
        return _unwrap(_decode(data["Message"], field), f"{field}.")
    return data, prefix


def _unknown_fields(model: BaseModel, prefix: str) -> list[str]:
    """Paths of input fields the models do not know (ignored, and reported so they can be logged)."""
    found = [f"{prefix}{name}" for name in model.model_extra or ()]
    for name in _NESTED.get(type(model), ()):
        value = getattr(model, name)
        if isinstance(value, list):
            for index, item in enumerate(value):
                found.extend(_unknown_fields(item, f"{prefix}{name}[{index}]."))
        elif value is not None:
            found.extend(_unknown_fields(value, f"{prefix}{name}."))
    return found


_NESTED: dict[type[BaseModel], tuple[str, ...]] = {
    PageEvent: ("images", "videos", "news", "alternates"),
    Video: ("restriction", "uploader", "platform"),
}
