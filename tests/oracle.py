"""An independent reference model of what a site's sitemaps must show, written from the protocol and Google's
rules without importing the code under test (no ``sitemap_updater`` import at all).

From the accepted event bodies (dicts whose URLs are already canonical, as the tests and the simulation send
them) it gives the winning event per URL, the set of URLs that must be listed, each URL's section, and each
URL's ``<url>`` element exactly as a file must show it. Its own rules:

- Ranking: the newest event by (version, occurred_at), a missing version before any version; on a tie a
  delete wins, then the upsert whose element (with its news) has the larger SHA-256, then the larger section
  name (by code point), so that of two tied events the same one wins whatever their order.
- Listed: a URL whose winner is an upsert. Section: the event's, else the first path segment when another
  segment follows it, else ``root``.
- Lastmod: the winner's, else the winner's ``occurred_at``: the winning event alone decides what is shown; a
  winner whose lastmod is null shows none.
  W3C text: a date as given; a date-time in UTC, whole seconds, ``+00:00``.
- Element order: loc, lastmod, changefreq, priority, then image:image (loc, caption, title; a repeated image
  URL once), video:video (sitemap-video.xsd order), xhtml:link (sorted by hreflang and href, duplicates once),
  then news:news only when published at most 48 hours before ``as_of``.
- Every text and attribute value escaped with the five XML entities.

Not modelled: the split into files and the 1,000-news-per-file cap (the simulation's sites are small).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from html import unescape
from typing import Any

NEWS_WINDOW = timedelta(hours=48)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"))
_DELETE_TYPES = ("delete", "unpublish", "archive")


def esc(text: str) -> str:
    """The five predefined XML entities; ``&`` first so nothing is escaped twice."""
    for char, entity in _ENTITIES:
        text = text.replace(char, entity)
    return text


def moment(text: str) -> datetime:
    """An aware date-time from RFC 3339 / W3C text (a bare date is its midnight UTC)."""
    if len(text) == 10:
        day = date.fromisoformat(text)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    assert parsed.tzinfo is not None, text
    return parsed


def micros(text: str) -> int:
    """Microseconds since the epoch of a W3C date or date-time."""
    return (moment(text) - _EPOCH) // timedelta(microseconds=1)


def w3c(text: str) -> str:
    """A date stays as given; a date-time becomes UTC with whole seconds and ``+00:00``."""
    if len(text) == 10:
        return text
    return moment(text).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def priority_text(value: float) -> str:
    """At most two decimals, at least one: 0.5 -> ``0.5``, 0.25 -> ``0.25``, 1 -> ``1.0``."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def is_delete(body: Mapping[str, Any]) -> bool:
    return str(body["type"]).strip().lower() in _DELETE_TYPES


def section_of(body: Mapping[str, Any]) -> str:
    """The event's section, else the first path segment when another follows it, else ``root``."""
    if body.get("section") is not None:
        return str(body["section"])
    path = str(body["url"]).split("://", 1)[1].partition("/")[2]
    first, slash, _rest = path.partition("/")
    if not slash or not first or "?" in first:
        return "root"
    return first


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _video(video: Mapping[str, Any]) -> str:
    out = ["<video:video>", f"<video:thumbnail_loc>{esc(video['thumbnail_loc'])}</video:thumbnail_loc>"]
    out.append(f"<video:title>{esc(video['title'])}</video:title>")
    out.append(f"<video:description>{esc(video['description'])}</video:description>")
    for name in ("content_loc", "player_loc"):
        if video.get(name) is not None:
            out.append(f"<video:{name}>{esc(video[name])}</video:{name}>")
    if video.get("duration") is not None:
        out.append(f"<video:duration>{int(video['duration'])}</video:duration>")
    if video.get("expiration_date") is not None:
        out.append(f"<video:expiration_date>{w3c(video['expiration_date'])}</video:expiration_date>")
    if video.get("rating") is not None:
        out.append(f"<video:rating>{float(video['rating']):.1f}</video:rating>")
    if video.get("view_count") is not None:
        out.append(f"<video:view_count>{int(video['view_count'])}</video:view_count>")
    if video.get("publication_date") is not None:
        out.append(f"<video:publication_date>{w3c(video['publication_date'])}</video:publication_date>")
    out += [f"<video:tag>{esc(tag)}</video:tag>" for tag in video.get("tags", [])]
    if video.get("family_friendly") is not None:
        out.append(f"<video:family_friendly>{_yes(video['family_friendly'])}</video:family_friendly>")
    if video.get("restriction") is not None:
        rule = video["restriction"]
        countries = " ".join(rule.get("countries", []))
        out.append(f'<video:restriction relationship="{rule["relationship"]}">{countries}</video:restriction>')
    if video.get("requires_subscription") is not None:
        flag = _yes(video["requires_subscription"])
        out.append(f"<video:requires_subscription>{flag}</video:requires_subscription>")
    if video.get("uploader") is not None:
        uploader = video["uploader"]
        info = f' info="{esc(uploader["info"])}"' if uploader.get("info") else ""
        out.append(f"<video:uploader{info}>{esc(uploader['name'])}</video:uploader>")
    if video.get("platform") is not None:
        rule = video["platform"]
        platforms = " ".join(rule.get("platforms", []))
        out.append(f'<video:platform relationship="{rule["relationship"]}">{platforms}</video:platform>')
    if video.get("live") is not None:
        out.append(f"<video:live>{_yes(video['live'])}</video:live>")
    out.append("</video:video>")
    return "".join(out)


def element_parts(body: Mapping[str, Any], lastmod: str | None = None) -> tuple[str, str]:
    """An upsert's ``<url>`` element without its closing tag, split into (everything but news, the news
    element or "")."""
    shown: str | None
    if body.get("lastmod") is not None:
        shown = w3c(str(body["lastmod"]))
    elif "lastmod" in body:  # null: the page has no lastmod, and none is shown
        shown = None
    elif lastmod is not None:
        shown = lastmod
    else:
        shown = w3c(str(body["occurred_at"]))
    out = [f"<url><loc>{esc(body['url'])}</loc>" + ("" if shown is None else f"<lastmod>{shown}</lastmod>")]
    if body.get("changefreq") is not None:
        out.append(f"<changefreq>{body['changefreq']}</changefreq>")
    if body.get("priority") is not None:
        out.append(f"<priority>{priority_text(float(body['priority']))}</priority>")
    seen: set[str] = set()
    for image in body.get("images", []):
        if image["loc"] in seen:
            continue
        seen.add(image["loc"])
        out.append(f"<image:image><image:loc>{esc(image['loc'])}</image:loc>")
        if image.get("caption") is not None:
            out.append(f"<image:caption>{esc(image['caption'])}</image:caption>")
        if image.get("title") is not None:
            out.append(f"<image:title>{esc(image['title'])}</image:title>")
        out.append("</image:image>")
    out += [_video(video) for video in body.get("videos", [])]
    links = sorted({(a["hreflang"], a["href"]) for a in body.get("alternates", [])})
    out += [f'<xhtml:link rel="alternate" hreflang="{lang}" href="{esc(href)}"/>' for lang, href in links]
    news = ""
    if body.get("news") is not None:
        item = body["news"]
        news = (
            f"<news:news><news:publication><news:name>{esc(item['publication_name'])}</news:name>"
            f"<news:language>{item['publication_language']}</news:language></news:publication>"
            f"<news:publication_date>{w3c(item['publication_date'])}</news:publication_date>"
            f"<news:title>{esc(item['title'])}</news:title></news:news>"
        )
    return "".join(out), news


def news_fresh(body: Mapping[str, Any], as_of_us: int) -> bool:
    """A news part is shown while it is at most 48 hours old."""
    news = body.get("news")
    if news is None:
        return False
    return micros(str(news["publication_date"])) >= as_of_us - NEWS_WINDOW // timedelta(microseconds=1)


def rank(body: Mapping[str, Any]) -> tuple[int, int, int, str, str]:
    """(version, occurred_at µs, 1 for a delete, SHA-256 of the element with its news, section)."""
    version = -1 if body.get("version") is None else int(body["version"])
    if is_delete(body):
        return (version, micros(str(body["occurred_at"])), 1, "", section_of(body))
    main, news = element_parts(body)
    digest = hashlib.sha256((main + news).encode()).hexdigest()
    return (version, micros(str(body["occurred_at"])), 0, digest, section_of(body))


def winners(bodies: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The winning event of each URL, whatever the order of ``bodies``."""
    best: dict[str, tuple[tuple[int, int, int, str, str], Mapping[str, Any]]] = {}
    for body in bodies:
        key = rank(body)
        url = str(body["url"])
        if url not in best or key > best[url][0]:
            best[url] = (key, body)
    return {url: body for url, (_key, body) in best.items()}


def expected_urls(bodies: Iterable[Mapping[str, Any]]) -> set[str]:
    """The URLs the sitemaps must list: those whose winning event is an upsert."""
    return {url for url, body in winners(bodies).items() if not is_delete(body)}


def expected_sections(bodies: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Section -> the URLs its files must list."""
    sections: dict[str, set[str]] = {}
    for url, body in winners(bodies).items():
        if not is_delete(body):
            sections.setdefault(section_of(body), set()).add(url)
    return sections


def expected_elements(
    bodies: Iterable[Mapping[str, Any]],
    as_of_us: int,
    recorded: Mapping[str, str] | None = None,
    violations: list[str] | None = None,
) -> dict[str, str]:
    """URL -> its complete ``<url>...</url>`` element as a file must show it ``as_of_us``.

    ``recorded``: the lastmod stored for a URL at the end, when known; one that is not the winner's is reported
    in ``violations``."""
    shown: dict[str, str] = {}
    for url, body in winners(bodies).items():
        if is_delete(body):
            continue
        main, news = element_parts(body)
        lastmod = main.split("<lastmod>", 1)[1].split("</lastmod>", 1)[0] if "<lastmod>" in main else ""
        if recorded is not None and url in recorded and recorded[url] != lastmod and violations is not None:
            violations.append(f"{url}: lastmod {recorded[url]} is recorded, but its newest event gives {lastmod}")
        shown[url] = main + (news if news_fresh(body, as_of_us) else "") + "</url>"
    return shown


def published_elements(files: Mapping[str, bytes]) -> dict[str, list[tuple[str, str]]]:
    """URL -> [(file name, its ``<url>`` element as written)] over the gzip sitemap files of ``files``; a URL in
    more than one file is listed with each."""
    shown: dict[str, list[tuple[str, str]]] = {}
    for name, data in sorted(files.items()):
        if data[:2] != b"\x1f\x8b":
            continue
        for element in re.findall(r"<url>.*?</url>", gzip.decompress(data).decode(), re.DOTALL):
            loc = unescape(element.split("<loc>", 1)[1].split("</loc>", 1)[0])
            shown.setdefault(loc, []).append((name, element))
    return shown


def check_published(
    files: Mapping[str, bytes],
    bodies: Iterable[Mapping[str, Any]],
    as_of_us: int,
    recorded: Mapping[str, str] | None = None,
) -> list[str]:
    """What is wrong with the published ``files`` (name -> bytes, the index included) by this model: every
    expected URL listed exactly once, with its expected element, and nothing else."""
    problems: list[str] = []
    expected = expected_elements(bodies, as_of_us, recorded, problems)
    shown = published_elements(files)
    for url in sorted(set(expected) | set(shown)):
        places = shown.get(url, [])
        if url not in expected:
            problems.append(f"{url} is listed in {[name for name, _ in places]} but its newest event deletes it")
        elif not places:
            problems.append(f"{url} is not listed")
        elif len(places) > 1:
            problems.append(f"{url} is listed {len(places)} times: {[name for name, _ in places]}")
        elif places[0][1] != expected[url]:
            problems.append(f"{url} in {places[0][0]} shows {places[0][1]!r}, expected {expected[url]!r}")
    return problems
