"""Notify search engines only about real changes: IndexNow with the changed URLs, Search Console for the index.
A URL that changes again inside IndexNow's quiet window is held and sent once the window ends."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from sitemap_updater.core.feed import FEED_NAME, FEED_STATE, FeedChange, FeedState, apply, render_atom
from sitemap_updater.core.messages import ChangeRecords, read_change_records
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.pages import SentRecord
from sitemap_updater.ports import Http, HttpResponse, Manifest, SearchConsoleApi
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.site_marks import HELD

MAX_URLS_PER_REQUEST = 10_000
MAX_ATTEMPTS = 4
MAX_DELAY_S = 30.0
# Every request of one invocation, its retries and their waits end within this many seconds (a request is only
# started when its HTTP timeout still fits): the notify function's 150 s timeout keeps 60 s for DynamoDB and S3.
RETRY_BUDGET_S = 90.0
ACCEPTED = (200, 202)
NOT_RETRIED = (400, 403, 422)
INDEXNOW = "indexnow"
SEARCH_CONSOLE = "search-console"
# How long a sent record outlives its quiet window: longer than any SQS redelivery of the same change.
SENT_RETENTION_S = 2 * 86_400


class NotifyRetry(RuntimeError):
    """A search engine answered 429 or 5xx on every attempt, or the time budget ran out; SQS delivers the
    record again later."""


@dataclass(frozen=True, slots=True)
class Notification:
    """One request (or, in a dry run, one request not sent): where, what answer, which URLs."""

    endpoint: str
    status: int | None
    urls: list[str]
    attempts: int = 0
    body: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "status": self.status, "urls": self.urls}


@dataclass(slots=True)
class NotifyResult:
    sent: list[Notification] = field(default_factory=list)
    rejected: list[Notification] = field(default_factory=list)
    already_sent: list[str] = field(default_factory=list)  # their current content was announced already
    held: list[str] = field(default_factory=list)  # changed inside their quiet window: sent when it ends
    feed_written: bool = False  # the recent-changes feed changed


@dataclass(frozen=True)
class Notifiers:
    """The HTTP side of notifications, built once per cold start."""

    http: Http
    search_console: SearchConsoleApi | None = None
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic

    def deadline(self) -> float:
        """When the HTTP requests of an invocation starting now must be done by."""
        return self.monotonic() + RETRY_BUDGET_S


def retry_delay(response: HttpResponse, attempt: int) -> float:
    """Seconds to wait: Retry-After (seconds or an HTTP date) when given, else exponential; capped."""
    value = next((v for k, v in response.headers.items() if k.lower() == "retry-after"), None)
    delay = float(2**attempt)
    if value:
        if value.strip().isdigit():
            delay = float(value.strip())
        else:
            moment = email.utils.parsedate_to_datetime(value)
            delay = max(0.0, moment.timestamp() - time.time())
    return min(delay, MAX_DELAY_S)


def _send(notifiers: Notifiers, call: Callable[[], HttpResponse], deadline: float) -> tuple[HttpResponse, int]:
    """Up to MAX_ATTEMPTS requests while 429 or 5xx, each started only if it can end (its wait and its HTTP
    timeout) before ``deadline``."""
    if notifiers.monotonic() + notifiers.http.timeout > deadline:
        raise NotifyRetry(f"the {RETRY_BUDGET_S:.0f} s budget for requests is spent; will retry")
    for attempt in range(1, MAX_ATTEMPTS + 1):
        response = call()
        if response.status != 429 and response.status < 500:
            return response, attempt
        delay = retry_delay(response, attempt)
        if attempt == MAX_ATTEMPTS or notifiers.monotonic() + delay + notifiers.http.timeout > deadline:
            return response, attempt
        notifiers.sleep(delay)
    return response, MAX_ATTEMPTS


def notify(records: list[dict[str, Any]], pipeline: Pipeline, notifiers: Notifiers) -> NotifyResult:
    """Handle change records: ``{"changed": {url: change}}`` from section rebuilds and ``{"index": ...}``
    from index rebuilds; the scheduled wake-up only lets changes held back by the quiet window go out once it has
    ended. Nothing is sent for records without changes."""
    settings = pipeline.settings
    result = NotifyResult()
    read = read_change_records(records)
    now_s = to_micros(pipeline.clock()) // 1_000_000
    if read.unless_unannounced:
        _removals_once_shown(read, pipeline, now_s)
    if read.unless_told and settings.indexnow_key:  # the feed lists what rebuilds announced: nothing to add
        _removals_never_told(read, pipeline, now_s)
    digests = read.digests  # URL -> digest of the entry now shown ("" once removed); in FIFO order
    deadline = notifiers.deadline()
    if settings.indexnow_key:
        _indexnow(digests, read.ranks, pipeline, notifiers, now_s, result, deadline, read.restated)
    if settings.feed_entries and read.changes:
        result.feed_written = update_feed(pipeline, read.changes)
    if notifiers.search_console is not None:
        for index in sorted(read.indexes):
            _search_console(pipeline, notifiers.search_console, notifiers, index, now_s, result, deadline)
    return result


def _removals_once_shown(read: ChangeRecords, pipeline: Pipeline, now_s: int) -> None:
    """Pages deleted in a section none of whose files showed them (``removed_if_announced``) are removed only if
    the search engines were last told they exist, or are to be told (a held change): a file of another section
    showed them, and moved them on before the delete. A page no file ever showed is not announced."""
    # A change of the page in this batch is to be told: its delete, if newer, replaces it.
    told = {url for url, (rank, _) in read.unless_unannounced.items() if url in read.digests and rank > read.ranks[url]}
    pending = sorted(url for url in read.unless_unannounced if url not in read.digests)
    if pending and not pipeline.settings.indexnow_key:
        told.update(pending)  # only the feed hears of them: removing what it does not list is nothing
    elif pending:
        sent = pipeline.store.sent_records(pending, INDEXNOW, now_s)
        held = pipeline.store.held(INDEXNOW, now_s)
        # Told it exists; or told of this very removal, by an earlier attempt of this batch that died before the
        # feed heard of it (its "" of the same rank): IndexNow finds it done, the feed drops the page.
        told.update(
            url
            for url in pending
            for rank in [read.unless_unannounced[url][0]]
            if any(url in r and (r[url].digest != "" or r[url].rank == rank) for r in (sent, held))
        )
    for url in sorted(told):
        rank, section = read.unless_unannounced[url]
        read.digests[url], read.ranks[url] = "", rank
        read.changes.append(FeedChange(url, "removed", section, 0))


def _removals_never_told(read: ChangeRecords, pipeline: Pipeline, now_s: int) -> None:
    """Pages a file showed only in bytes an attempt put and died before its change record was surely sent, moved on
    to another section since (``removed_unless_told``): announced as removed unless the search engines were told
    they exist (that record was sent) or are to be told (held), with the rank of the state shown, so that the next
    section's newer change wins. Else a delete there before any file there showed the page would leave a page a
    file showed never announced."""
    pending = sorted(url for url in read.unless_told if url not in read.digests)
    if not pending:
        return
    sent = pipeline.store.sent_records(pending, INDEXNOW, now_s)
    held = pipeline.store.held(INDEXNOW, now_s)
    for url in pending:
        if not any(url in r and r[url].digest != "" for r in (sent, held)):
            # The newest rank the batch knows for the removal: a delete of the page in this batch (its tombstone's)
            rank = max(read.unless_told[url][0], read.unless_unannounced.get(url, ("", ""))[0])
            read.digests[url], read.ranks[url] = "", rank


def _still_current(
    store: Manifest, digests: dict[str, str], ranks: dict[str, str], sent: dict[str, SentRecord]
) -> set[str]:
    """Of the pages shown again in the very state whose removal IndexNow was told (a ``removed_unless_told`` of
    bytes an attempt put), those whose page state is still that one: the file of their own section shows them
    (the removal was sent while their mark was on its way, soak seed 2751), not a record of the dead attempt
    redelivered after they moved on. One GetItem each, only for those."""
    again = [
        url
        for url, digest in digests.items()
        if digest and url in sent and not sent[url].digest and sent[url].rank and sent[url].rank == ranks.get(url)
    ]
    found = set()
    for url in again:
        page = store.get_page(url)
        if page is not None and page.kind != "deleted" and page.rank == ranks[url]:
            found.add(url)
    return found


@dataclass(slots=True)
class IndexNowPlan:
    """What to do with each URL: send it now, hold it until its window ends, or nothing (already announced, or
    held earlier and announced since); ``release`` lists the held changes to forget once the sends are recorded."""

    send: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, str] = field(default_factory=dict)  # of what is sent
    hold: dict[str, SentRecord] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    release: list[str] = field(default_factory=list)


def plan_indexnow(
    digests: dict[str, str],
    held: dict[str, SentRecord],
    sent: dict[str, SentRecord],
    now_s: int,
    ranks: dict[str, str] | None = None,
    restated: set[str] | None = None,
    current: set[str] | None = None,
) -> IndexNowPlan:
    """Decide per URL. ``digests`` are the changes of this batch (newer than anything held), ``held`` the changes
    waiting out a window and ``sent`` what IndexNow last accepted. A URL is announced once per content and at most
    once per window: a change inside the window is held until the window ends, never dropped. ``ranks`` are those
    of the page states behind ``digests``: a change older than what was announced already is not announced (a
    change record redelivered after a newer one was). A ``restated`` URL's file shows the entry it announced
    before: it is announced only when the search engines were told something else since. ``current``: URLs whose
    page state is, right now, the one behind their change (see ``_still_current``)."""
    ranks, restated, current = ranks or {}, restated or set(), current or set()
    plan = IndexNowPlan()
    # A change older than the one held for its URL (a record redelivered, or another section's older removal) is
    # superseded by it: the held change stays, and goes out when its window ends.
    older = {url for url, h in held.items() if url in digests and h.rank and ranks.get(url) and ranks[url] < h.rank}
    plan.done += sorted(url for url in older if held[url].quiet_until_s > now_s)  # a due one is sent below
    digests = {url: digest for url, digest in digests.items() if url not in older}
    due = {url: h for url, h in held.items() if h.quiet_until_s <= now_s and url not in digests}
    for url in sorted({**due, **digests}):
        digest = digests[url] if url in digests else due[url].digest
        rank = ranks.get(url, "") if url in digests else due[url].rank
        last = sent.get(url)
        if url in held:
            plan.release.append(url)  # replaced below when it must wait again
        if last is not None and last.digest == digest:
            plan.done.append(url)  # this content was announced already (a redelivery, or a second record)
        elif last is None and url in restated and url in digests and url not in held:
            plan.done.append(url)  # told nothing else since (or so long ago that it was forgotten)
        elif last is not None and rank and last.rank and rank < last.rank:
            plan.done.append(url)  # a newer state of the page was announced already
        elif last is not None and rank and rank == last.rank and not last.digest and digest and url not in current:
            # The same state's entry after its removal was announced: a record of bytes an attempt put, redelivered
            # after the removal (``removed_unless_told``) that carried that state's rank, the page having moved on.
            plan.done.append(url)
        elif url in due and last is not None and last.quiet_until_s > due[url].quiet_until_s:
            plan.done.append(url)  # announced after it was held, by a newer change that replaced it
        elif last is not None and last.quiet_until_s > now_s:
            plan.hold[url] = SentRecord(last.quiet_until_s, digest, rank)
        else:
            plan.send[url] = digest
            plan.ranks[url] = rank
    plan.release = [url for url in plan.release if url not in plan.hold]
    return plan


def _indexnow(
    digests: dict[str, str],
    ranks: dict[str, str],
    pipeline: Pipeline,
    notifiers: Notifiers,
    now_s: int,
    result: NotifyResult,
    deadline: float,
    restated: set[str] | None = None,
) -> None:
    """POST the changed URLs and the held changes whose window has ended. A change inside a URL's window is held
    (``held#indexnow`` items) and sent by the first run after the window, which the scheduled wake-up starts;
    what was accepted is recorded before its held change is released, so a crash at any point loses nothing and
    repeats at most the one request whose answer was not recorded. A dry run records as if accepted, so it
    reports the same lists."""
    store = pipeline.store
    held = store.held(INDEXNOW, now_s)
    due = [url for url, h in held.items() if h.quiet_until_s <= now_s]
    if not digests and not due:
        return
    sent = store.sent_records(sorted({*digests, *due}), INDEXNOW, now_s)
    plan = plan_indexnow(digests, held, sent, now_s, ranks, restated, _still_current(store, digests, ranks, sent))
    result.already_sent, result.held = sorted(plan.done), sorted(plan.hold)
    if plan.hold:
        if pipeline.marks is not None:  # a site added at run time: the wake-ups visit it while it holds changes
            pipeline.marks.touch(HELD)
        store.hold(plan.hold, INDEXNOW, max(h.quiet_until_s for h in plan.hold.values()) + SENT_RETENTION_S)
    fresh = sorted(plan.send)
    if fresh:
        _post_indexnow(fresh, plan.send, plan.ranks, pipeline, notifiers, now_s, result, deadline)
    if plan.release:
        store.release(plan.release, INDEXNOW)


def _post_indexnow(
    fresh: list[str],
    digests: dict[str, str],
    ranks: dict[str, str],
    pipeline: Pipeline,
    notifiers: Notifiers,
    now_s: int,
    result: NotifyResult,
    deadline: float,
) -> None:
    settings = pipeline.settings
    key = settings.indexnow_key
    pipeline.bucket.put_if_absent(f"{key}.txt", key.encode())  # the key file, served at the site root by the CDN
    host = urlsplit(pipeline.site.base_url).netloc
    quiet = now_s + settings.indexnow_window_seconds
    for start in range(0, len(fresh), MAX_URLS_PER_REQUEST):
        chunk = fresh[start : start + MAX_URLS_PER_REQUEST]
        body = {"host": host, "key": key, "keyLocation": f"{pipeline.site.base_url}/{key}.txt", "urlList": chunk}
        if settings.notify_dry_run:
            pipeline.store.mark_sent(
                {u: digests[u] for u in chunk}, INDEXNOW, quiet, quiet + SENT_RETENTION_S, {u: ranks[u] for u in chunk}
            )
            result.sent.append(Notification(settings.indexnow_endpoint, None, chunk))
            continue
        post = partial(notifiers.http.request, "POST", settings.indexnow_endpoint, body)
        response, attempts = _send(notifiers, post, deadline)
        notification = Notification(settings.indexnow_endpoint, response.status, chunk, attempts, response.body)
        if response.status in ACCEPTED:
            pipeline.store.mark_sent(
                {u: digests[u] for u in chunk}, INDEXNOW, quiet, quiet + SENT_RETENTION_S, {u: ranks[u] for u in chunk}
            )
            result.sent.append(notification)
        elif response.status == 429 or response.status >= 500:
            raise NotifyRetry(f"IndexNow answered {response.status} {attempts} times; will retry")
        else:
            result.rejected.append(notification)  # 400, 403, 422: our request is wrong; retrying cannot help


def _search_console(
    pipeline: Pipeline,
    console: SearchConsoleApi,
    notifiers: Notifiers,
    index: str,
    now_s: int,
    result: NotifyResult,
    deadline: float,
) -> None:
    """Submit one index file to Search Console, at most once per interval."""
    settings = pipeline.settings
    feed = pipeline.files.file_url(index)  # where the index is served: the site, or the sitemaps' own host
    sent = pipeline.store.sent_records([feed], SEARCH_CONSOLE, now_s).get(feed)
    if sent is not None and sent.quiet_until_s > now_s:
        return  # submitted within the interval; Google re-reads a submitted index by itself
    quiet = now_s + settings.search_console_interval_seconds
    if settings.notify_dry_run:  # recorded as if accepted, so a dry run reports what a real one sends
        pipeline.store.mark_sent({feed: ""}, SEARCH_CONSOLE, quiet, quiet + 1)
        result.sent.append(Notification(settings.search_console_api, None, [feed]))
        return
    response, attempts = _send(notifiers, lambda: console.submit(settings.property_url, feed), deadline)
    notification = Notification(settings.search_console_api, response.status, [feed], attempts, response.body)
    if response.status in (200, 204):
        pipeline.store.mark_sent({feed: ""}, SEARCH_CONSOLE, quiet, quiet + 1)
        result.sent.append(notification)
    elif response.status == 429 or response.status >= 500:
        raise NotifyRetry(f"Search Console answered {response.status} {attempts} times; will retry")
    else:
        result.rejected.append(notification)


def update_feed(pipeline: Pipeline, changes: list[FeedChange]) -> bool:
    """Apply a batch's changes to the recent-changes feed; publish it when its bytes change. Notifier runs never
    overlap (one FIFO group), so reading and writing its state race nothing. The state is written first and the
    feed carries its version: a run that died between the two leaves a feed older than the state, which the next
    run publishes again (a HEAD when it is current)."""
    bucket, settings = pipeline.bucket, pipeline.settings
    before = FeedState.from_json(bucket.read(FEED_STATE))
    # A page changed in this batch and deleted now leaves the feed, whatever order its sections reported in.
    gone = {url for url in {c.url for c in changes} if _deleted(pipeline, url)}
    after = apply(before, changes, settings.feed_entries, gone)
    if after.entries == before.entries and before.version:
        after = before
    else:
        bucket.publish(FEED_STATE, after.to_json(), after.version)
    atom = render_atom(pipeline.site.base_url, after)
    return bucket.publish(FEED_NAME, atom, after.version, unless_same=True, max_age=settings.feed_max_age_seconds)


def _deleted(pipeline: Pipeline, url: str) -> bool:
    page = pipeline.store.get_page(url)
    return page is None or page.kind == "deleted"


def nothing_held(pipeline: Pipeline) -> bool:
    """Whether the site holds no change back for IndexNow's quiet window (its wake-ups have nothing to send)."""
    return not pipeline.store.held(INDEXNOW, int(pipeline.clock().timestamp()))


def search_console_hint(status: int) -> str:
    """The likely cause of a Search Console refusal, for the log."""
    if status == 403:
        return (
            "403: the service account is not an owner of the Search Console property, or the property type "
            "does not match (sc-domain:example.com for a Domain property, https://www.example.com/ for a URL "
            "prefix); add the account as an owner and check SearchConsoleProperty"
        )
    return f"{status}: the request was refused; see the response body"
