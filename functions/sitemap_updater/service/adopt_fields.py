"""A sitemap's ``<url>`` element as an upsert event of the contract, and the fields to drop when one is invalid;
what a sitemap's root and DTD may be, and how a syntax error is told.

Every field the contract has is kept: loc, lastmod, changefreq, priority, images with captions and titles,
videos, news and hreflang alternates. Elements the contract has no field for are listed as dropped.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from sitemap_updater.core.event_rules import MAX_ALTERNATES, MAX_IMAGES, MAX_VIDEOS
from sitemap_updater.service.adopt_stream import FileError

IMAGE = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML = "http://www.w3.org/1999/xhtml"
_PREFIX = {IMAGE: "image", VIDEO: "video", NEWS: "news", XHTML: "xhtml"}
_PAGE = ("loc", "lastmod", "changefreq", "priority")
_VIDEO_TEXT = ("thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration",
               "expiration_date", "rating", "view_count", "publication_date")  # fmt: skip
_VIDEO_FLAGS = ("family_friendly", "requires_subscription", "live")
_VIDEO_ATTRIBUTES = {"restriction": {"relationship"}, "platform": {"relationship"}, "uploader": {"info"}}
_LISTS = {"images": MAX_IMAGES, "videos": MAX_VIDEOS, "alternates": MAX_ALTERNATES}
_REQUIRED = {"images": {"loc"}, "videos": {"thumbnail_loc", "title", "description"}, "alternates": {"hreflang", "href"}}
_OPTIONAL = ("lastmod", "changefreq", "priority", "section")
_NAIVE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?")
_PATH = re.compile(r"(\w+)(?:\[(\d+)\])?(?:\.(\w+))?.*")

Dropped = list[tuple[str, str]]  # (field, why): what the contract could not take


def page_event(url: Any, unknown_time: str) -> tuple[dict[str, Any], Dropped]:
    """The upsert event of one ``<url>`` element, and the elements it has no field for.

    ``occurred_at`` is the page's lastmod (a date counts as its midnight UTC), else ``unknown_time``.
    """
    event: dict[str, Any] = {"type": "upsert", "url": "", "occurred_at": unknown_time}
    dropped: Dropped = []
    images: list[dict[str, Any]] = []
    videos: list[dict[str, Any]] = []
    alternates: list[dict[str, str]] = []
    for child in url.iterchildren("*"):
        namespace, name = _name(child)
        if namespace == IMAGE and name == "image":
            images.append(_children(child, ("loc", "caption", "title"), dropped, "image"))
        elif namespace == VIDEO and name == "video":
            videos.append(_video(child, dropped))
        elif namespace == NEWS and name == "news":
            event["news"] = _news(child, dropped)
        elif namespace == XHTML and name == "link" and child.get("rel") == "alternate" and child.get("hreflang"):
            alternates.append({"hreflang": child.get("hreflang"), "href": (child.get("href") or "").strip()})
        elif namespace not in _PREFIX and name in _PAGE:
            _page_field(event, name, _text(child), dropped)
        else:
            dropped.append((_label(child), "not a field of the event contract: dropped"))
    for name, items in (("images", images), ("videos", videos), ("alternates", alternates)):
        if items:
            event[name] = items
    return event, dropped


def drop_fields(event: dict[str, Any], fields: list[str], unknown_time: str) -> bool:
    """Remove what the contract rejected (``videos[0].rating``: that field; a required part of an item: the
    item; a part of news: the news) so that the page can be kept. False when the page itself is invalid."""
    gone: dict[str, set[int]] = {}
    for path in fields:
        match = _PATH.fullmatch(path)
        if match is None:
            return False
        name, index, part = match.group(1), match.group(2), match.group(3)
        if name in _OPTIONAL or name == "occurred_at":
            event.pop(name, None)
            if name in ("lastmod", "occurred_at"):  # one was taken from the other
                event.pop("lastmod", None)
                event["occurred_at"] = unknown_time
        elif name == "news":
            event.pop("news", None)
        elif name in _LISTS and name in event and index is None:
            event[name] = event[name][: _LISTS[name]]
        elif name in _LISTS and name in event and int(index) < len(event[name]):
            if part is None or part in _REQUIRED[name]:
                gone.setdefault(name, set()).add(int(index))
            else:
                event[name][int(index)].pop(part, None)
        else:
            return False
    for name, indexes in gone.items():
        event[name] = [item for i, item in enumerate(event[name]) if i not in indexes]
        if not event[name]:
            del event[name]
    return True


def _page_field(event: dict[str, Any], name: str, text: str, dropped: Dropped) -> None:
    if name == "loc":
        event["url"] = text
    elif name == "lastmod" and text:
        if _NAIVE.fullmatch(text):  # a time without its offset: the day the source wrote is all that is known
            dropped.append(("lastmod", f"{text!r} has no UTC offset: its time dropped, its date kept"))
            text = text[:10]
        event["lastmod"] = text
        event["occurred_at"] = f"{text}T00:00:00Z" if len(text) == 10 else text
    elif name == "changefreq" and text:
        event["changefreq"] = text.lower()
    elif name == "priority" and text:
        event["priority"] = text


def _video(video: Any, dropped: Dropped) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for child in video.iterchildren("*"):
        namespace, name = _name(child)
        text = _text(child)
        for attribute in sorted(set(child.attrib) - _VIDEO_ATTRIBUTES.get(name, set())):
            dropped.append((f"{_label(child)}@{attribute}", "not a field of the event contract: dropped"))
        if namespace != VIDEO:
            dropped.append((_label(child), "not a field of the event contract: dropped"))
        elif name in _VIDEO_TEXT:
            found[name] = text
        elif name in _VIDEO_FLAGS:
            found[name] = {"yes": True, "no": False}.get(text.lower(), text)
        elif name == "tag":
            found.setdefault("tags", []).append(text)
        elif name in ("restriction", "platform"):
            items = "countries" if name == "restriction" else "platforms"
            found[name] = {"relationship": child.get("relationship", ""), items: text.split()}
        elif name == "uploader":
            found["uploader"] = {"name": text} | ({"info": child.get("info")} if child.get("info") else {})
        else:
            dropped.append((_label(child), "not a field of the event contract: dropped"))
    return found


def _news(news: Any, dropped: Dropped) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for child in news.iterchildren("*"):
        _, name = _name(child)
        if name == "publication":
            for part in child.iterchildren("*"):
                key = {"name": "publication_name", "language": "publication_language"}.get(_name(part)[1])
                if key is not None:
                    found[key] = _text(part)
        elif name in ("publication_date", "title"):
            found[name] = _text(child)
        else:
            dropped.append((_label(child), "not a field of the event contract: dropped"))
    return found


def _children(element: Any, names: tuple[str, ...], dropped: Dropped, kind: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for child in element.iterchildren("*"):
        name = _name(child)[1]
        if name in names:
            found[name] = _text(child)
        else:
            dropped.append((_label(child), f"not a field of the event contract ({kind}): dropped"))
    return found


def _name(element: Any) -> tuple[str, str]:
    qname = etree.QName(element)
    return qname.namespace or "", qname.localname


def _label(element: Any) -> str:
    namespace, name = _name(element)
    prefix = _PREFIX.get(namespace)
    return f"{prefix}:{name}" if prefix else f"{{{namespace}}}{name}" if namespace else name


def _text(element: Any) -> str:
    return (element.text or "").strip()


def check_root(element: Any) -> None:
    """A sitemap's root element, without entities declared in a DTD or an external DTD (FileError otherwise)."""
    name = etree.QName(element).localname
    if name not in ("urlset", "sitemapindex"):
        raise FileError(f"not a sitemap (root element <{name}>)")
    info = element.getroottree().docinfo
    dtd = info.internalDTD
    entities = sorted(e.name for e in dtd.entities()) if dtd is not None else []
    if entities:
        raise FileError(
            f"its DTD declares entities ({', '.join('&' + e + ';' for e in entities[:5])}): a sitemap has no DTD, "
            "and adoption expands no entity (a page would lose the text after one); not read"
        )
    if info.system_url or info.public_id:
        raise FileError(
            f"it names an external DTD ({info.system_url or info.public_id!r}): a sitemap has none, and adoption "
            "loads none (the entities it may declare would be lost); not read"
        )


def syntax_error(exc: etree.XMLSyntaxError) -> str:
    """The first error lxml logged for this file, with its line and column (the exception's own message may
    be a later consequence of it, such as "no element found" after an undeclared entity)."""
    for entry in exc.error_log:  # type: ignore[attr-defined]
        if entry.level >= etree.ErrorLevels.ERROR:
            return f"line {entry.line}, column {entry.column}: {entry.message}"
    return f"line {exc.lineno}, column {exc.position[1]}: {exc.msg}"
