"""Which sites the scheduled functions visit (issue 32, "an idle site costs nothing but its storage").

The stack's own site is visited by every run, as it always was. A site added at run time is visited only while it
has a mark in the stack's register (``SiteDirectory.mark``, items of one partition):

- ``active``: written by ingest before it takes a batch of the site's events (an outbox the sweep may have to
  send), by a section rebuild that shows news or retires files and an index rebuild that stops naming files
  (upkeep's work later), and by ``import`` when it begins; at most once per ``TOUCH_EVERY_S`` per process. The
  hourly sweep and upkeep visit the sites so marked. The sweep deletes a mark once the site is
  quiet: no outbox open, no import running, no rebuild request parked, every file record live and settled, no
  news shown (news expiry is upkeep's) and no file waiting out its grace (cleanups are upkeep's).
- ``held``: written by the notifier before it holds a change back for IndexNow's quiet window; the one-minute
  wake-up visits the sites so marked and deletes the mark once nothing is held.

A mark is deleted only when it was last written more than ``CLEAR_AFTER_S`` ago, and only if it was not written
since it was read (a conditional delete). Whatever a function left for a scheduled job, it left within
``TOUCH_EVERY_S`` plus its timeout (15 minutes at most on Lambda) of writing the mark it found or wrote, so it was
there to see when the job read the site's state, well before ``CLEAR_AFTER_S``: no work is left where no mark
leads to it.

A mark whose site is gone is deleted once it is as old (``forget_stale``), never sooner: a process that wrote it
lately would not write it again for a site removed and added back.

Reconciliation visits every site added at run time in turn, busy or idle, each hour its share of a day (a cursor
of its own): a file changed out of band is repaired within a day, for 1/24 of an hourly visit's cost. The sweep
checks a site's robots.txt in the hour of the day its host's CRC-32 names (``daily_turn``).

A scheduled run visits the stack's own site first, then the marked sites in turn from where its previous run
stopped (``SiteDirectory.cursor``) for as long as its time allows (``visit``): a stack with more marked sites than
one run reaches visits them all over consecutive runs.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sitemap_updater.core.moments import to_micros
from sitemap_updater.service.marks import opened_before

if TYPE_CHECKING:
    from sitemap_updater.ports import SiteDirectory
    from sitemap_updater.service.pipeline import Pipeline

ACTIVE = "active"
HELD = "held"
TOUCH_EVERY_S = 600
CLEAR_AFTER_S = 3_600
# A scheduled run stops visiting sites once it has used this share of the time its invocation had.
TIME_SHARE = 0.7
HOURS_PER_DAY = 24
_FAR_FUTURE_US = 1 << 62


class SiteMarks:
    """One site's marks as the functions of one process write them: at most once per ``TOUCH_EVERY_S`` each."""

    def __init__(self, directory: SiteDirectory, host: str, clock: Callable[[], datetime]) -> None:
        self._directory = directory
        self.host = host
        self._clock = clock
        self._written: dict[str, int] = {}  # kind -> when this process last wrote it, µs

    def touch(self, kind: str) -> None:
        """Write the site's mark of ``kind`` unless this process wrote it less than ``TOUCH_EVERY_S`` ago."""
        now = to_micros(self._clock())
        last = self._written.get(kind)
        if last is not None and 0 <= now - last < TOUCH_EVERY_S * 1_000_000:
            return
        self._directory.mark(kind, self.host, now)
        self._written[kind] = now


def active_quiet(pipeline: Pipeline) -> bool:
    """Whether nothing the hourly functions do is left for the site: no outbox open (whatever its age), no import
    running, nothing parked, and every file record live, settled, showing no news."""
    store = pipeline.store
    if store.outboxes(opened_before(_FAR_FUTURE_US)) or store.import_running() or store.oldest_parked_us() is not None:
        return False
    return all(
        f.state == "live" and not f.news_until_us and not f.pending_index and not f.unsettled and f.pending is None
        for f in store.files()
    )


def clear_if_quiet(
    pipeline: Pipeline,
    directory: SiteDirectory,
    kind: str,
    host: str,
    marked_us: int,
    quiet: Callable[[Pipeline], bool],
) -> bool:
    """Delete the site's mark of ``kind`` (read as written at ``marked_us``) when it is older than ``CLEAR_AFTER_S``,
    ``quiet`` holds and it was not written since; whether it was deleted."""
    if to_micros(pipeline.clock()) - marked_us <= CLEAR_AFTER_S * 1_000_000 or not quiet(pipeline):
        return False
    return directory.unmark(kind, host, marked_us)


def daily_turn(host: str, hour: int) -> bool:
    """Whether ``hour`` (hours since the epoch) is the site's hour of the day (its robots.txt check)."""
    return zlib.crc32(host.encode()) % HOURS_PER_DAY == hour % HOURS_PER_DAY


def forget_stale(directory: SiteDirectory, kind: str, host: str, marked_us: int, now_us: int) -> bool:
    """Delete the mark of a host that is no active site (removed, or being removed) once it is older than
    ``CLEAR_AFTER_S``, if not written since: a site removed and added again within the hour keeps its mark, which a
    process that wrote it lately does not write again."""
    if now_us - marked_us <= CLEAR_AFTER_S * 1_000_000:
        return False
    return directory.unmark(kind, host, marked_us)


@dataclass(frozen=True, slots=True)
class Due:
    """A site a scheduled run is to visit: its host ("": the stack's own site), its pipeline, and when its mark
    was written (None: it has none, e.g. the stack's own site)."""

    host: str
    pipeline: Pipeline
    marked_us: int | None = None


@dataclass(frozen=True, slots=True)
class Deadline:
    """When a scheduled run stops visiting sites (``end``: ``TIME_SHARE`` of the time its invocation had), and from
    when it records each site before visiting it (``late``: half way there), on ``monotonic``'s clock."""

    end: float
    late: float
    monotonic: Callable[[], float] = time.monotonic

    @classmethod
    def within(cls, seconds: float, monotonic: Callable[[], float] = time.monotonic) -> Deadline:
        now = monotonic()
        return cls(now + seconds * TIME_SHARE, now + seconds * TIME_SHARE / 2, monotonic)


@dataclass(frozen=True, slots=True)
class Visits:
    """What a scheduled run visited, how many sites it left for the next run, and the sites whose work failed
    (host, the error): the others were visited all the same."""

    visited: list[Due]
    left: int
    failed: list[tuple[str, str]]


def visit(
    job: str,
    dues: Sequence[Due],
    directory: SiteDirectory | None,
    work: Callable[[Due], None],
    deadline: Deadline,
    limit: int | None = None,
) -> Visits:
    """Run ``work`` for the stack's own site (the due whose host is ""), then for the other ``dues`` in turn from
    the host after ``job``'s cursor (at most ``limit`` of them), until the deadline: every run visits at least one of
    the others, however long the stack's own site took. From half way to the deadline, the cursor names each site
    before its work begins, so a run killed in a site's work (its timeout) is followed by one that begins after
    that site; a run that stops at the deadline leaves the cursor on the last site it began. A site whose work
    fails is reported and the run goes on (one site's fault never starves the others)."""
    own = [d for d in dues if not d.host]
    others = sorted((d for d in dues if d.host), key=lambda d: d.host)
    after = directory.cursor(job) if directory is not None and others else ""
    start = next((i for i, d in enumerate(others) if d.host > after), 0)
    turn = others[start:] + others[:start]
    order = own + (turn if limit is None else turn[: max(0, limit)])
    visited: list[Due] = []
    failed: list[tuple[str, str]] = []
    recorded = after
    for due in order:
        now = deadline.monotonic()
        if now >= deadline.end and any(d.host for d in visited):
            break
        if due.host and directory is not None and now >= deadline.late:
            directory.set_cursor(job, due.host)
            recorded = due.host
        try:
            work(due)
        except Exception as exc:  # reported by the caller; the other sites are visited all the same
            failed.append((due.host, f"{type(exc).__name__}: {exc}"))
        visited.append(due)
    began = next((d.host for d in reversed(visited) if d.host), after)
    if directory is not None and others and began != recorded and (len(visited) < len(order) or limit is not None):
        directory.set_cursor(job, began)
    return Visits(visited, len(own) + len(turn) - len(visited), failed)


class SitesFailed(RuntimeError):
    """Raised at the end of a scheduled run in which some sites' work failed (the others were visited): the
    function's error, which FunctionErrorsAlarm counts; the next run visits them again."""

    def __init__(self, job: str, failed: list[tuple[str, str]]) -> None:
        named = "; ".join(f"{host or 'the stack own site'}: {error}" for host, error in failed[:5])
        more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
        super().__init__(f"{job}: the work of {len(failed)} site(s) failed ({named}{more}); the next run tries again")
