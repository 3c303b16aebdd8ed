"""The spill record format read in place: every field of ``scan_records`` where its name says."""

from __future__ import annotations

import pytest

from sitemap_updater.core import records
from sitemap_updater.core.reduce import PageState, state_from_event
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


def _states() -> list[PageState]:
    """A live page with news, images and a named section, a plain one, and a deletion, in key order."""
    news = {"publication_name": "T", "publication_language": "en", "publication_date": "2026-11-21", "title": "t"}
    found = [
        state_from_event(parse(event(f"{BASE}/blog/ü", version=7, section="Blög", news=news,
                                     images=[{"loc": f"{BASE}/i.jpg"}]))),
        state_from_event(parse(event(f"{BASE}/docs/a?b=1", version=2, lastmod="2026-11-02"))),
        state_from_event(parse(event(f"{BASE}/x/y", type="delete", version=3))),
    ]  # fmt: skip
    return sorted(found, key=lambda s: (s.key, s.url))


def test_every_state_read_with_its_span_is_the_state_written_and_its_span_its_record() -> None:
    states = _states()
    data = b"".join(records.encode_state(s) for s in states)
    spans = list(records.decode_spans(data))
    assert [s for s, _, _ in spans] == states == list(records.decode_states(data))
    assert [data[a:b] for _, a, b in spans] == [records.encode_state(s) for s in states]
    assert spans[0][1] == 0 and spans[-1][2] == len(data)


def test_a_snapshot_written_again_reuses_the_records_read_and_encodes_only_the_states_that_are_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the states of a snapshot as read, their records' bytes kept by state, and one page changed since
    states = _states()
    data = b"".join(records.encode_state(s) for s in states)
    spans = list(records.decode_spans(data))
    encoded = {id(s): (s, data[a:b]) for s, a, b in spans}
    changed = state_from_event(parse(event(f"{BASE}/docs/a?b=1", version=3, lastmod="2026-11-09")))
    now = [changed if s.url == changed.url else s for s, _, _ in spans]
    # and a state equal to one read but not the one read (found by value, it is encoded: never mistaken)
    at = next(i for i, s in enumerate(now) if s.url == f"{BASE}/x/y")
    twin = now[at] = PageState(*now[at])
    calls: list[str] = []
    encode = records.encode_state

    def counted(state: PageState) -> bytes:
        calls.append(state.url)
        return encode(state)

    monkeypatch.setattr(records, "encode_state", counted)
    # When the new snapshot's states are written
    block = records.reencode(now, encoded)
    # Then the bytes are what encoding every state gives, and only the changed page and the twin were encoded
    assert block == b"".join(encode(s) for s in now)
    assert sorted(calls) == sorted([changed.url, twin.url])
