"""Publish the files a rebuild (or a bootstrap range) renders: their snapshots in one object, then each file's
intent record and bytes; the caller writes the records once every file is put."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sitemap_updater.core.layout import PREV_UNDATED, PublishedFile
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.render import RenderedFile, render_parts, render_text
from sitemap_updater.core.sharding import KeyRange, range_lastmod, text_twin
from sitemap_updater.core.snapshots import (
    PendingPut,
    SnapshotRef,
    blocks_at,
    object_key,
    pack_block,
    section_prefix,
    written_us,
)
from sitemap_updater.core.states import States
from sitemap_updater.service.announce import confirmed_puts
from sitemap_updater.service.pipeline import Pipeline

_RENDER_SCALE = 10**17  # above any microsecond timestamp before the year 5000
# The states rendered before their object is put: each file's gzip bytes and deflated snapshot stay in memory
# until then (about 0.5 MB a file of 10,000 URLs), so a rebuild of more files puts one object per this many states.
PART_STATES = 250_000
# A Lambda function runs 15 minutes at most: once an object is older, whoever wrote it has ended, and no record
# naming it is still to come.
SNAPSHOT_GRACE_S = 900
SWEEP_EVERY = 32  # one section rebuild in this many lists the section's snapshot objects

Job = tuple[KeyRange, Sequence[PageState], PublishedFile | None]  # a range, every state in it, its live record


def snapshot_id(sha256: str, key_range: KeyRange) -> str:
    """What a snapshot is the snapshot of: the file's bytes (their SHA-256) and its key range. Two ranges may share
    a name (a file split in two keeps its start) and render the same bytes (the half left had no live page), yet
    hold other tombstones, which move the range's lastmod: a snapshot of one is never taken for the other."""
    return f"{sha256}:{key_range.start:x}:{key_range.depth}"


@dataclass(slots=True)
class _Rendered:
    key_range: KeyRange
    states: States
    entry_bytes: int
    rendered: RenderedFile
    lastmod: int
    old: PublishedFile | None
    block: bytes | None  # None: the file's snapshot is the one its record names already


def publish_files(
    pipeline: Pipeline,
    section: str,
    jobs: Sequence[Job],
    holders: dict[str, PublishedFile],
    stamp: tuple[int, int],
    kept: dict[KeyRange, States] | None = None,
) -> list[tuple[PublishedFile | None, bool]]:
    """Render each job's file and publish it if its bytes changed: the snapshots of the files rendered go into
    one object, put before any record names them. ``holders``: the record holding each name (updated here when an
    intent is recorded); ``stamp``: the version of the bytes (the rebuild's number) and the moment rendered;
    ``kept``: the states each file's current snapshot holds, where it was read. Returns, per job, the record to
    write once every file is put (None: nothing to write) and whether bytes were put."""
    results: list[tuple[PublishedFile | None, bool]] = []
    start, part = 0, 0
    while start < len(jobs):
        end, states = start + 1, len(jobs[start][1])
        while end < len(jobs) and states + len(jobs[end][1]) <= PART_STATES:
            states += len(jobs[end][1])
            end += 1
        rendered = pipeline.fan_out(lambda job: _render(job, stamp[1], kept or {}), jobs[start:end])
        blocks = [r.block for r in rendered if r.block is not None]
        refs: list[SnapshotRef] = []
        if blocks:
            # Before the records: none ever names an object that is not there. A crash before the records
            # leaves an object nothing names, which a later sweep deletes.
            key = object_key(section, to_micros(pipeline.clock()), stamp[0], part)
            pipeline.bucket.write_snapshots(key, blocks)
            refs = blocks_at(key, blocks)
            part += 1
        at = iter(refs)
        placed = [(r, next(at) if r.block is not None else None) for r in rendered]
        results += pipeline.fan_out(lambda item: _publish(pipeline, section, *item, holders, stamp), placed)
        start = end
    return results


def _render(job: Job, as_of: int, kept: dict[KeyRange, States]) -> _Rendered:
    key_range, given, old = job
    states = States.of(given)  # a rebuild's: the records of the snapshots it read, kept as they were read
    live = states.live()
    lastmod = range_lastmod(live.keys, live.lastmods, sorted(live.deleted), key_range)
    rendered = render_parts(live.bodies, live.news, live.flags, as_of)
    unchanged = _unchanged(old, rendered.sha256, lastmod)
    if unchanged and states.same(kept.get(key_range)):
        block = None  # its record names a snapshot of these very states
    else:
        block = pack_block(snapshot_id(rendered.sha256, key_range), states.encode())
    return _Rendered(key_range, states, sum(live.sizes), rendered, lastmod, old, block)


def _unchanged(old: PublishedFile | None, sha256: str, lastmod: int) -> bool:
    return old is not None and not old.unsettled and old.sha256 == sha256 and old.lastmod_us == lastmod


def _publish(
    pipeline: Pipeline,
    section: str,
    done: _Rendered,
    snapshot: SnapshotRef | None,
    holders: dict[str, PublishedFile],
    stamp: tuple[int, int],
) -> tuple[PublishedFile | None, bool]:
    bucket, store = pipeline.bucket, pipeline.store
    version, as_of = stamp
    key_range, rendered, old = done.key_range, done.rendered, done.old
    name = key_range.file_name(section)
    if _unchanged(old, rendered.sha256, done.lastmod):
        assert old is not None
        if snapshot is not None:  # the same bytes from other states (say, a rank): the record names them now
            store.put_file(replace(old, snapshot=snapshot))
        return None, False
    assert snapshot is not None  # a block is written for every file whose record changes
    put = old is None or old.unsettled or old.sha256 != rendered.sha256
    holder = holders.get(name)
    if put:  # the CDN may serve the bytes the name held before for its cache lifetime: the index needs both
        before = holder if holder is not None and holder.state in ("live", "retiring") else old
        published_us, prev_lastmod_us = as_of, (before.lastmod_us or PREV_UNDATED) if before is not None else 0
    else:
        assert old is not None
        published_us, prev_lastmod_us = old.published_us, old.prev_lastmod_us
    record = PublishedFile(
        section,
        key_range,
        name,
        rendered.sha256,
        done.lastmod,
        rendered.url_count,
        done.entry_bytes,
        news_until_us=rendered.news_until_us,
        pending_index=True,
        published_us=published_us,
        prev_lastmod_us=prev_lastmod_us,
        snapshot=snapshot,
        etag=old.etag if not put and old is not None else "",  # the same bytes
    )
    if put:
        # Record the intent first: a crash after the put leaves neither an orphan nor a record whose digest no
        # longer matches the bucket (which would let a later rebuild skip the file), and the next attempt knows
        # what these bytes showed (``service/announce.py``). Newer manifest first, then the later render: news
        # freshness can change bytes at one sequence.
        put_seq = version * _RENDER_SCALE + as_of
        intent = PendingPut(snapshot, put_seq)
        # The ETag of the bytes a settled record names is what the name holds unless a later rebuild put others
        # (then the put's If-Match fails and the compare-and-swap reads the object): no HEAD before the put. An
        # unsettled record's may be another attempt's, whose version a HEAD must read.
        known = holder.etag if holder is not None and not holder.unsettled else ""
        if holder is None:
            holders[name] = replace(record, state="writing", pending=intent)
            store.put_file(holders[name])
        else:  # an earlier attempt's bytes, put before it died, may have been seen: kept until a record is written
            shown = confirmed_puts(bucket, holder)
            store.mark_unsettled(holder, intent, shown)
            holders[name] = replace(holder, unsettled=True, pending=intent, shown=shown)
        record = replace(record, etag=bucket.publish_over(name, rendered.data, put_seq, known) or "")
        if pipeline.settings.text_sitemaps:  # written only when its URLs changed, not for a lastmod alone
            urls = (s.url for s in done.states if s.entry is not None)
            bucket.publish(text_twin(name), render_text(urls), put_seq, True)
    return record, put


def collect_snapshots(
    pipeline: Pipeline, section: str, before: list[PublishedFile], untouched: list[PublishedFile], version: int
) -> list[str]:
    """Delete the snapshot objects of ``section`` that no file record names, written more than
    ``SNAPSHOT_GRACE_S`` ago: those ``before`` (the records a rebuild replaced or deleted, as it read them)
    named, and in one rebuild of ``SWEEP_EVERY`` every one under the section's prefix (which finds those a crash
    left before any record named them). The ``untouched`` records still name theirs; whether any other record
    does, the section's records read again say. Returns the keys deleted."""
    oldest = to_micros(pipeline.clock()) - SNAPSHOT_GRACE_S * 1_000_000
    candidates = {key for f in before for key in f.snapshot_keys()}
    if version % SWEEP_EVERY == 0:
        candidates.update(pipeline.bucket.names(section_prefix(section)))
    candidates -= {key for f in untouched for key in f.snapshot_keys()}
    old = {key for key in candidates if (at := written_us(key)) is not None and at <= oldest}
    if not old:
        return []
    named = {key for f in pipeline.store.files(section) for key in f.snapshot_keys()}
    dead = sorted(old - named)
    for key in dead:
        pipeline.bucket.delete(key)
    return dead
