"""The spill record format read in place: every field of ``scan_records`` where its name says."""

from __future__ import annotations

from sitemap_updater.core import records
from sitemap_updater.core.reduce import state_from_event
from tests.conftest import BASE, event, parse


def test_scan_records_gives_every_field_at_its_position() -> None:
    news = {"publication_name": "T", "publication_language": "en", "publication_date": "2026-11-21", "title": "t"}
    live = state_from_event(
        parse(
            event(
                f"{BASE}/blog/ü",
                version=7,
                lastmod="2026-11-02",
                section="Blög",
                news=news,
                images=[{"loc": f"{BASE}/i.jpg"}],
            )
        )
    )
    gone = state_from_event(parse(event(f"{BASE}/x/y", type="delete", version=2)))
    data = records.encode_state(live) + records.encode_state(gone)
    first, second = records.scan_records(data)
    assert live.entry is not None and gone.tombstone is not None
    assert first[records.KEY] == live.key and second[records.KEY] == gone.key
    assert first[records.URL] == live.url.encode() and second[records.URL] == gone.url.encode()
    assert first[records.SECTION] == "Blög".encode() and second[records.SECTION] == b"x"
    assert (first[records.KIND], second[records.KIND]) == (0, 1)
    assert (first[records.VERSION], first[records.OCCURRED]) == live.order
    assert (second[records.VERSION], second[records.OCCURRED]) == gone.order
    assert first[records.MOMENT] == live.entry.lastmod_us and second[records.MOMENT] == gone.tombstone.deleted_us
    # The event named the section "Blög": the record says so beside the entry's own flags
    assert first[records.FLAGS] == live.entry.flags | records.FLAG_NAMED and live.entry.flags != 0
    assert second[records.FLAGS] == 0
    assert first[records.START] == 0 and second[records.START] == first[records.END]
    assert data[first[records.BODY] : first[records.NEWS]] == live.entry.body
    assert data[first[records.NEWS] : first[records.END]] == live.entry.news
    assert second[records.END] == len(data)
    assert list(records.decode_states(data)) == [live, gone]
