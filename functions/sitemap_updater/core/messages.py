"""Every message one function sends another, built and read here: rebuild marks (ingest, sweep), news-expiry and
cleanup requests (upkeep, index), change records (section and index rebuilds, for the notifier) and index
requests (section rebuilds, index). Each comes with its FIFO message group and deduplication ID.

Groups: one per section on the rebuild queue (its rebuilds never overlap), one for the index and one for the
notifier. Deduplication IDs name what a message stands for, so a message sent again by a retried invocation
within SQS's five-minute window is dropped (and an index request stands for every request of its window).

Every body carries its format's version (``v``, ``core/formats.py``); a reader refuses any other version with
UnknownFormat, which its function reports as an unreadable message (dead-lettered with that reason)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sitemap_updater.core.feed import FeedChange
from sitemap_updater.core.formats import MESSAGES, check
from sitemap_updater.core.sharding import section_slug

INDEX_GROUP = "index"
# Index requests that may wait (a section rebuild that only moved lastmods of files the index names): their own
# group, so a request held there never holds up one that adds or removes a file.
INDEX_WAIT_GROUP = "index-lastmods"
NOTIFY_GROUP = "notify"
MAX_MARKS_PER_MESSAGE = 100
_MAX_MARK_BYTES = 200_000  # under SQS's 256 KiB per message, with URLs of up to 2,047 characters
# A change record's JSON at most: under 256 KiB (SQS's message limit is 1 MiB; a queue may set less), with room
# for the empty objects' keys (_ITEM_SLACK: the last item of an object has no ', ').
MAX_RECORD_BYTES = 200_000
_ITEM_SLACK = 64


class Message(NamedTuple):
    """One message to send: its JSON body, FIFO message group and deduplication ID."""

    body: dict[str, Any]
    group: str
    dedup: str


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def with_site(body: dict[str, Any], host: str) -> dict[str, Any]:
    """A message of the site ``host`` (a site added at run time, core/site_keys.py): its body names the site. The
    stack's own site's messages name none, as every message before sites did: a reader takes its absence for it."""
    return {**body, "site": host} if host else body


def site_of(body: Mapping[str, Any]) -> str:
    """The host of the site a message is for ("": the stack's own site); ValueError for a ``site`` that is not a
    host name."""
    site = body.get("site", "")
    if not isinstance(site, str):
        raise ValueError(f"a message's site must be a host name, not {site!r}")
    return site


def check_message(body: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    """``body``, once its format version is found to be the one this code reads; else UnknownFormat."""
    check(body.get("v"), MESSAGES, what)
    return body


# --- the rebuild queue ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DirtyMark:
    """A rebuild request: a page changed (ingest, sweep), a file's news expired (upkeep: its range's first key)
    or the section has retired files to delete (``cleanup``: index, upkeep)."""

    section: str
    url: str | None = None
    key: int | None = None
    change: str | None = None
    cleanup: bool = False
    at_us: int | None = None  # when ingest recorded the change (sent the mark)
    batch_changes: int = 0  # how many changes the ingest batch that sent it recorded, every section's (a burst)
    news: bool = False  # its message names a page with a news item (held at most the news freshness)
    due_us: int = 0  # a merged request's due time, as recorded for its section (0: not merged)


class PageMark(NamedTuple):
    """A changed page as a rebuild mark names it: its URL, key, rank (deduplication) and change (or None)."""

    url: str
    key: int
    rank: str
    change: str | None
    news: bool = False  # the page has a news item: its rebuild is held at most the news freshness


def mark_messages(section: str, at_us: int, marks: list[PageMark], batch_changes: int = 0) -> Iterator[Message]:
    """Rebuild requests for changed pages of one section: up to :data:`MAX_MARKS_PER_MESSAGE` pages a message
    (and under SQS's size limit), so one rebuild of up to ten messages covers many changes. The deduplication ID
    names the pages and their ranks, so a batch sent again is dropped; ``at`` (for the event-to-publish latency)
    and ``changes`` (what the whole ingest batch recorded, which tells a burst) are not part of it."""
    start = 0
    while start < len(marks):
        size, end = 0, start
        while end < len(marks) and end - start < MAX_MARKS_PER_MESSAGE and size < _MAX_MARK_BYTES:
            size += len(marks[end].url) + 64
            end += 1
        chunk = marks[start:end]
        body = {
            "v": MESSAGES,
            "section": section,
            "at": at_us,
            "changes": batch_changes,
            "marks": [{"url": m.url, "key": f"{m.key:016x}", "change": m.change} for m in chunk],
        }
        if any(m.news for m in chunk):
            body["news"] = True  # optional: a message without it (any written before) holds no news page
        ranks = "|".join(f"{m.url}|{m.rank}" for m in chunk)
        yield Message(body, section_slug(section), _sha256(f"{section}|{ranks}"))
        start = end


def merged_messages(section: str, marks: list[DirtyMark], sources: list[str], due_us: int) -> list[Message]:
    """The changed pages of several waiting rebuild requests of ``section`` (received messages ``sources``) as
    few requests as their pages allow, each dated by the oldest change it holds and flagged news if any was:
    a section that waits longer than its group can hold messages keeps its changes in a few. The deduplication
    ID names the messages merged, so a merge sent again (the batch retried) is dropped."""
    pages = [PageMark(m.url, m.key, "", m.change, m.news) for m in marks if m.url is not None and m.key is not None]
    at_us: dict[tuple[str | None, int | None], int] = {}
    for mark in marks:
        at_us[mark.url, mark.key] = min(at_us.get((mark.url, mark.key), mark.at_us or 0), mark.at_us or 0)
    merged = []
    for number, message in enumerate(mark_messages(section, 0, pages, max(m.batch_changes for m in marks))):
        chunk = [(mark["url"], int(mark["key"], 16)) for mark in message.body["marks"]]
        body = message.body | {"at": min(at_us[page] for page in chunk), "due": due_us}
        merged.append(Message(body, message.group, _sha256(f"merge|{section}|{number}|{'|'.join(sources)}")))
    return merged


def news_expiry_message(section: str, range_start: int, file_name: str, news_until_us: int) -> Message:
    """A rebuild of the file starting at ``range_start`` once its newest news item is two days old."""
    body = {"v": MESSAGES, "section": section, "key": f"{range_start:016x}"}
    return Message(body, section_slug(section), _sha256(f"news|{file_name}|{news_until_us}"))


def repair_message(section: str, range_start: int, file_name: str, found_us: int) -> Message:
    """A rebuild of the file starting at ``range_start``, found missing or changed out of band (reconciliation)."""
    body = {"v": MESSAGES, "section": section, "key": f"{range_start:016x}"}
    return Message(body, section_slug(section), _sha256(f"repair|{file_name}|{found_us}"))


def cleanup_message(section: str, generation: int) -> Message:
    """A request that ``section`` delete the files the index no longer names (once per index generation)."""
    body = {"v": MESSAGES, "section": section, "cleanup": True}
    return Message(body, section_slug(section), _sha256(f"cleanup|{section}|{generation}"))


def read_rebuild_request(body: Mapping[str, Any]) -> list[DirtyMark]:
    """The marks one rebuild message carries: a list of changed pages (``marks``), in the order they changed, one
    file's key (news expiry, repair) or a cleanup request. UnknownFormat for a message of another version."""
    section = str(check_message(body, "a rebuild request")["section"])
    if "marks" in body:
        at, batch, news, due = int(body["at"]), int(body["changes"]), body.get("news") is True, int(body.get("due", 0))
        return [
            DirtyMark(section, m["url"], int(m["key"], 16), m["change"], False, at, batch, news, due)
            for m in body["marks"]
        ]
    if body.get("cleanup") is True:
        return [DirtyMark(section, cleanup=True)]
    return [DirtyMark(section, key=int(body["key"], 16))]


# --- the notify queue ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class ChangeRecords:
    """What a batch of change records says: each changed URL with the digest of the entry now shown ("" once
    removed), the last record's in FIFO order, and whether an index was published."""

    digests: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, str] = field(default_factory=dict)  # of the page state behind each digest
    indexes: set[str] = field(default_factory=set)  # index files published (sitemap.xml, sitemap-index-<n>.xml)
    changes: list[FeedChange] = field(default_factory=list)  # every change in FIFO order, for the feed
    # pages deleted where no file showed them: removed only if last announced as shown (URL -> rank, section)
    unless_unannounced: dict[str, tuple[str, str]] = field(default_factory=dict)
    # pages a file showed in bytes never surely announced, moved on since: removed unless the search engines were
    # told they exist (URL -> rank, section)
    unless_told: dict[str, tuple[str, str]] = field(default_factory=dict)
    # pages whose file shows the entry announced before, by a newer state ("restated"): announced only if the
    # search engines were told otherwise since (another section's file showed the page meanwhile)
    restated: set[str] = field(default_factory=set)


def change_record(
    section: str,
    changed: dict[str, str],
    digests: dict[str, str],
    files: list[str],
    lastmods: dict[str, int],
    ranks: dict[str, str],
    unless_unannounced: dict[str, str] | None = None,
    unless_told: dict[str, str] | None = None,
) -> Message:
    """What a section rebuild published: the changed URLs (``added``, ``updated``, ``removed``), their entries'
    digests, the files written, the lastmod each page shows now (microseconds; when it was published for a page
    without one) and the rank of the page state each shows (so an older record, redelivered after a newer one was
    announced, is known to be older); and the pages deleted in the section that none of its files showed (URL ->
    rank), to announce as removed only if the search engines were last told they exist (another section's file
    showed them); and the pages a file showed only in bytes put by an attempt that died (its record maybe unsent)
    and that moved to another section since (URL -> rank of the state shown), to announce as removed unless the
    search engines were told they exist. One group: notifier runs never overlap."""
    body = {"v": MESSAGES, "section": section, "changed": changed, "digests": digests, "files": files}
    body["lastmods"] = lastmods
    body["ranks"] = ranks
    if unless_unannounced:
        body["removed_if_announced"] = unless_unannounced
    if unless_told:
        body["removed_unless_told"] = unless_told
    return Message(body, NOTIFY_GROUP, _sha256(json.dumps(body, sort_keys=True)))


def change_records(
    section: str,
    changed: dict[str, str],
    digests: dict[str, str],
    files: list[str],
    lastmods: dict[str, int],
    ranks: dict[str, str],
    unless_unannounced: dict[str, str] | None = None,
    unless_told: dict[str, str] | None = None,
) -> list[Message]:
    """:func:`change_record`, in as many messages as SQS needs: each of at most :data:`MAX_RECORD_BYTES` of JSON,
    holding every field of the URLs it names (in URL order; the files in the first). A file whose snapshot was
    lost announces every page it shows, and a burst rebuilds a thousand pages at once: one record of 10,000 URLs
    is megabytes. The notifier reads records URL by URL, so the parts say together what the whole would."""
    unless, untold = unless_unannounced or {}, unless_told or {}
    fields: list[dict[str, Any]] = [changed, digests, lastmods, ranks, unless, untold]
    parts: list[list[str]] = [[]]
    size = len(json.dumps(change_record(section, {}, {}, files, {}, {}, {}).body)) + _ITEM_SLACK
    for url in sorted(changed.keys() | unless.keys() | untold.keys()):
        key = len(json.dumps(url)) + 4  # '"url": ' and ', ' in each object that names it
        cost = sum(key + len(json.dumps(values[url])) for values in fields if url in values)
        if parts[-1] and size + cost > MAX_RECORD_BYTES:
            parts.append([])
            size = len(json.dumps(change_record(section, {}, {}, [], {}, {}, {}).body)) + _ITEM_SLACK
        parts[-1].append(url)
        size += cost
    messages = []
    for number, urls in enumerate(parts):
        named, ranked = {url: changed[url] for url in urls if url in changed}, {u: ranks[u] for u in urls if u in ranks}
        shown = {url: digests[url] for url in urls if url in digests}
        dated = {url: lastmods[url] for url in urls if url in lastmods}
        left = {url: unless[url] for url in urls if url in unless}
        moved = {url: untold[url] for url in urls if url in untold}
        first = files if number == 0 else []
        messages.append(change_record(section, named, shown, first, dated, ranked, left, moved))
    return messages


def index_change_record(generation: int, sha256: str, names: list[str]) -> Message:
    """An index rebuild published index files (``names``; ``sha256`` of them all): Search Console is told."""
    body = {"v": MESSAGES, "index": {"generation": generation, "sha256": sha256, "names": sorted(names)}}
    return Message(body, NOTIFY_GROUP, _sha256(json.dumps(body, sort_keys=True)))


# The scheduled wake-up's body as EventBridge sends it (a Scheduled Event's fields that matter here); the notifier
# sends it on into each site's own group that holds changes back.
WAKE_UP: Mapping[str, Any] = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def is_wake_up(body: Mapping[str, Any]) -> bool:
    """Whether a body on the notify queue is the scheduled wake-up (an EventBridge Scheduled Event, AWS's format)."""
    return body.get("source") == "aws.events"


def read_change_records(bodies: Sequence[Mapping[str, Any]]) -> ChangeRecords:
    """Change records in FIFO order (UnknownFormat for one of another version); the scheduled wake-up says
    nothing. Of several records of a URL the one of the highest rank wins (the last, when ranks are equal)."""
    records = ChangeRecords()
    for body in bodies:
        if is_wake_up(body):
            continue
        check_message(body, "a change record")
        if "index" in body:
            records.indexes.update(body["index"]["names"])
            continue
        digests, lastmods, ranks, section = body["digests"], body["lastmods"], body["ranks"], str(body["section"])
        for url, change in body["changed"].items():
            rank = str(ranks[url])  # "" for a page removed here that has no page state at all
            if rank and rank < records.ranks.get(url, ""):
                continue  # an older state than one this batch already holds (a redelivery split differently)
            if change == "restated":  # not a change of what its file shows: the feed does not list it
                if url not in records.digests:  # else a change of this batch, not announced yet, stays one
                    records.restated.add(url)
                records.digests[url], records.ranks[url] = str(digests[url]), rank
                continue
            records.digests[url] = str(digests[url])
            records.ranks[url] = rank
            records.restated.discard(url)
            updated = int(lastmods.get(url, 0))  # none for a page no file shows now
            records.changes.append(FeedChange(url, str(change), section, updated))
        for url, rank in body.get("removed_if_announced", {}).items():
            if str(rank) >= records.unless_unannounced.get(url, ("", ""))[0]:
                records.unless_unannounced[url] = (str(rank), section)
        for url, rank in body.get("removed_unless_told", {}).items():
            if str(rank) >= records.unless_told.get(url, ("", ""))[0]:
                records.unless_told[url] = (str(rank), section)
    return records


# --- the index queue -----------------------------------------------------------------------------------------
def index_request(body: dict[str, Any], now_us: int, window_us: int, unique: str) -> Message:
    """A request for an index rebuild. The index queue delays every request by the CDN's cache lifetime L, and
    the requests sent within one window of L/2 (``window_us``) share a deduplication ID: SQS delivers the first of
    them after every request it stands for was sent, and that one rebuild reads every file record they were sent
    for. Without a window (nothing caches) each request is its own (``unique``)."""
    key = f"index|{now_us // window_us}" if window_us else unique
    return Message({"v": MESSAGES, **body}, INDEX_GROUP, _sha256(key))


def section_index_request(section: str, published: str, now_us: int, window_us: int, due_us: int = 0) -> Message:
    """A section rebuild's request; ``published`` names what it published (its own ID without a window). With
    ``due_us`` (it only moved lastmods of files the index names) it goes to the waiting group with that due time:
    the index function rebuilds once one of its requests is due, or at once for any other request."""
    if due_us:
        body = {"v": MESSAGES, "section": section, "due_us": due_us}
        return Message(body, INDEX_WAIT_GROUP, _sha256(f"{section}|{published}|{due_us}"))
    return index_request({"section": section}, now_us, window_us, f"{section}|{published}")


def index_request_due_us(body: Mapping[str, Any]) -> int:
    """When an index request must be rebuilt by (0: at once; ``section_index_request``)."""
    due = body.get("due_us", 0)
    if not isinstance(due, int) or isinstance(due, bool) or due < 0:
        raise ValueError(f"an index request's due_us must be a whole number of microseconds, not {due!r}")
    return due


def pending_index_request(generation: int, now_us: int, window_us: int) -> Message:
    """An index rebuild found records published again since it read them: another rebuild must name them."""
    return index_request({"pending": generation}, now_us, window_us, f"pending|{generation}")


def bootstrap_index_request(run: str, now_us: int, window_us: int) -> Message:
    """A bootstrap rendered its ranges: the index names their files."""
    return index_request({"bootstrap": run}, now_us, window_us, f"bootstrap|{run}|{now_us}")


def settle_index_request(generation: int, now_us: int, window_us: int, due_us: int = 0) -> Message:
    """An index named files with their previous lastmods; once the CDN cannot serve the old, name their own (with
    ``due_us``: by then, in the waiting group, as ``section_index_request``)."""
    if due_us:
        body = {"v": MESSAGES, "settle": generation, "due_us": due_us}
        return Message(body, INDEX_WAIT_GROUP, _sha256(f"settle|{generation}|{due_us}"))
    return index_request({"settle": generation}, now_us, window_us, f"settle|{generation}")
