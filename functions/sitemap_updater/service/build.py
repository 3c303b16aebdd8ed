"""Full build: a JSONL export of page events in, every sitemap file and the index out.

Memory stays flat whatever the number of pages: events are validated and rendered in parallel chunks (the
common shape by ``core.fastline``, the rest by the event models), spilled to disk in 64 buckets of the key
space, reduced to the newest state per URL bucket by bucket, and each file is gzipped from the contiguous run
of ``<url>`` elements its key range covers (or rendered from its records where news may show).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass, field
from functools import reduce
from itertools import accumulate
from operator import or_
from pathlib import Path
from typing import NamedTuple

from sitemap_updater.core.errors import MAX_REJECTED_SHARE, EventRejected, refusal
from sitemap_updater.core.event_rules import FUTURE_SKEW_SECONDS, Horizon, oversized_body
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.records import decode_states
from sitemap_updater.core.render import (
    FILE_OVERHEAD,
    IndexItem,
    render_elements,
    render_indexes,
    render_text,
    render_urlset,
)
from sitemap_updater.core.sharding import (
    INDEX_NAME,
    KEY_SPACE,
    Limits,
    plan_ranges,
    plan_with,
    range_lastmod,
    text_twin,
)
from sitemap_updater.core.spill import BUCKETS, HEAD, SHIFT, SectionRun, SpillGroups, reduce_bucket, spill_state
from sitemap_updater.core.urls import Site
from sitemap_updater.service import build_input
from sitemap_updater.service.build_pool import pool
from sitemap_updater.service.build_publish import publish, recover, unfinished
from sitemap_updater.service.scratch import scratch_folder, sweep

_CHUNK_BYTES = 4 << 20
_TASK_STATES = 150_000  # states a reduce task takes at most (so a few tens of MB), unless that needs over 64 tasks
_STAGING = ".sitemap-build-"  # the folder in --out the files are written to before they are moved in
_SPILL = "sitemap-build-"  # the folder in the system's temporary folder that holds the spilled states


class Rejection(NamedTuple):
    line: int
    reason: str


class BuildRefused(RuntimeError):
    """The events cannot replace the site's sitemaps (too few accepted); nothing in the output was touched."""

    def __init__(self, reason: str, result: BuildResult) -> None:
        super().__init__(reason)
        self.result = result


@dataclass(slots=True)
class BuildResult:
    """What a build did: lines read, events accepted and rejected, files and bytes written."""

    lines: int = 0
    accepted: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    urls: int = 0
    files: list[str] = field(default_factory=list)
    gzip_bytes: int = 0
    xml_bytes: int = 0
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # files --out already had with these bytes: not written
    indexes: list[str] = field(default_factory=list)  # sitemap.xml, then any further index files
    recovered: bool = False  # the publish of a build that was killed was undone first


class _ChunkResult(NamedTuple):
    path: str
    # per bucket: (section, number of states, offset of their heads, bytes of heads and data)
    bucket_runs: list[list[tuple[str, int, int, int]]]
    lines: int
    accepted: int
    rejections: list[Rejection]
    warnings: list[tuple[int, str]]
    news_sections: set[str]  # sections of events with a news part (whether or not they win)


class _Part(NamedTuple):
    """One reduce task's share of a section: where its entries start in the section's arrays and in the files."""

    buckets: tuple[int, int]  # the first and last bucket of the task's key range
    first: int  # index of its first entry in the section's arrays
    records: tuple[str, int, int]  # file, offset and length of its records (kept only where news may show)
    xml: tuple[str, int]  # file and offset of its entries' <url> elements, in order


@dataclass(slots=True)
class _SectionRuns:
    """The reduced, sorted live entries of one section, as parts of the per-bucket files."""

    keys: array[int] = field(default_factory=lambda: array("Q"))
    sizes: array[int] = field(default_factory=lambda: array("L"))
    lastmods: array[int] = field(default_factory=lambda: array("q"))
    flags: array[int] = field(default_factory=lambda: array("B"))
    parts: list[_Part] = field(default_factory=list)
    has_news: bool = False
    deleted: list[tuple[int, int]] = field(default_factory=list)


class _BucketSection(NamedTuple):
    keys: array[int]
    sizes: array[int]
    lastmods: array[int]
    flags: array[int]
    has_news: bool
    records: tuple[str, int, int]
    xml: tuple[str, int]


class _Fold(NamedTuple):
    """What a reduce task needs to render the files of some sections itself (see _fold_sections)."""

    sections: frozenset[str]
    limits: Limits
    out_dir: str


class _Folded(NamedTuple):
    """One section's files that a reduce task rendered from its key range, and that range's live entries."""

    files: list[tuple[str, int, int, int, int]]  # name, URLs, gzip bytes, XML bytes, lastmod (in key order)
    entries: int
    size: int  # XML bytes of the entries' <url> elements


def _spill_file(spill_dir: str, kind: str) -> Path:
    """This worker's own file of ``kind`` in the spill folder, appended to by each of its tasks in turn: creating
    a file costs more than writing megabytes into it on some disks, so a build creates a few, not one a task."""
    return Path(spill_dir) / f"{kind}-{os.getpid()}-{threading.get_ident()}.bin"


def _line_number(warning: tuple[int, str]) -> int:
    return warning[0]


def _parse_chunk(
    source: str, start: int, end: int, site: Site, horizon: Horizon, spill_dir: str, chunk_id: int
) -> _ChunkResult:
    """Validate and render the lines in ``[start, end)`` of ``source``; spill states grouped by bucket."""
    rejections: list[Rejection] = []
    warnings: list[tuple[int, str]] = []
    news_sections: set[str] = set()  # the fast path takes no news: only the model path adds to it
    with Path(source).open("rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    spill = SpillGroups()
    parser = LineParser(site, horizon)
    lines, rest = parser.parse(data, spill)
    warnings += parser.warnings  # a session ID removed from a URL: noted by the fast path as the model path words it
    del data
    accepted = lines - len(rest)
    if rest:
        # The model path, imported only when a line needs it (pydantic is most of a small build's start).
        from sitemap_updater.core.events import parse_event
        from sitemap_updater.core.reduce import state_from_event

        for number, raw in rest:
            if not raw.strip():
                continue
            try:
                parsed = parse_event(raw, site, horizon)
            except EventRejected as exc:
                rejections.append(Rejection(number, str(exc)))
                continue
            accepted += 1
            for text in parsed.warnings:
                warnings.append((number, f"url: {text}"))
            if parsed.unknown_fields:
                warnings.append((number, f"ignored unknown fields: {', '.join(parsed.unknown_fields)}"))
            state = state_from_event(parsed.event)
            if state.entry is not None and state.entry.news:
                news_sections.add(state.entry.section)
            spill.add(*spill_state(state))
        if parser.warnings and warnings:
            warnings.sort(key=_line_number)  # in line order, each line's own in their order (a stable sort)
    path = _spill_file(spill_dir, "parsed")
    runs: list[list[tuple[str, int, int, int]]] = [[] for _ in range(BUCKETS)]
    parts: list[bytearray] = []
    with path.open("ab") as out:
        offset = out.tell()
        for bucket, section, count, heads, blob in spill.runs():
            parts += (heads, blob)
            runs[bucket].append((section, count, offset, len(heads) + len(blob)))
            offset += len(heads) + len(blob)
        out.write(b"".join(parts))  # one write, not two a group
    return _ChunkResult(str(path), runs, lines, accepted, rejections, warnings, news_sections)


def _reduce_buckets(
    sources: list[tuple[str, list[tuple[str, int, int, int]]]],
    keep: set[str],
    spill_dir: str,
    keep_all: bool,
    key_range: tuple[int, int] = (0, KEY_SPACE),
    fold: _Fold | None = None,
) -> tuple[dict[str, _BucketSection], dict[str, list[tuple[int, int]]], dict[str, _Folded]]:
    """Keep the newest state per URL of a run of buckets (``core.spill``; ``sources``: each chunk's runs of
    them, in file order, over ``key_range``); write live records sorted by (section, key, url) where kept,
    and each live entry's ``<url>`` element in the same order; or, for the sections ``fold`` names, render the
    files of the key range from those elements (``_render_folded``)."""
    heads: dict[str, list[memoryview]] = defaultdict(list)  # views into what was read: joined once, per section
    blobs: dict[str, list[memoryview]] = defaultdict(list)
    for path, runs in sources:
        if not runs:
            continue
        with Path(path).open("rb") as handle:
            for span in _spans(runs):
                first = span[0][2]
                handle.seek(first)
                data = memoryview(handle.read(span[-1][2] + span[-1][3] - first))
                for section, count, offset, size in span:
                    at = offset - first
                    split = at + count * HEAD.size
                    heads[section].append(data[at:split])
                    blobs[section].append(data[split : at + size])
    groups = {section: (b"".join(heads[section]), b"".join(blobs[section])) for section in heads}
    live, deleted = reduce_bucket(groups, keep, keep_all)
    folded: dict[str, _Folded] = {}
    if fold is not None:
        for section in fold.sections & groups.keys():
            run = live.pop(section, None)
            folded[section] = _render_folded(section, run, deleted.pop(section, []), key_range, fold)
    sections: dict[str, _BucketSection] = {}
    records_path, xml_path = _spill_file(spill_dir, "records"), _spill_file(spill_dir, "xml")
    records = [run.records for run in live.values() if run.records]
    with contextlib.ExitStack() as files:
        out = files.enter_context(records_path.open("ab")) if records else None
        xml = files.enter_context(xml_path.open("ab")) if live else None
        offset = out.tell() if out is not None else 0
        xml_offset = xml.tell() if xml is not None else 0
        for section, run in live.items():
            if out is not None:
                out.write(run.records)
            assert xml is not None
            xml.write(run.elements)
            sections[section] = _BucketSection(
                run.keys,
                run.sizes,
                run.lastmods,
                run.flags,
                run.has_news,
                (str(records_path), offset, len(run.records)),
                (str(xml_path), xml_offset),
            )
            offset += len(run.records)
            xml_offset += len(run.elements)
    return sections, deleted, folded


def _spans(runs: list[tuple[str, int, int, int]]) -> Iterator[list[tuple[str, int, int, int]]]:
    """``runs`` (in file order) grouped where each starts where the one before ends: each group is read at once,
    and the runs of the sections a task does not take (between those of the sections it takes) are not read."""
    span = [runs[0]]
    for run in runs[1:]:
        if run[2] != span[-1][2] + span[-1][3]:
            yield span
            span = []
        span.append(run)
    yield span


def _render_folded(
    section: str, run: SectionRun | None, deleted: list[tuple[int, int]], key_range: tuple[int, int], fold: _Fold
) -> _Folded:
    """The files of ``section`` within a reduce task's key range, planned and rendered from its sorted elements.

    ``plan_with`` runs from the top of the key space as ``plan_ranges`` does, every range wider than the task's
    taken as too full (so split) and every range outside it as empty: the files it plans are the whole plan's
    within the task's range whenever each wider range holding entries is over the limits, which ``_reduce_all``
    checks from every task's counts once all are done (and renders the section again the usual way if not)."""
    if run is None:
        return _Folded([], 0, 0)
    keys, low, high = run.keys, key_range[0], key_range[1]
    offsets = [0, *accumulate(run.sizes)]
    too_full = (fold.limits.max_urls + 1, 0)

    def stats(start: int, end: int) -> tuple[int, int]:
        if end <= low or start >= high:
            return 0, 0
        if start < low or end > high:
            return too_full
        lo, hi = bisect_left(keys, start), bisect_left(keys, end)
        return hi - lo, offsets[hi] - offsets[lo]

    files = []
    for planned in plan_with(stats, fold.limits, FILE_OVERHEAD):
        lo, hi = bisect_left(keys, planned.start), bisect_left(keys, planned.end)
        flags = reduce(or_, set(run.flags[lo:hi]), 0)
        rendered = render_elements([run.elements[offsets[lo] : offsets[hi]]], hi - lo, flags)
        name = planned.file_name(section)
        _write_atomic(Path(fold.out_dir) / name, rendered.data)
        lastmod = range_lastmod(keys, run.lastmods, deleted, planned)
        files.append((name, rendered.url_count, len(rendered.data), rendered.xml_bytes, lastmod))
    return _Folded(files, len(keys), offsets[-1])


def _render_plain(
    name: str, sources: list[tuple[str, int, int]], count: int, flags: int, out_dir: str
) -> tuple[str, int, int, int]:
    """Render a file that shows no news: its ``<url>`` elements are contiguous runs of the bucket XML files."""
    rendered = render_elements(list(_read_spans(sources)), count, flags)
    _write_atomic(Path(out_dir) / name, rendered.data)
    return name, rendered.url_count, len(rendered.data), rendered.xml_bytes


def _render_records(
    name: str, sources: list[tuple[str, int, int]], start: int, end: int, as_of_us: int, out_dir: str
) -> tuple[str, int, int, int]:
    """Render a file of a section with news from the entries of its key range: which news shows depends on
    ``as_of_us``. Write it atomically."""
    entries = [
        s.entry
        for data in _read_spans(sources)
        for s in decode_states(data)
        if s.entry is not None and start <= s.entry.key < end
    ]
    rendered = render_urlset(entries, as_of_us)
    _write_atomic(Path(out_dir) / name, rendered.data)
    return name, rendered.url_count, len(rendered.data), rendered.xml_bytes


def _render_text(
    name: str, sources: list[tuple[str, int, int]], start: int, end: int, out_dir: str
) -> tuple[str, int, int, int]:
    """Write the text sitemap of a key range: the URLs of its entries, in the order of its sitemap file."""
    entries = [
        s.entry
        for data in _read_spans(sources)
        for s in decode_states(data)
        if s.entry is not None and start <= s.entry.key < end
    ]
    data = render_text(e.url for e in sorted(entries, key=lambda e: e.sort_key))
    _write_atomic(Path(out_dir) / name, data)
    return name, 0, len(data), len(data)  # its URLs are counted once, by the sitemap file


def _read_spans(sources: list[tuple[str, int, int]]) -> Iterator[bytes]:
    for path, offset, length in sources:
        if length:
            with Path(path).open("rb") as handle:
                handle.seek(offset)
                yield handle.read(length)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def build(
    events: Path,
    out_dir: Path,
    site: Site,
    limits: Limits,
    as_of_us: int,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_rejected_share: float = MAX_REJECTED_SHARE,
    text_sitemaps: bool = False,
    clock_skew_s: int = FUTURE_SKEW_SECONDS,
) -> BuildResult:
    """Build every sitemap file and ``sitemap.xml`` of ``site`` into ``out_dir`` from a JSONL export (and, with
    ``text_sitemaps``, a text sitemap beside each file).

    The newest event per URL wins (by version, then occurred_at), whatever the line order. ``as_of_us`` is
    the moment news freshness is judged against, and now for the events: an occurred_at or lastmod more than
    ``clock_skew_s`` past it is rejected. ``progress(done_bytes, total_bytes)`` reports parsing.
    Files are written beside ``out_dir``'s and moved in only once all are (``build_publish``): a build that fails
    (BuildRefused when nothing was accepted or more than ``max_rejected_share`` of the events were rejected,
    LimitExceeded, any error, an interrupt) leaves the previous output as it was, and no folder it made; one that
    was killed is undone by the next. Only files an earlier build of ``site`` wrote are removed.
    """
    total = events.stat().st_size
    count = workers or os.cpu_count() or 1
    if total < _CHUNK_BYTES:
        count = 1  # small inputs are not worth starting processes for
    result = BuildResult()
    created = _make_folder(out_dir)
    try:
        result.recovered = recover(out_dir, _STAGING)
        sweep(Path(tempfile.gettempdir()), _SPILL)
        with scratch_folder(out_dir, _STAGING, keep=unfinished) as staging:
            with scratch_folder(Path(tempfile.gettempdir()), _SPILL) as spill, pool(count) as executor:
                horizon = Horizon(as_of_us, clock_skew_s)
                chunks = _parse_all(executor, events, site, horizon, str(spill), result, progress, count)
                reason = refusal(result.accepted, len(result.rejections), max_rejected_share)
                if reason is not None:
                    raise BuildRefused(reason, result)
                fold = None if text_sitemaps else _Fold(_fold_sections(chunks, count, limits), limits, str(staging))
                sections, folded = _reduce_all(executor, chunks, str(spill), count, text_sitemaps, fold)
                # A folded section whose wider ranges turned out to fit a file (many duplicates or deletes) is
                # reduced and rendered again the usual way
                again = {
                    section
                    for section, parts in folded.items()
                    if _some_wider_range_fits([p.entries for p in parts], [p.size for p in parts], limits)
                }
                if again:
                    for section in again:
                        for name, *_ in (file for part in folded.pop(section) for file in part.files):
                            (staging / name).unlink()
                    sections.update(_reduce_all(executor, chunks, str(spill), count, text_sitemaps, only=again)[0])
                items = _render_all(
                    executor, sections, str(spill), limits, as_of_us, staging, result, text_sitemaps, folded
                )
            indexes = render_indexes(site.base_url, items, limits.max_files_per_index)
            for name, index in indexes.items():
                _write_atomic(staging / name, index)
                result.gzip_bytes += len(index)
                result.xml_bytes += len(index)
            result.indexes = sorted(indexes, key=lambda name: (name != INDEX_NAME, len(name), name))
            result.removed, result.unchanged = publish(staging, out_dir, result.files, result.indexes, site.base_url)
    except BaseException:
        for folder in reversed(created):  # a build that wrote nothing leaves no folder it made
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return result


def _make_folder(path: Path) -> list[Path]:
    """Make ``path`` and any missing parent; returns the folders made, outermost first."""
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    path.mkdir(parents=True, exist_ok=True)
    return missing[::-1]


def _parse_all(
    executor: Executor,
    events: Path,
    site: Site,
    horizon: Horizon,
    spill: str,
    result: BuildResult,
    progress: Callable[[int, int], None] | None,
    workers: int,
) -> list[_ChunkResult]:
    """Phase 1: validate and render every line, in chunks; line numbers are made absolute here."""
    total = events.stat().st_size
    # Chunks of _CHUNK_BYTES, or one per worker when that is less (so both cores finish a small export together).
    ranges = list(build_input.ranges(events, min(_CHUNK_BYTES, -(-total // workers))))
    futures = {
        executor.submit(_parse_chunk, str(events), start, end, site, horizon, spill, i): (i, end - start)
        for i, (start, end, oversized) in enumerate(ranges)
        if oversized is None
    }
    parsed: dict[int, _ChunkResult] = {}
    done_bytes = 0
    for i, (start, end, oversized) in enumerate(ranges):
        if oversized is not None:  # a line too long to be an event, never read: rejected as parse_event words it
            rejected = [Rejection(1, f"(body): {oversized_body(oversized)}")]
            parsed[i] = _ChunkResult("", [[] for _ in range(BUCKETS)], 1, 0, rejected, [], set())
            done_bytes += end - start
    for future in as_completed(futures):
        chunk_id, size = futures[future]
        parsed[chunk_id] = future.result()
        done_bytes += size
        if progress is not None:
            progress(done_bytes, total)
    chunks = [parsed[i] for i in range(len(ranges))]
    line_base = 0
    for chunk in chunks:
        result.accepted += chunk.accepted
        result.rejections += [Rejection(r.line + line_base, r.reason) for r in chunk.rejections]
        result.warnings += [(line + line_base, text) for line, text in chunk.warnings]
        line_base += chunk.lines
    result.lines = line_base
    return chunks


def _buckets_per_task(states: int, workers: int) -> int:
    """Buckets per reduce task: about ``_TASK_STATES`` states each, at least one task per worker (a power of two)."""
    per_task = BUCKETS
    while per_task > 1 and (states * per_task > _TASK_STATES * BUCKETS or BUCKETS // per_task < workers):
        per_task //= 2
    return per_task


Task = tuple[int, int, frozenset[str] | None]  # first and last bucket, and the sections taken (None: every one)


def _tasks(chunks: list[_ChunkResult], workers: int) -> list[Task]:
    """The reduce tasks: runs of buckets of every section (``_buckets_per_task``); or, for an export one task could
    take whole, with more than one worker and at least as many sections, the whole key space of a share of the
    sections each (shares of about as many states), so that every section can be folded."""
    states = sum(chunk.accepted for chunk in chunks)
    if workers > 1 and states <= _TASK_STATES:
        counts: dict[str, int] = defaultdict(int)
        for chunk in chunks:
            for runs in chunk.bucket_runs:
                for section, count, _offset, _size in runs:
                    counts[section] += count
        if len(counts) >= workers:
            shares: list[set[str]] = [set() for _ in range(workers)]
            loads = [0] * workers
            for section, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
                least = loads.index(min(loads))
                shares[least].add(section)
                loads[least] += count
            return [(0, BUCKETS - 1, frozenset(share)) for share in shares]
    per_task = _buckets_per_task(states, workers)
    return [(first, first + per_task - 1, None) for first in range(0, BUCKETS, per_task)]


def _reduce_all(
    executor: Executor,
    chunks: list[_ChunkResult],
    spill: str,
    workers: int,
    all_records: bool = False,
    fold: _Fold | None = None,
    only: set[str] | None = None,
) -> tuple[dict[str, _SectionRuns], dict[str, list[_Folded]]]:
    """Phase 2: the newest state per URL, a run of buckets per task; collect each section's sorted keys and sizes,
    or, for the sections ``fold`` names, the files each task rendered (``_render_folded``), in key order. With
    ``only``, the other sections are left out."""
    news_sections = {name for chunk in chunks for name in chunk.news_sections}
    tasks = _tasks(chunks, workers)

    def keep(run: tuple[str, int, int, int], taken: frozenset[str] | None) -> bool:
        return (only is None or run[0] in only) and (taken is None or run[0] in taken)

    futures = [
        executor.submit(
            _reduce_buckets,
            [
                (c.path, [run for b in range(first, last + 1) for run in c.bucket_runs[b] if keep(run, taken)])
                for c in chunks
            ],
            news_sections,
            spill,
            all_records,
            (first << SHIFT, (last + 1) << SHIFT),
            fold,
        )
        for first, last, taken in tasks
    ]
    sections: dict[str, _SectionRuns] = defaultdict(_SectionRuns)
    folded: dict[str, list[_Folded]] = {}
    for (first, last, taken), future in zip(tasks, futures, strict=True):
        live, deleted, files = future.result()
        for section, part in live.items():
            runs = sections[section]
            runs.parts.append(_Part((first, last), len(runs.keys), part.records, part.xml))
            runs.keys.extend(part.keys)
            runs.sizes.extend(part.sizes)
            runs.lastmods.extend(part.lastmods)
            runs.flags.extend(part.flags)
            runs.has_news = runs.has_news or part.has_news
        for section, pairs in deleted.items():
            sections[section].deleted.extend(pairs)
        for section in fold.sections if fold is not None else ():
            if taken is None or section in taken:
                folded.setdefault(section, []).append(files.get(section, _Folded([], 0, 0)))
    return sections, folded


def _fold_sections(chunks: list[_ChunkResult], workers: int, limits: Limits) -> frozenset[str]:
    """The sections whose files the reduce tasks should render themselves: those where, by the spilled states (at
    least as many as the live entries), every key range wider than one task's holds too many entries or bytes for
    one file, so each file lies within one task's range. A section with news, or a build that writes records
    (text sitemaps), is not folded; nor any when the states spill through the model path's news."""
    planned = _tasks(chunks, workers)
    per_task, tasks = planned[0][1] - planned[0][0] + 1, len(planned)
    if planned[0][2] is not None:  # each task takes its sections' whole key space: no range is wider
        per_task, tasks = BUCKETS, 1
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * tasks)
    sizes: dict[str, list[int]] = defaultdict(lambda: [0] * tasks)
    for chunk in chunks:
        for bucket, runs in enumerate(chunk.bucket_runs):
            for section, count, _offset, size in runs:
                counts[section][bucket // per_task] += count
                sizes[section][bucket // per_task] += size - count * HEAD.size  # URLs and bodies: more than XML
    news = {name for chunk in chunks for name in chunk.news_sections}
    return frozenset(
        section
        for section in counts
        if section not in news and not _some_wider_range_fits(counts[section], sizes[section], limits)
    )


def _some_wider_range_fits(counts: list[int], sizes: list[int], limits: Limits) -> bool:
    """Whether a key range wider than one task's (a run of ``2**k`` tasks, aligned) holds entries and fits one file:
    ``counts`` and ``sizes`` per task, in key order."""
    width = 2
    while width <= len(counts):
        for start in range(0, len(counts), width):
            count, size = sum(counts[start : start + width]), sum(sizes[start : start + width])
            if 0 < count <= limits.max_urls and size + FILE_OVERHEAD <= limits.max_bytes:
                return True
        width *= 2
    return False


def _render_all(
    executor: Executor,
    sections: dict[str, _SectionRuns],
    spill: str,
    limits: Limits,
    as_of_us: int,
    out_dir: Path,
    result: BuildResult,
    text_sitemaps: bool = False,
    folded: dict[str, list[_Folded]] | None = None,
) -> list[IndexItem]:
    """Phase 3: plan each section's files and render them: gzip over their runs of ``<url>`` elements, or from
    their records where news may show; a text sitemap beside each from its records, when asked. The files of a
    folded section were rendered by the reduce tasks: they are only counted, in the same order."""
    items: list[IndexItem] = []
    futures: list[Future[tuple[str, int, int, int]] | tuple[str, int, int, int]] = []
    folded = folded or {}
    for section in sorted(sections.keys() | folded.keys()):
        if section in folded:
            for name, urls, gz_bytes, xml_bytes, lastmod in (file for part in folded[section] for file in part.files):
                items.append(IndexItem(name, lastmod))
                futures.append((name, urls, gz_bytes, xml_bytes))
            continue
        runs = sections[section]
        if not runs.keys:
            continue
        offsets = array("Q", [0])  # offsets[i]: XML bytes of the section's entries before entry i
        offsets.extend(accumulate(runs.sizes))
        for key_range in plan_ranges(runs.keys, runs.sizes, limits, FILE_OVERHEAD):
            name = key_range.file_name(section)
            items.append(IndexItem(name, range_lastmod(runs.keys, runs.lastmods, runs.deleted, key_range)))
            first, last = key_range.start >> SHIFT, (key_range.end - 1) >> SHIFT
            sources = [p.records for p in runs.parts if p.buckets[0] <= last and first <= p.buckets[1]]
            if text_sitemaps:
                twin = text_twin(name)
                futures.append(
                    executor.submit(_render_text, twin, sources, key_range.start, key_range.end, str(out_dir))
                )
            if runs.has_news:
                futures.append(
                    executor.submit(
                        _render_records, name, sources, key_range.start, key_range.end, as_of_us, str(out_dir)
                    )
                )
                continue
            lo, hi = bisect_left(runs.keys, key_range.start), bisect_left(runs.keys, key_range.end)
            flags = reduce(or_, set(runs.flags[lo:hi]), 0)
            futures.append(
                executor.submit(
                    _render_plain, name, _xml_sources(runs, offsets, lo, hi, spill), hi - lo, flags, str(out_dir)
                )
            )
    for future in futures:
        name, urls, gz_bytes, xml_bytes = future if isinstance(future, tuple) else future.result()
        result.files.append(name)
        result.urls += urls
        result.gzip_bytes += gz_bytes
        result.xml_bytes += xml_bytes
    return items


def _xml_sources(runs: _SectionRuns, offsets: array[int], lo: int, hi: int, spill: str) -> list[tuple[str, int, int]]:
    """Where the ``<url>`` elements of entries ``lo`` to ``hi`` of a section lie in the bucket XML files."""
    sources = []
    bounds = [p.first for p in runs.parts[1:]] + [len(runs.keys)]
    for part, part_end in zip(runs.parts, bounds, strict=True):
        first, last = max(lo, part.first), min(hi, part_end)
        if first < last:
            path, offset = part.xml
            sources.append((path, offset + offsets[first] - offsets[part.first], offsets[last] - offsets[first]))
    return sources
