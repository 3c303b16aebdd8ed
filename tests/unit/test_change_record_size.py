"""Change records within SQS's message size: a rebuild of a thousand pages with long URLs (a burst), or of a file
whose snapshot was lost (every page it shows), says more than one SQS message holds; it is sent in parts, each
under the limit, that tell the notifier together what the whole would."""

from __future__ import annotations

import json

from sitemap_updater.core.messages import (
    MAX_RECORD_BYTES,
    change_record,
    change_records,
    read_change_records,
    read_rebuild_request,
)
from sitemap_updater.service.rebuild import rebuild_sections
from tests.conftest import BASE, event
from tests.unit.test_recovery import Stack

SQS_256_KIB = 262_144  # SQS's message limit until 2025, and the least a queue may have been left with


def _record(count: int, url_chars: int) -> dict[str, object]:
    urls = [f"{BASE}/blog/{i:05d}-" + "x" * (url_chars - len(BASE) - 12) for i in range(count)]
    return {
        "changed": {u: ("added", "updated", "removed")[i % 3] for i, u in enumerate(urls)},
        "digests": {u: "" if i % 3 == 2 else f"{i:064x}" for i, u in enumerate(urls)},
        "files": ["sitemap-blog-00000000.xml.gz"],
        "lastmods": {u: 1_795_262_400_000_000 + i for i, u in enumerate(urls)},
        "ranks": {u: f"{1:020d}:{i:020d}:0:{i:064x}:blog" for i, u in enumerate(urls)},
        "unless_unannounced": {f"{BASE}/gone/{i}": f"{2:020d}:{i:020d}:1::gone" for i in range(count // 10)},
        "unless_told": {f"{BASE}/moved/{i}": f"{3:020d}:{i:020d}:0:{i:064x}:blog" for i in range(count // 10 + 1)},
    }


def _sent(message: object) -> int:
    """The bytes of a message's body as the queue adapter sends it."""
    return len(json.dumps(message.body, sort_keys=True).encode())  # type: ignore[attr-defined]


def test_a_record_that_fits_is_one_message_and_a_larger_one_parts_that_read_the_same() -> None:
    for count, url_chars in [(1, 40), (300, 60), (1_000, 250), (2_000, 2_047)]:
        fields = _record(count, url_chars)
        whole = change_record("blog", **fields)  # type: ignore[arg-type]
        parts = change_records("blog", **fields)  # type: ignore[arg-type]
        # Then each part is under the limit, and a record that fits is sent as it is
        assert all(_sent(part) <= MAX_RECORD_BYTES < SQS_256_KIB for part in parts)
        if _sent(whole) <= MAX_RECORD_BYTES:
            assert parts == [whole]
        else:
            assert len(parts) >= _sent(whole) // MAX_RECORD_BYTES
        # And the notifier reads from the parts what it reads from the whole
        assert read_change_records([p.body for p in parts]) == read_change_records([whole.body])
        assert len({p.dedup for p in parts}) == len(parts)  # no part is taken for a repeat of another


def test_a_burst_of_a_thousand_pages_with_long_urls_is_announced_within_sqs_s_message_size() -> None:
    # Given a thousand new pages of 250-character URLs rebuilt together (a burst: ten rebuild messages of 100)
    stack = Stack(max_urls=10_000)
    urls = [f"{BASE}/blog/{i:04d}-" + "y" * 220 for i in range(1_000)]
    stack.send(*(event(url, version=1) for url in urls))
    marks = stack.queues["rebuild"].messages
    stack.queues["rebuild"].messages = []
    # When they are rebuilt at once (one change record of them all would be 1.2 MB, past SQS's 1 MiB)
    rebuild_sections(stack.pipeline, [m for b in marks for m in read_rebuild_request(json.loads(b.body))])
    # Then every record on the notify queue is under the limit, and together they announce every page added
    records = stack.notifications()
    assert len(records) > 1
    assert all(len(json.dumps(r, sort_keys=True).encode()) <= MAX_RECORD_BYTES for r in records)
    read = read_change_records(records)
    assert sorted(read.digests) == urls
    assert {change.change for change in read.changes} == {"added"}
