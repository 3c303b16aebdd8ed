"""Bootstrap: load a site of any size, or render every file again, as steps that many workers run at once.

The steps of the ``BootstrapStateMachine`` (template.yaml), each one Lambda invocation:

1. ``begin``: hold the import for this execution (the ``import`` item names it; refused while another holds it).
   From then on the rebuild function parks the rebuild requests it receives (``park_batch``) instead of
   rebuilding, so no rebuild works on a section while the bootstrap renders it; changes keep being recorded by
   ingest as usual.
2. ``load_chunk``, one per export object under ``_bootstrap/<run>/export/`` (a Distributed Map over the prefix):
   validate each JSONL line (gzip or not), keep the newest state per URL, and record each in the manifest by the
   rank rules of an event (``record_state``), so a line older than a live event, or than a line of another chunk,
   changes nothing. Rejected lines go to the ingest dead-letter queue with their reason. Each chunk is retried
   alone; a retry records nothing twice.
3. ``plan``: the ranges to render (``core/bootstrap_plan.py``) from the chunks' counts and the files already
   published, written to ``_bootstrap/<run>/ranges.json`` for the next map.
4. ``render_range``, one per range: read the range's manifest (it is sorted by section and key), plan its files
   and publish those whose bytes changed, with their snapshots and records, as a rebuild does.
5. ``finish``: retire files of an older layout that a range now covers and ask the index function for the index.
6. ``release`` (``service/bootstrap_release.py``), after a wait that outlasts any worker still running: end the
   hold and send the parked rebuild requests again, so every change recorded meanwhile is published.

Every step's answer is a few counts and names of bounded size, whatever the site's sections: Step Functions
refuses a state's input or output past 256 KiB (``States.DataLimitExceeded``), and the per-section counts go
to the bucket instead. Every payload a step receives, and every file the steps leave for each other under
``_bootstrap/<run>/`` (counts, ranges, segments), carries its format's version (``v``, ``core/formats.py``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sitemap_updater.core.bootstrap_plan import plan_in_range, render_ranges
from sitemap_updater.core.errors import MAX_REJECTED_SHARE, EventRejected, refusal
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.formats import BOOTSTRAP, check
from sitemap_updater.core.messages import bootstrap_index_request
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.reduce import PageState, reduce_states, state_from_event
from sitemap_updater.core.render import FILE_OVERHEAD
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from sitemap_updater.ports import ImportHold
from sitemap_updater.service.bootstrap_release import RELEASE_AFTER_S
from sitemap_updater.service.dead_letters import dead_letter
from sitemap_updater.service.ingest import Outcome, record_state
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.publish import publish_files
from sitemap_updater.service.rebuild import index_window, position

PREFIX = "_bootstrap/"
_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RECORD_THREADS = 16  # a chunk's conditional writes in flight at once (each waits on one DynamoDB round trip)


class BootstrapError(ValueError):
    """A bootstrap step was asked for something it cannot do (a bad run name, a missing export object)."""


def _run(run: str) -> str:
    if not _RUN.fullmatch(run):
        raise BootstrapError(f"run: {run!r} is not a run name (letters, digits, '.', '_', '-'; at most 64)")
    return run


def export_prefix(run: str) -> str:
    """Where the operator puts the export's objects (JSONL, each optionally gzip) for run ``run``."""
    return f"{PREFIX}{_run(run)}/export/"


def ranges_name(run: str) -> str:
    return f"{PREFIX}{_run(run)}/ranges.json"


def _counts_name(run: str, chunk: str) -> str:
    return f"{PREFIX}{_run(run)}/counts/{hashlib.sha256(chunk.encode()).hexdigest()[:32]}.json"


def check_payload(event: Mapping[str, Any]) -> None:
    """UnknownFormat unless a step's payload is of the format this code reads (the template's definition and
    the files a step's map reads write the version)."""
    check(event.get("v"), BOOTSTRAP, f"the payload of bootstrap step {event.get('step')!r}")


def _checked_item(item: Any, name: str) -> dict[str, Any]:
    """An item of a file the steps leave for each other (``name``), once its version is found to be this code's."""
    check(item.get("v") if isinstance(item, dict) else None, BOOTSTRAP, f"an item of {name}")
    return dict(item)


def write_counts(pipeline: Pipeline, run: str, where: str, sections: Mapping[str, int]) -> None:
    """Keep one step's live pages by section for the plan (the first write stands: a retry writes nothing)."""
    data = json.dumps({"v": BOOTSTRAP, "sections": dict(sorted(sections.items()))}, sort_keys=True).encode()
    pipeline.bucket.put_if_absent(_counts_name(run, where), data)


def begin(pipeline: Pipeline, run: str, execution: str) -> None:
    """Hold the import for ``execution``: rebuild requests are parked until its release. Refused while another
    execution (or an import from the command line) holds it: that one's workers may still be writing."""
    _run(run)
    if not execution:
        raise BootstrapError("execution: begin needs the execution's ARN ($$.Execution.Id)")
    if not pipeline.store.begin_import(ImportHold(execution, run, to_micros(pipeline.clock()))):
        holder = pipeline.store.import_hold()
        who = f"execution {holder.execution} (run {holder.run!r})" if holder and holder.execution else "an import"
        raise BootstrapError(
            f"import: {who} holds the import; start again once it has ended (a stopped execution's hold is "
            f"released {RELEASE_AFTER_S} s after its stop, when no worker of it can still write)"
        )


def _holding(pipeline: Pipeline, execution: str) -> None:
    """Refuse to render or retire for an execution that no longer holds the import (one redriven after its hold
    was released: rebuilds run again, and would race its writes)."""
    hold = pipeline.store.import_hold()
    if hold is None or hold.execution != execution:
        raise BootstrapError(
            f"execution: {execution!r} does not hold the import (released after it stopped?); start a new "
            "execution with the same run: it resumes from its plan"
        )


@dataclass(slots=True)
class ChunkResult:
    """What one export object held and what recording it did."""

    chunk: str
    lines: int = 0
    accepted: int = 0
    rejected: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # recorded, stale, noop
    sections: dict[str, int] = field(default_factory=dict)  # live pages per section, after the chunk's own reduce

    def as_dict(self) -> dict[str, Any]:
        """The step's answer: the per-section counts go to the bucket, not into a state of bounded size."""
        return {"chunk": self.chunk, "lines": self.lines, "accepted": self.accepted, "rejected": self.rejected,
                "outcomes": dict(self.outcomes), "sections": len(self.sections)}  # fmt: skip


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line


def load_chunk(pipeline: Pipeline, run: str, chunk: str, threads: int | None = None) -> ChunkResult:
    """Validate and record one export object's lines (see the module's note); safe to run again."""
    threads = RECORD_THREADS if threads is None else threads
    if not chunk.startswith(export_prefix(run)):
        raise BootstrapError(f"key: {chunk!r} is not under {export_prefix(run)!r}")
    data = pipeline.bucket.read(chunk)
    if data is None:
        raise BootstrapError(f"key: {chunk!r} does not exist")
    result = ChunkResult(chunk)
    states: list[PageState] = []
    rejected: list[tuple[str, str, str]] = []  # body, reason, source
    horizon = pipeline.horizon()
    for number, line in _lines(data):
        result.lines = number
        try:
            states.append(state_from_event(parse_event(line, pipeline.site, horizon).event))
        except EventRejected as exc:
            result.rejected += 1
            rejected.append((line.decode("utf-8", "replace"), f"line {number}: {exc}", f"{chunk}:{number}"))
    result.accepted = len(states)
    reason = refusal(result.accepted, result.rejected, MAX_REJECTED_SHARE) if result.rejected else None
    if reason is not None:  # not an export of page events: stop before flooding the dead-letter queue
        raise BootstrapError(f"key: {chunk!r}: {reason}; the first: {rejected[0][1]}")
    for body, why, source in rejected:
        dead_letter(pipeline.dead_letters, body, why, source)
    newest = sorted(reduce_states(states).values(), key=lambda s: s.url)
    if threads > 1 and len(newest) > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            outcomes = list(pool.map(lambda s: record_state(pipeline, s), newest))
    else:
        outcomes = [record_state(pipeline, s) for s in newest]
    result.outcomes = Counter(str(o) for o in outcomes)
    result.outcomes["recorded"] = result.outcomes.pop(str(Outcome.ACCEPTED), 0)
    live = Counter(s.entry.section for s in newest if s.entry is not None)
    deleted = {s.tombstone.section for s in newest if s.tombstone is not None}
    result.sections = {section: live.get(section, 0) for section in sorted({*live, *deleted})}
    write_counts(pipeline, run, chunk, result.sections)
    return result


def plan(pipeline: Pipeline, run: str) -> dict[str, Any]:
    """Write the ranges to render; returns their number and where they are."""
    counts: Counter[str] = Counter()
    for name in pipeline.bucket.names(f"{PREFIX}{_run(run)}/counts/"):
        counts.update(_checked_item(json.loads(pipeline.bucket.read(name) or b"{}"), name)["sections"])
    for published in pipeline.store.files():
        if published.state == "live":
            counts[published.section] += published.url_count
    ranges = [{"v": BOOTSTRAP, "section": section, "start": f"{r.start:016x}", "depth": r.depth}
              for section, r in render_ranges(counts, pipeline.limits)]  # fmt: skip
    data = json.dumps(ranges, separators=(",", ":")).encode()
    name = ranges_name(run)
    if not pipeline.bucket.put_if_absent(name, data):
        # A run planned before (an execution that failed later, run again): its ranges stand, so that the files
        # it rendered already are found unchanged and not written again.
        ranges = [_checked_item(item, name) for item in json.loads(pipeline.bucket.read(name) or b"[]")]
    return {"ranges": len(ranges), "key": name, "sections": len(counts)}  # counts, not one entry a section


def range_of(start: str, depth: int) -> KeyRange:
    """The key range a ``ranges.json`` item names."""
    first = int(start, 16)
    if not 0 <= depth <= 64 or first % (KEY_SPACE >> depth):
        raise BootstrapError(f"start: {start!r} at depth {depth} is not a range of the key tree")
    return KeyRange(first, first + (KEY_SPACE >> depth), depth)


@dataclass(slots=True)
class RangeResult:
    section: str
    files: list[str] = field(default_factory=list)
    put: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    urls: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"section": self.section, "files": len(self.files), "put": len(self.put),
                "retired": len(self.retired), "urls": self.urls}  # fmt: skip


def render_range(pipeline: Pipeline, section: str, within: KeyRange, execution: str) -> RangeResult:
    """Publish the files of one range of ``section`` from its manifest (see the module's note), while
    ``execution`` holds the import."""
    _holding(pipeline, execution)
    store = pipeline.store
    states = sorted(store.entries(section, within), key=position)
    keys = [s.key for s in states]  # a file's states are one slice of them
    live = [s.entry for s in states if s.entry is not None]
    layout = plan_in_range([e.key for e in live], [e.size for e in live], within, pipeline.limits, FILE_OVERHEAD)
    records = [f for f in store.files(section) if within.start <= f.key_range.start < within.end]
    names = {r.file_name(section) for r in layout}
    # A record still "writing" that the layout no longer names is left to the section's next rebuild.
    by_range = {f.key_range: f for f in records if f.state == "live"}
    holders = {f.name: f for f in records if f.state != "unnamed" and f.name in names}
    stamp = (store.next_rebuild(section), to_micros(pipeline.clock()))
    result = RangeResult(section, urls=len(live))
    jobs = []
    for key_range in layout:
        inside = states[bisect_left(keys, key_range.start) : bisect_left(keys, key_range.end)]
        jobs.append((key_range, inside, by_range.get(key_range)))
        result.files.append(key_range.file_name(section))
    fresh = []
    for (key_range, _, _), (record, put) in zip(
        jobs, publish_files(pipeline, section, jobs, holders, stamp), strict=True
    ):
        if put:
            result.put.append(key_range.file_name(section))
        if record is not None:
            fresh.append(record)
    for published in fresh:
        store.put_file(published)  # after the bytes exist: the index only ever names published files
    kept = set(layout)
    for old in by_range.values():
        if (
            old.key_range not in kept
            and within.end >= old.key_range.end
            and store.move_file_state(old, "live", "retiring")
        ):
            result.retired.append(old.name)
    return result


def finish(pipeline: Pipeline, run: str, execution: str) -> dict[str, Any]:
    """Retire files wider than a rendered range and ask the index function for the index (the hold is released
    later, by ``bootstrap_release.release``)."""
    _holding(pipeline, execution)
    data = pipeline.bucket.read(ranges_name(run))
    if data is None:
        raise BootstrapError(f"run: {run!r} has no ranges.json; its plan step did not run")
    rendered: dict[str, list[KeyRange]] = {}
    for item in (_checked_item(item, ranges_name(run)) for item in json.loads(data)):
        rendered.setdefault(item["section"], []).append(range_of(item["start"], int(item["depth"])))
    retired = []
    for published in pipeline.store.files():
        wider = any(
            published.key_range.start <= r.start and r.end <= published.key_range.end and r != published.key_range
            for r in rendered.get(published.section, [])
        )
        if published.state == "live" and wider and pipeline.store.move_file_state(published, "live", "retiring"):
            retired.append(published.name)
    # The index function names the ranges' files (their records are pending for it), as after any rebuild.
    pipeline.index_queue.send(*bootstrap_index_request(_run(run), *index_window(pipeline)))
    return {"retired": len(retired)}
