"""A page's sitemap entry: its ``<url>`` element pre-rendered once, with what sharding and the index need."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, NamedTuple

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import page_key
from sitemap_updater.core.text import escape_text

if TYPE_CHECKING:  # the event models are only needed by code that parses events
    from sitemap_updater.core.events import News, PageEvent, Video

FLAG_IMAGE = 1
FLAG_VIDEO = 2
FLAG_NEWS = 4
FLAG_XHTML = 8
URL_CLOSE = b"</url>\n"
# The most one page's rendered ``<url>`` element (with its news) may take. Its manifest item holds it with the
# URL (2,047 bytes at most), the section (400), a 62-byte record head and keys of at most 2,048 + 1,024
# bytes: 405,581 bytes in all, under DynamoDB's item limit of 400 KB (409,600 bytes; "Constraints in Amazon
# DynamoDB" in its developer guide). Escaping can multiply text by six (``'`` is ``&apos;``), so a 256 KiB
# event may need more: it is rejected, naming its largest part.
MAX_ENTRY_BYTES = 400_000


class Entry(NamedTuple):
    """One live page. ``body`` is ``<url>`` and every child but ``news:news``; ``news`` is that child or b"".

    The news part is kept apart because it is left out once older than two days; ``size`` counts it, so the
    file layout never depends on the clock. (A named tuple: a rebuild reads tens of thousands of them.)
    """

    url: str
    key: int
    section: str
    lastmod_us: int
    body: bytes
    news: bytes = b""
    news_us: int = 0
    flags: int = 0

    @property
    def size(self) -> int:
        """Uncompressed bytes of the element when rendered with its news."""
        return len(self.body) + len(self.news) + len(URL_CLOSE)

    @property
    def sort_key(self) -> tuple[int, str]:
        return (self.key, self.url)


def w3c(value: date | datetime) -> str:
    """``YYYY-MM-DD`` for a date; ``YYYY-MM-DDThh:mm:ss+00:00`` (UTC, whole seconds) for a date-time."""
    if isinstance(value, datetime):
        v = value.astimezone(UTC) if value.utcoffset() else value
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}+00:00"
    return value.isoformat()


def w3c_micros(micros: int) -> str:
    """The W3C date-time of a UTC timestamp in microseconds."""
    return w3c(datetime.fromtimestamp(micros / 1_000_000, UTC))


def moment_micros(value: date | datetime) -> int:
    """Microseconds since the epoch; a date counts as its midnight UTC."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    return to_micros(value)


def _priority(value: float) -> str:
    return format(round(value, 2), "g") if value not in (0.0, 1.0) else f"{value:.1f}"


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def image_element(loc: str, title: str | None, caption: str | None) -> str:
    """``image:image`` of a canonical image URL with its optional caption and title."""
    text = f"<image:image><image:loc>{escape_text(loc)}</image:loc>"
    if caption is not None:
        text += f"<image:caption>{escape_text(caption)}</image:caption>"
    if title is not None:
        text += f"<image:title>{escape_text(title)}</image:title>"
    return text + "</image:image>"


def url_open(url: str, lastmod: str | None, changefreq: str | None, priority: float | None) -> str:
    """``<url>`` with its ``loc``, ``lastmod`` (W3C text; None: none), ``changefreq`` and ``priority`` children."""
    text = f"<url><loc>{escape_text(url)}</loc>"
    if lastmod is not None:
        text += f"<lastmod>{lastmod}</lastmod>"
    if changefreq is not None:
        text += f"<changefreq>{changefreq}</changefreq>"
    if priority is not None:
        text += f"<priority>{_priority(priority)}</priority>"
    return text


def _video(video: Video, out: list[str]) -> None:
    """Children in the order sitemap-video.xsd requires."""
    out.append(f"<video:video><video:thumbnail_loc>{escape_text(video.thumbnail_loc)}</video:thumbnail_loc>")
    out.append(f"<video:title>{escape_text(video.title)}</video:title>")
    out.append(f"<video:description>{escape_text(video.description)}</video:description>")
    if video.content_loc is not None:
        out.append(f"<video:content_loc>{escape_text(video.content_loc)}</video:content_loc>")
    if video.player_loc is not None:
        out.append(f"<video:player_loc>{escape_text(video.player_loc)}</video:player_loc>")
    if video.duration is not None:
        out.append(f"<video:duration>{video.duration}</video:duration>")
    if video.expiration_date is not None:
        out.append(f"<video:expiration_date>{w3c(video.expiration_date)}</video:expiration_date>")
    if video.rating is not None:
        out.append(f"<video:rating>{video.rating:.1f}</video:rating>")
    if video.view_count is not None:
        out.append(f"<video:view_count>{video.view_count}</video:view_count>")
    if video.publication_date is not None:
        out.append(f"<video:publication_date>{w3c(video.publication_date)}</video:publication_date>")
    out.extend(f"<video:tag>{escape_text(tag)}</video:tag>" for tag in video.tags)
    if video.family_friendly is not None:
        out.append(f"<video:family_friendly>{_yes_no(video.family_friendly)}</video:family_friendly>")
    if video.restriction is not None:
        countries = " ".join(video.restriction.countries)
        out.append(
            f'<video:restriction relationship="{video.restriction.relationship}">{countries}</video:restriction>'
        )
    if video.requires_subscription is not None:
        flag = _yes_no(video.requires_subscription)
        out.append(f"<video:requires_subscription>{flag}</video:requires_subscription>")
    if video.uploader is not None:
        info = f' info="{escape_text(video.uploader.info)}"' if video.uploader.info else ""
        out.append(f"<video:uploader{info}>{escape_text(video.uploader.name)}</video:uploader>")
    if video.platform is not None:
        platforms = " ".join(video.platform.platforms)
        out.append(f'<video:platform relationship="{video.platform.relationship}">{platforms}</video:platform>')
    if video.live is not None:
        out.append(f"<video:live>{_yes_no(video.live)}</video:live>")
    out.append("</video:video>")


def _news(news: News) -> bytes:
    return (
        "<news:news><news:publication>"
        f"<news:name>{escape_text(news.publication_name)}</news:name>"
        f"<news:language>{news.publication_language}</news:language>"
        f"</news:publication><news:publication_date>{w3c(news.publication_date)}</news:publication_date>"
        f"<news:title>{escape_text(news.title)}</news:title></news:news>"
    ).encode()


def entry_from_event(event: PageEvent) -> Entry:
    """Render an upsert's ``<url>`` element once; its bytes are what every sitemap file will hold.

    The lastmod is the event's, else the time of the change; an event whose lastmod is null shows none (its
    ``lastmod_us`` is 0, so it moves no file's lastmod).
    """
    lastmod: date | datetime | None = event.lastmod
    if lastmod is None and not event.no_lastmod:
        lastmod = event.occurred_at
    out = [url_open(event.url, None if lastmod is None else w3c(lastmod), event.changefreq, event.priority)]
    flags = 0
    seen_images: set[str] = set()
    for image in event.images:
        if image.loc not in seen_images:
            seen_images.add(image.loc)
            out.append(image_element(image.loc, image.title, image.caption))
            flags |= FLAG_IMAGE
    for video in event.videos:
        _video(video, out)
        flags |= FLAG_VIDEO
    for hreflang, href in sorted({(a.hreflang, a.href) for a in event.alternates}):
        out.append(f'<xhtml:link rel="alternate" hreflang="{hreflang}" href="{escape_text(href)}"/>')
        flags |= FLAG_XHTML
    news = b"" if event.news is None else _news(event.news)
    news_us = 0 if event.news is None else moment_micros(event.news.publication_date)
    return Entry(
        url=event.url,
        key=page_key(event.url),
        section=event.page_section,
        lastmod_us=0 if lastmod is None else moment_micros(lastmod),
        body="".join(out).encode(),
        news=news,
        news_us=news_us,
        flags=flags,
    )


def check_entry_size(event: PageEvent, entry: Entry, prefix: str = "") -> None:
    """Raise EventRejected when ``entry`` is over MAX_ENTRY_BYTES, naming the part of the event that weighs
    most: ``url``, ``news``, or the largest of images, videos and alternates (the item when it is most of it)."""
    if entry.size <= MAX_ENTRY_BYTES:
        return
    parts: dict[str, list[tuple[int, dict[str, int]]]] = {
        "url": [(len(escape_text(event.url)), {})],
        "images": [
            (len(image_element(i.loc, i.title, i.caption)), _texts(loc=i.loc, caption=i.caption, title=i.title))
            for i in event.images
        ],
        "videos": [],
        "alternates": [(len(escape_text(a.href)) + 40, {}) for a in event.alternates],
        "news": [(len(entry.news), {} if event.news is None else _texts(title=event.news.title))],
    }
    for video in event.videos:
        out: list[str] = []
        _video(video, out)
        uploader = video.uploader.name if video.uploader is not None else None
        texts = _texts(title=video.title, description=video.description, tags="".join(video.tags))
        texts.update(_texts(**{"uploader.name": uploader}))
        parts["videos"].append((sum(map(len, out)), texts))
    name, items = max(parts.items(), key=lambda part: sum(size for size, _ in part[1]))
    total = sum(size for size, _ in items)
    field = name
    index = max(range(len(items)), key=lambda i: items[i][0])
    size, texts = items[index]
    if size * 2 > total:  # one item is most of it: name the item, and its text when that is most of the item
        field = f"{name}[{index}]" if name in ("images", "videos", "alternates") else name
        text, text_size = max(texts.items(), key=lambda t: t[1], default=("", 0))
        if text_size * 2 > size:
            field += f".{text}"
    path = f"{prefix}{field}"
    reason = (
        f"the page's sitemap entry would be {entry.size:,} bytes once rendered and escaped ({total:,} of them "
        f"from {name}); an entry may be at most {MAX_ENTRY_BYTES:,} bytes (DynamoDB's 400 KB item limit)"
    )
    raise EventRejected.single(path, reason)


def _texts(**values: str | None) -> dict[str, int]:
    """Escaped lengths of the text fields of one item."""
    return {name: len(escape_text(value)) for name, value in values.items() if value}
