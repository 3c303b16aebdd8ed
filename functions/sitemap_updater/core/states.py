"""Page states read in place from a snapshot block, for a rebuild that changes a few pages of a large file.

A block (``core/records.py``: records one after another) is scanned once for the heads of its records (where
each starts, its key, kind, lastmod, sizes); a page state is decoded only when asked for, and then kept, so the
same record always gives the same object. :class:`States` is a file's states in (key, URL) order as runs of a
block's records and of states held as objects: the file is rendered, its snapshot written again and its counts
taken from the runs, without a Python object per unchanged page. Iterating it gives the page states.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import islice, repeat
from operator import add, itemgetter, le, or_
from typing import overload

from sitemap_updater.core.entry import URL_CLOSE
from sitemap_updater.core.records import FLAG_NAMED, HEAD, decode_block, encode_state
from sitemap_updater.core.reduce import PageState

_HEAD_SIZE = HEAD.size
_CLOSE = len(URL_CLOSE)
# Fields of a record's head (``records.encode_record``)
_KIND, _KEY, _MOMENT, _NEWS_US, _FLAGS, _N_URL, _N_SECTION, _N_BODY, _N_NEWS = 0, 3, 4, 5, 6, 7, 8, 9, 10


class Block:
    """The records of one buffer of ``records.encode_state`` output: their heads read at once, states on demand."""

    __slots__ = ("_states", "bodies", "data", "heads", "keys", "lastmods", "sizes", "starts")

    def __init__(self, data: bytes) -> None:
        heads: list[tuple[int, ...]] = []
        starts: list[int] = []
        bodies: list[bytes] = []  # each record's rendered entry but its news part (b"" for a tombstone)
        unpack, pos, end = HEAD.unpack_from, 0, len(data)
        push, mark, body = heads.append, starts.append, bodies.append
        while pos < end:
            head = unpack(data, pos)
            push(head)
            mark(pos)
            pos += _HEAD_SIZE + head[7] + head[8]
            body(data[pos : pos + head[9]])
            pos += head[9] + head[10]
        if pos != end:
            raise ValueError("a block of page states that ends inside a record")
        mark(pos)
        self.data = data
        self.heads = heads
        self.starts = starts  # one more than the records: the buffer's end
        self.bodies = bodies
        self.keys: list[int] = list(map(itemgetter(_KEY), heads))
        self.lastmods: list[int] = list(map(itemgetter(_MOMENT), heads))  # a tombstone's: its deletion
        lengths = map(add, map(itemgetter(_N_BODY), heads), map(itemgetter(_N_NEWS), heads))
        self.sizes: list[int] = list(map(add, lengths, repeat(_CLOSE)))
        self._states: dict[int, PageState] = {}

    def __len__(self) -> int:
        return len(self.heads)

    def ordered(self) -> bool:
        """Whether the records' keys never go down (then a key range is one run of them)."""
        return all(map(le, self.keys, islice(self.keys, 1, None)))

    def url(self, i: int) -> str:
        start = self.starts[i] + _HEAD_SIZE
        return self.data[start : start + self.heads[i][_N_URL]].decode()

    def state(self, i: int) -> PageState:
        """Record ``i``'s page state (the same object each time)."""
        found = self._states.get(i)
        if found is None:
            self.decode(i, i + 1)
            found = self._states[i]
        return found

    def decode(self, lo: int, hi: int) -> None:
        """Decode records ``lo`` to ``hi`` (but those decoded already, whose objects stay)."""
        if all(i in self._states for i in range(lo, hi)):
            return
        decoded, _ = decode_block(self.data[self.starts[lo] : self.starts[hi]])
        for i, state in enumerate(decoded, start=lo):
            self._states.setdefault(i, state)

    def position(self, key: int, url: str, lo: int, hi: int) -> int:
        """Where (``key``, ``url``) stands among records ``lo`` to ``hi`` (sorted): the index of the first record
        not before it."""
        i = bisect_left(self.keys, key, lo, hi)
        while i < hi and self.keys[i] == key and self.url(i) < url:
            i += 1
        return i


Run = tuple[Block | Sequence[PageState], int, int]  # records lo to hi of a block, or states lo to hi of a list


@dataclass(slots=True)
class Live:
    """What rendering a file and recording it need of its live entries (in order) and its tombstones."""

    keys: list[int] = field(default_factory=list)
    lastmods: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    flags: int = 0
    news: list[tuple[int, bytes, int, str]] = field(default_factory=list)  # (index, news part, news_us, URL)
    deleted: list[tuple[int, int]] = field(default_factory=list)  # (key, deleted_us) of each tombstone


class States(Sequence[PageState]):
    """Page states in (key, URL) order, held as runs (``Run``)."""

    __slots__ = ("_len", "runs")

    def __init__(self, runs: Sequence[Run]) -> None:
        self.runs: list[Run] = [run for run in runs if run[1] < run[2]]
        self._len = sum(hi - lo for _, lo, hi in self.runs)

    @classmethod
    def of(cls, states: Sequence[PageState]) -> States:
        """``states`` (in order) as one run, or as they are when they are runs already."""
        return states if isinstance(states, States) else cls([(states, 0, len(states))])

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[PageState]:
        for source, lo, hi in self.runs:
            if isinstance(source, Block):
                source.decode(lo, hi)
                yield from map(source.state, range(lo, hi))
            else:
                yield from islice(source, lo, hi)

    @overload
    def __getitem__(self, index: int) -> PageState: ...
    @overload
    def __getitem__(self, index: slice) -> States: ...
    def __getitem__(self, index: int | slice) -> PageState | States:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                raise ValueError("page states are sliced in steps of one")
            return States(self.between(start, stop))
        if index < 0:
            index += self._len
        for source, lo, hi in self.runs:
            if index < hi - lo:
                return source.state(lo + index) if isinstance(source, Block) else source[lo + index]
            index -= hi - lo
        raise IndexError(index)

    def between(self, start: int, stop: int) -> list[Run]:
        """The runs of states ``start`` to ``stop``."""
        found: list[Run] = []
        at = 0
        for source, lo, hi in self.runs:
            found.append((source, max(lo, lo + start - at), min(hi, lo + stop - at)))  # States leaves out the empty
            at += hi - lo
        return found

    def same(self, other: Sequence[PageState] | None) -> bool:
        """Whether ``other`` holds these very states."""
        if other is None or len(other) != self._len:
            return False
        if isinstance(other, States) and other.runs == self.runs:
            return True
        return all(a is b or a == b for a, b in zip(self, other, strict=True))

    def keys(self) -> list[int]:
        """Every state's key (tombstones too), in order."""
        keys: list[int] = []
        for source, lo, hi in self.runs:
            keys += source.keys[lo:hi] if isinstance(source, Block) else [s.key for s in islice(source, lo, hi)]
        return keys

    def live(self, bodies: bool = True) -> Live:
        """The live entries' keys, lastmods, sizes and (with ``bodies``) rendered parts; the tombstones."""
        live = Live()
        for source, lo, hi in self.runs:
            if isinstance(source, Block):
                _block_live(source, lo, hi, live, bodies)
                continue
            for state in islice(source, lo, hi):
                entry = state.entry
                if entry is None:
                    assert state.tombstone is not None
                    live.deleted.append((state.key, state.tombstone.deleted_us))
                    continue
                if bodies:
                    if entry.news:
                        live.news.append((len(live.keys), entry.news, entry.news_us, entry.url))
                    live.bodies.append(entry.body)
                    live.flags |= entry.flags
                live.keys.append(entry.key)
                live.lastmods.append(entry.lastmod_us)
                live.sizes.append(entry.size)
        return live

    def encode(self) -> bytes:
        """``records.encode_state`` of each state, joined: a block's records as the bytes they were read from."""
        parts: list[bytes] = []
        for source, lo, hi in self.runs:
            if isinstance(source, Block):
                parts.append(source.data[source.starts[lo] : source.starts[hi]])
            else:
                parts += map(encode_state, islice(source, lo, hi))
        return b"".join(parts)


def _block_live(block: Block, lo: int, hi: int, live: Live, bodies: bool) -> None:
    heads = block.heads[lo:hi]
    first = len(live.keys)
    alive: Sequence[int] = range(lo, hi)
    if any(map(itemgetter(_KIND), heads)):
        live.deleted += [(head[_KEY], head[_MOMENT]) for head in heads if head[_KIND]]
        alive = [i for i in range(lo, hi) if not block.heads[i][_KIND]]
        heads = [block.heads[i] for i in alive]
        live.keys += [block.keys[i] for i in alive]
        live.lastmods += [block.lastmods[i] for i in alive]
        live.sizes += [block.sizes[i] for i in alive]
        if bodies:
            live.bodies += [block.bodies[i] for i in alive]
    else:
        live.keys += block.keys[lo:hi]
        live.lastmods += block.lastmods[lo:hi]
        live.sizes += block.sizes[lo:hi]
        if bodies:
            live.bodies += block.bodies[lo:hi]
    if not bodies:
        return
    live.flags = reduce(or_, map(itemgetter(_FLAGS), heads), live.flags) & ~FLAG_NAMED
    if any(map(itemgetter(_N_NEWS), heads)):
        data = block.data
        for n, (i, head) in enumerate(zip(alive, heads, strict=True)):
            if head[_N_NEWS]:
                url_at = block.starts[i] + _HEAD_SIZE
                news_at = url_at + head[_N_URL] + head[_N_SECTION] + head[_N_BODY]
                url = data[url_at : url_at + head[_N_URL]].decode()
                live.news.append((first + n, data[news_at : news_at + head[_N_NEWS]], head[_NEWS_US], url))


def merged(block: Block, lo: int, hi: int, pages: set[tuple[int, str]], current: Sequence[PageState]) -> States:
    """Records ``lo`` to ``hi`` of ``block`` (sorted) without those of ``pages`` (key, URL), with ``current``
    (their states now, any order) in their places."""
    cuts: list[tuple[int, int, PageState | None]] = []  # (index, 0: insert before it / 1: leave it out, state)
    for key, url in pages:
        i = block.position(key, url, lo, hi)
        if i < hi and block.keys[i] == key and block.url(i) == url:
            cuts.append((i, 1, None))
    for now in sorted(current, key=lambda state: (state.key, state.url)):
        cuts.append((block.position(now.key, now.url, lo, hi), 0, now))
    cuts.sort(key=lambda cut: cut[:2])  # stable: the states put before one record stay in order
    runs: list[Run] = []
    at = lo
    for i, leave, state in cuts:
        runs.append((block, at, i))
        if leave:
            at = i + 1
        else:
            assert state is not None
            runs.append(([state], 0, 1))
            at = i
    runs.append((block, at, hi))
    return States(runs)


def without_common(
    before: Sequence[Sequence[PageState] | None], now: Sequence[Sequence[PageState]]
) -> tuple[list[States | None], list[PageState]]:
    """``before`` (each a file's states, or None) and ``now`` (joined) without the states both hold as the very
    same object (a block's record held by runs of both sides): what a comparison of the two in key order that
    passes over identical states finds is the same without them."""
    was = [States.of(s) if s is not None else None for s in before]
    is_now = [States.of(s) for s in now]
    spans: list[dict[int, list[tuple[int, int]]]] = [{}, {}]
    for side, found in ((was, spans[0]), (is_now, spans[1])):
        for states in side:
            for source, lo, hi in states.runs if states is not None else ():
                if isinstance(source, Block):
                    found.setdefault(id(source), []).append((lo, hi))
    common: dict[int, list[tuple[int, int]]] = {}
    for block_id, mine in spans[0].items():
        theirs = spans[1].get(block_id, [])
        common[block_id] = sorted((max(a, c), min(b, d)) for a, b in mine for c, d in theirs if max(a, c) < min(b, d))

    def rest(states: States) -> States:
        kept: list[Run] = []
        for source, lo, hi in states.runs:
            if not isinstance(source, Block):
                kept.append((source, lo, hi))
                continue
            at = lo
            for a, b in common.get(id(source), ()):
                if a < hi and at < b:
                    kept.append((source, at, max(at, a)))
                    at = max(at, b)
            kept.append((source, at, hi))
        return States(kept)

    return [rest(s) if s is not None else None for s in was], [s for states in is_now for s in rest(states)]


class ByUrl(Mapping[str, PageState]):
    """The states of ``loaded`` by URL (the last one of a URL held twice): their URLs read from the records when
    first asked for, a record decoded only when its state is."""

    def __init__(self, loaded: Sequence[States]) -> None:
        self._loaded = loaded
        self._index: dict[str, tuple[Block | Sequence[PageState], int]] | None = None

    def _where(self) -> dict[str, tuple[Block | Sequence[PageState], int]]:
        if self._index is None:
            self._index = {}
            for states in self._loaded:
                for source, lo, hi in states.runs:
                    if isinstance(source, Block):
                        self._index.update((source.url(i), (source, i)) for i in range(lo, hi))
                    else:
                        self._index.update((source[i].url, (source, i)) for i in range(lo, hi))
        return self._index

    def __getitem__(self, url: str) -> PageState:
        source, i = self._where()[url]
        return source.state(i) if isinstance(source, Block) else source[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._where())

    def __len__(self) -> int:
        return len(self._where())
