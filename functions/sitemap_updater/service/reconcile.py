"""Reconciliation: find published objects that are missing, were changed out of band, or belong to no file, and
repair them through the normal paths. Hourly and cheap: each run reads the file records (one item per file, no
Scan), checks a bounded slice of the files (every file within ``ceil(files / budget)`` runs) and lists only the
bucket's names in that slice's range.

- A file whose object is missing or holds other bytes than its record says is marked unsettled and its range
  rebuilt (its section's FIFO group, as any change): the rebuild renders it again and puts it, whatever the
  record's digest.
- An index file that is missing or changed makes the index record unsettled and asks for an index rebuild,
  which then writes every index file again.
- A sitemap file, text sitemap or further index file that no record and no index names, written more than
  ``min_age_s`` ago (so never one a rebuild has just written), is deleted: no index names it, and none will (a
  text sitemap is named by its file's record while text sitemaps are on).
- So is an object of rebuilds' snapshots that no file record names (its files were rendered again, or a crash
  came before its records), in the run whose slice starts at the first name (the ``_state/`` names sort first).
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from sitemap_updater.core.messages import index_request, repair_message
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.render import is_further_index
from sitemap_updater.core.sharding import INDEX_NAME, text_twin
from sitemap_updater.core.snapshots import written_us as snapshots_written
from sitemap_updater.ports import SiteDirectory
from sitemap_updater.service.index import UNSETTLED, published_indexes
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.site_marks import HOURS_PER_DAY, Deadline, Due, visit

HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
DEFAULT_BUDGET = 200  # files checked per run: 200 GETs an hour, about $0.06 a month
MIN_AGE_S = 3_600


@dataclass(slots=True)
class Reconciliation:
    """What one run checked and repaired."""

    checked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)  # deleted: no record or index names them
    dead_snapshots: list[str] = field(default_factory=list)  # deleted: no record names them


def reconcile(
    pipeline: Pipeline,
    budget: int = DEFAULT_BUDGET,
    min_age_s: int = MIN_AGE_S,
    repair: bool = True,
    period_us: int = HOUR_US,
) -> Reconciliation:
    """Check this run's slice of the published files and the index files; repair what differs (``repair``;
    without it, only report: ``verify --stack`` compares the whole published tree with the manifests so). The
    slice is the one of this ``period_us`` (an hour; a day for a site visited once a day)."""
    now = to_micros(pipeline.clock())
    store, bucket = pipeline.store, pipeline.bucket
    result = Reconciliation()
    records = store.files()
    live = sorted((f for f in records if f.state == "live"), key=lambda f: f.name)
    runs = max(1, -(-len(live) // budget))
    turn = (now // period_us) % runs
    part = live[turn * budget : (turn + 1) * budget]
    for published in part:
        result.checked.append(published.name)
        found = _xml_sha256(bucket.read(published.name))
        if found == published.sha256:
            continue
        (result.missing if found is None else result.changed).append(published.name)
        if not repair:
            continue
        store.mark_unsettled(published)
        message = repair_message(published.section, published.key_range.start, published.name, now)
        pipeline.rebuild_queue.send(*message)
    recorded = store.index_sha()
    _check_indexes(pipeline, recorded, result, now, repair)
    low = "" if turn == 0 or not part else part[0].name
    high = None if turn == runs - 1 or not part else part[-1].name
    known = {f.name for f in records} | set(published_indexes(recorded))
    known |= {key for f in records for key in f.snapshot_keys()}
    if pipeline.settings.text_sitemaps:
        known |= {text_twin(f.name) for f in records}
    _delete_strays(pipeline, known, result, low, high, now - min_age_s * 1_000_000, repair)
    return result


def _xml_sha256(data: bytes | None) -> str | None:
    """The SHA-256 of a sitemap file's XML (what its record holds); "" when it is not gzip at all."""
    if data is None:
        return None
    try:
        return hashlib.sha256(gzip.decompress(data)).hexdigest()
    except (OSError, EOFError, zlib.error):
        return ""


def _check_indexes(pipeline: Pipeline, recorded: str | None, result: Reconciliation, now: int, repair: bool) -> None:
    if not recorded or recorded.startswith(UNSETTLED):
        return  # no index (no pages), or an index rebuild is under way and writes every index file
    digests = published_indexes(recorded)
    wrong = []
    for name in sorted(digests):
        result.checked.append(name)
        data = pipeline.bucket.read(name)
        if data is None or hashlib.sha256(data).hexdigest() != digests[name]:
            (result.missing if data is None else result.changed).append(name)
            wrong.append(name)
    if wrong and repair:
        # Unsettled: the next index rebuild trusts no recorded digest and writes every index file again.
        extra = sorted(set(digests) - {INDEX_NAME})
        pipeline.store.put_index_sha(" ".join([UNSETTLED, *extra]), pipeline.store.next_index_generation())
        pipeline.index_queue.send(*index_request({"repair": now}, now, 0, f"repair|{now}"))


def _delete_strays(
    pipeline: Pipeline,
    known: set[str],
    result: Reconciliation,
    low: str,
    high: str | None,
    before: int,
    repair: bool,
) -> None:
    """Delete sitemap files, further index files and objects of snapshots in the name range (low, high] that
    nothing ``known`` names."""
    for name, written_us in pipeline.bucket.objects(start_after=low):
        if high is not None and name > high:
            break
        if name in known or written_us >= before:
            continue
        if snapshots_written(name) is not None:  # an object of snapshots no record names
            if repair:
                pipeline.bucket.delete(name)
            result.dead_snapshots.append(name)
        elif (name.startswith("sitemap-") and name.endswith((".xml.gz", ".txt"))) or is_further_index(name):
            if repair:
                pipeline.bucket.delete(name)
            result.stray.append(name)


@dataclass(slots=True)
class ReconcileRun:
    """What an hourly reconciliation found over the sites it visited."""

    checked: int = 0
    found: dict[str, list[str]] = field(default_factory=lambda: {"missing": [], "changed": [], "stray": []})
    visited: int = 0
    left: int = 0
    daily_visited: int = 0  # sites added at run time visited (this hour's share of them)
    failed: list[tuple[str, str]] = field(default_factory=list)


def reconcile_sites(
    dues: Sequence[Due], sites: Sequence[Due], directory: SiteDirectory | None, deadline: Deadline
) -> ReconcileRun:
    """Reconcile ``dues`` (the stack's own site), then, with the time left, this hour's share of the ``sites`` added
    at run time in turn (their own cursor; the 24 hours' shares add up to all of them): each once a day while the
    runs have the time, its slices a day's. Drift is rare and not caused by the pipeline (files are put before any
    index names them), so a site's activity does not make it due sooner. A run that cannot take its share leaves
    the rest to the next runs, which go on from where it stopped."""
    run = ReconcileRun()

    def work(due: Due, period: int = HOUR_US) -> None:
        done = reconcile(due.pipeline, period_us=period)
        run.checked += len(done.checked)
        for kind, names in (("missing", done.missing), ("changed", done.changed), ("stray", done.stray)):
            run.found[kind] += [f"{due.host}: {name}" if due.host else name for name in names]

    visits = visit("reconcile", dues, directory, work, deadline)
    run.visited, run.left, run.failed = len(visits.visited), visits.left, list(visits.failed)
    if sites:  # this hour's share of a day's visits: the day's shares add up to every site once
        hour = to_micros(sites[0].pipeline.clock()) // HOUR_US % HOURS_PER_DAY
        quota = (hour + 1) * len(sites) // HOURS_PER_DAY - hour * len(sites) // HOURS_PER_DAY
        daily = visit("reconcile-daily", sites, directory, partial(work, period=DAY_US), deadline, limit=quota)
        run.daily_visited = len(daily.visited)
        run.left += quota - len(daily.visited)  # this hour's share its time did not reach: the next runs take it
        run.failed += daily.failed
    return run
