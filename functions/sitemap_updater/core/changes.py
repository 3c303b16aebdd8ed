"""What a rebuild announces: the pages whose entry in a published file was added, changed or removed, found by
comparing the states the section's files were rendered from before (their snapshots: what crawlers may have
seen) with the states the new files are rendered from. Nothing is cut back out of rendered bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from sitemap_updater.core.entry import Entry
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.render import NEWS_WINDOW_US
from sitemap_updater.core.sharding import KeyRange


@dataclass(frozen=True, slots=True)
class View:
    """What one published file showed for its key range: the states its bytes were rendered from, or None when
    they are not known (its snapshot is gone)."""

    key_range: KeyRange
    states: Sequence[PageState] | None


@dataclass(slots=True)
class Changes:
    """``shown``: each page a file shows now whose entry no earlier file showed as it is now (``added`` when none
    showed it at all), with its state; ``vanished``: the pages an earlier file showed that no file of the region
    shows now (removed, or moved to another section)."""

    shown: dict[str, tuple[str, PageState]] = field(default_factory=dict)
    vanished: list[str] = field(default_factory=list)
    # Pages shown now with the entry announced, by a newer state of the page: another section's file may have
    # shown another entry in between (a page moved away and back), which the search engines were told last.
    restated: dict[str, PageState] = field(default_factory=dict)


def shown_digest(state: PageState, as_of_us: int) -> str:
    """The digest of an entry as a file shows it, so that an entry that differs only by news too old to be shown
    looks the same to a crawler and is not announced again ("" for a tombstone)."""
    if state.entry is None:
        return ""
    if state.entry.news and state.entry.news_us < as_of_us - NEWS_WINDOW_US:
        return hashlib.sha256(state.entry.body).hexdigest()
    return state.digest


def changes(
    region: Sequence[KeyRange],
    now: Iterable[PageState],
    announced: Sequence[View],
    since: Sequence[View],
    as_of_us: int,
) -> Changes:
    """Compare the files of ``region`` (the key ranges a rebuild renders or retires), rendered from ``now`` (in key
    order), with what was last announced there (``announced``: the files that held the region when their change
    record was sent, disjoint; a key none of them covers showed nothing) and with bytes put there since and never
    announced (``since``). A page a file shows now is announced when its entry differs from the one announced or
    from one shown since (``added`` when none was announced); a page no file shows now has vanished when it was
    announced or shown since. A file rendered to the entries announced, with nothing shown since, announces
    nothing but the pages whose state is newer (``restated``)."""

    def news(entry: Entry) -> bytes:
        return entry.news if entry.news and entry.news_us >= as_of_us - NEWS_WINDOW_US else b""

    def same(a: PageState, b: PageState) -> bool:  # an unchanged page is mostly the very same state object
        first, second = cast(Entry, a.entry), cast(Entry, b.entry)  # pages shown: tombstones are left out
        return a is b or (first.body == second.body and news(first) == news(second))

    unknown = [view.key_range for view in announced if view.states is None]
    known = sorted((view for view in announced if view.states is not None), key=lambda view: view.key_range.start)
    before = [s for view in known for s in view.states or () if s.entry is not None]
    current = [s for s in now if s.entry is not None]
    result = Changes()

    def appeared(state: PageState) -> None:  # announced "updated" where what was announced is not known
        result.shown[state.url] = ("updated" if any(r.contains(state.key) for r in unknown) else "added", state)

    i = j = 0  # both in key order: a walk in step, which passes the (mostly identical) unchanged pages quickly
    while i < len(before) and j < len(current):
        was, now_shown = before[i], current[j]
        if was is now_shown:
            i, j = i + 1, j + 1
            continue
        first, second = (was.key, was.url), (now_shown.key, now_shown.url)
        if first < second:
            result.vanished.append(was.url)
            i += 1
        elif second < first:
            appeared(now_shown)
            j += 1
        else:
            if not same(was, now_shown):
                result.shown[now_shown.url] = ("updated", now_shown)
            elif was.rank != now_shown.rank:
                result.restated[now_shown.url] = now_shown
            i, j = i + 1, j + 1
    result.vanished += [s.url for s in before[i:]]
    for state in current[j:]:
        appeared(state)
    if since:
        _since(region, current, since, result, same)
    result.vanished = sorted(set(result.vanished))
    for url in [url for url in result.restated if url in result.shown]:
        del result.restated[url]
    return result


def _since(
    region: Sequence[KeyRange],
    current: list[PageState],
    since: Sequence[View],
    result: Changes,
    same: Callable[[PageState, PageState], bool],
) -> None:
    """Add what bytes put since the last announcement showed otherwise: a page shown now that such a file showed
    otherwise or not at all (or that file is not known), and a page such a file showed that no file shows now.
    Only after a rebuild died between its put and its change record."""
    shown_now = {s.url for s in current}
    for view in since:
        covered = [s for s in current if view.key_range.contains(s.key)]
        listed = {
            s.url: s
            for s in view.states or ()
            if s.entry is not None and view.key_range.contains(s.key) and any(r.contains(s.key) for r in region)
        }
        for state in covered:
            other = listed.get(state.url)
            if state.url not in result.shown and (view.states is None or other is None or not same(other, state)):
                result.shown[state.url] = ("updated", state)  # one not announced is "added" already
        result.vanished += [url for url in listed if url not in shown_now]
