"""Snapshots: the page states a sitemap file was rendered from, kept so that its next rebuild reads only them
and the pages it is marked for.

A rebuild keeps the snapshots of every file it renders in one object, ``_state/sitemap-<section slug>/<written
at, 16 hex microseconds>-<rebuild version>-<part>.states``: blocks one after another, each an ASCII line (its
format version, a space, and what the block is the snapshot of: the file's bytes and range) and the deflated
states (``core/records.py``). A file's record names its block (object key, offset, length), which the next rebuild
reads alone (a ranged GET).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from sitemap_updater.core.formats import SNAPSHOTS, check
from sitemap_updater.core.sharding import section_slug

STATE_PREFIX = "_state/"  # the bucket policy lets CloudFront read sitemap* and the IndexNow key only
MAX_SNAPSHOT_ID = 200
# Written at every rewrite of their file and read once by the next: deflate level 1 takes half the time of
# level 6 for about 1.4 times the bytes (which S3 does not bill per request).
_LEVEL = 1
_OBJECT = re.compile(r"_state/sitemap-[^/]+/([0-9a-f]{16})-\d+-\d+\.states")


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """Where a file's snapshot block is: the object's key and the block's bytes in it."""

    key: str
    offset: int
    length: int

    def encode(self) -> str:
        return f"{self.offset} {self.length} {self.key}"

    @classmethod
    def decode(cls, text: str) -> SnapshotRef:
        offset, length, key = text.split(" ", 2)
        return cls(key, int(offset), int(length))


@dataclass(frozen=True, slots=True)
class PendingPut:
    """Bytes a rebuild is about to put under a file's name (its intent, recorded before the put): the block of
    their snapshot and the version the put carries (``x-amz-meta-seq``), which tells a later rebuild whether the
    put happened: the object under the name carries it then."""

    snapshot: SnapshotRef
    seq: int

    def encode(self) -> str:
        return f"{self.seq} {self.snapshot.encode()}"

    @classmethod
    def decode(cls, text: str) -> PendingPut:
        seq, snapshot = text.split(" ", 1)
        return cls(SnapshotRef.decode(snapshot), int(seq))


def pack_block(snapshot_id: str, states: bytes) -> bytes:
    """One block: its format version and ``snapshot_id`` (one ASCII line; the id of at most 200 characters) and
    ``states`` (encoded page states), deflated."""
    head = snapshot_id.encode("ascii")
    if len(head) > MAX_SNAPSHOT_ID or b"\n" in head:
        raise ValueError(f"a snapshot's id is one ASCII line of at most {MAX_SNAPSHOT_ID} characters")
    return b"%d %s\n%s" % (SNAPSHOTS, head, zlib.compress(states, _LEVEL))


def unpack_block(data: bytes | None, what: str = "a snapshot block") -> tuple[str, bytes] | None:
    """(What the block is the snapshot of, its encoded states); None for no block or one that is not whole.
    UnknownFormat for a block of another format version (``what`` names it in the error)."""
    if data is None:
        return None
    end = data.find(b"\n", 0, MAX_SNAPSHOT_ID + 12)
    if end < 0:
        return None
    version, _, head = data[:end].partition(b" ")
    check(int(version) if version.isdigit() else version.decode("ascii", "replace"), SNAPSHOTS, what)
    try:
        return head.decode("ascii"), zlib.decompress(data[end + 1 :])
    except (zlib.error, UnicodeDecodeError):
        return None


def section_prefix(section: str) -> str:
    """The prefix of the objects holding ``section``'s snapshots."""
    return f"{STATE_PREFIX}sitemap-{section_slug(section)}/"


def object_key(section: str, written_us: int, version: int, part: int) -> str:
    """The key of the ``part``-th snapshot object a rebuild (``version``) of ``section`` writes at ``written_us``."""
    return f"{section_prefix(section)}{written_us:016x}-{version}-{part}.states"


def written_us(key: str) -> int | None:
    """When the snapshot object ``key`` was written (its name says); None for a key that is no such object."""
    found = _OBJECT.fullmatch(key)
    return None if found is None else int(found.group(1), 16)


def blocks_at(key: str, blocks: list[bytes]) -> list[SnapshotRef]:
    """Where each of ``blocks``, written one after another as object ``key``, is."""
    refs: list[SnapshotRef] = []
    offset = 0
    for block in blocks:
        refs.append(SnapshotRef(key, offset, len(block)))
        offset += len(block)
    return refs
