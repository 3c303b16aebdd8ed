"""A section's manifest spread over several partition keys (``SectionPartitions``) on moto, through the real
adapter: every entry ingest writes (an entry, a removal marker, an import) lands under the partition key that each
of its readers queries (a file's range at any depth, the entries of given pages, an entry's rank), in key order;
with one partition the keys are the ones every earlier version wrote."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.adapters.manifest import ManifestStore, check_partitions, entry_pk, range_partitions
from sitemap_updater.core.entry import Entry
from sitemap_updater.core.pages import PageWrite
from sitemap_updater.core.records import encode_state
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.sharding import KEY_SPACE, KeyRange
from tests.conftest import BASE

TABLE = "manifest"


@pytest.fixture
def client() -> Iterator[object]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        )
        yield dynamodb


def _keys(partitions: int) -> list[int]:
    """Keys on each side of every partition boundary, the ends of the key space and some between."""
    step = KEY_SPACE // partitions
    edges = [n * step + d for n in range(1, partitions) for d in (-1, 0)]
    return sorted({0, 1, KEY_SPACE - 1, *edges, *(n * 0x0123_4567_89AB_CDEF % KEY_SPACE for n in range(1, 12))})


def _write(n: int, key: int, section: str = "blog") -> PageWrite:
    url = f"{BASE}/{section}/p{n}"
    state = PageState(url, (n + 1, 0), Entry(url, key, section, 0, b"<url/>"), None)
    return PageWrite(url=url, rank=f"{n + 1:020d}:{0:020d}:0:d:{section}", kind="live", section=section, key=key,
                     digest=f"d{n}", lastmod="2026-11-20", change="added", moved_from=(),
                     record=encode_state(state))  # fmt: skip


@pytest.mark.parametrize("partitions", [1, 4, 16])
def test_every_entry_is_found_by_each_reader_of_its_range(client: object, partitions: int) -> None:
    store = ManifestStore(client, TABLE, sleep=lambda _s: None, partitions=partitions)  # type: ignore[arg-type]
    writes = [_write(n, key) for n, key in enumerate(_keys(partitions))]
    half = len(writes) // 2
    for write in writes[:half]:
        assert store.put_entry(write)
    store.import_pages(writes[half:])
    moved = writes[1]  # the page left for another section: a removal marker takes its place, read by no file
    assert store.leave_section("blog", moved_marker(moved))
    live = [w for w in writes if w is not moved]

    def urls(states: list[PageState]) -> list[str]:
        return [s.url for s in states]

    for depth in range(6):  # every file range of the first depths (1 to 32 files): across, at and within partitions
        size = KEY_SPACE >> depth
        for start in range(0, KEY_SPACE, size):
            expected = [w.url for w in live if start <= w.key < start + size]
            assert urls(store.entries("blog", KeyRange(start, start + size, depth))) == expected
    assert sorted(urls(store.entries_for("blog", [(w.key, w.url) for w in writes]))) == sorted(w.url for w in live)
    for write in live:
        assert store.entry_rank("blog", write.key, write.url) == write.rank
    assert store.entries("docs", KeyRange(0, KEY_SPACE, 0)) == []  # another section's keys hold none of them

    items = client.scan(TableName=TABLE)["Items"]  # type: ignore[attr-defined]
    used = {item["pk"]["S"] for item in items if item["pk"]["S"].startswith("sec#")}
    assert used == {entry_pk("blog", w.key, partitions) for w in writes}
    assert len(used) == partitions  # the boundary keys put entries in every partition
    if partitions == 1:
        assert used == {"sec#blog"}  # as every earlier version wrote: a table loaded before stays valid


def moved_marker(write: PageWrite) -> PageWrite:
    """A later write of the same page (a higher rank), as a move to another section makes it."""
    return PageWrite(url=write.url, rank=f"{999:020d}:{0:020d}:0:d:docs", kind="live", section="docs", key=write.key,
                     digest="m", lastmod="2026-11-21", change="moved", moved_from=("blog",), record=b"")  # fmt: skip


def test_a_range_spans_the_partitions_its_keys_fall_in_and_no_other() -> None:
    half = KEY_SPACE // 2
    assert range_partitions("blog", KeyRange(0, KEY_SPACE, 0), 1) == [("sec#blog", 0, KEY_SPACE)]
    assert range_partitions("blog", KeyRange(0, KEY_SPACE, 0), 2) == [("sec#blog#00", 0, half),
                                                                      ("sec#blog#01", half, KEY_SPACE)]  # fmt: skip
    deep = KeyRange(half + 5, half + 9, 40)
    assert range_partitions("blog", deep, 256) == [("sec#blog#80", half + 5, half + 9)]
    assert entry_pk("blog", KEY_SPACE - 1, 256) == "sec#blog#ff" and entry_pk("blog", half - 1, 2) == "sec#blog#00"
    for bad in (0, 3, 6, 512):
        with pytest.raises(ValueError, match="power of two"):
            check_partitions(bad)
