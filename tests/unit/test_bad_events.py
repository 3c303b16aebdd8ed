"""The bad-input corpus (tests/data/bad_events): every case is rejected with a reason naming its field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.urls import Site

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_events"
EXPECTED: dict[str, str] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
SITE = Site.parse("https://www.example.com")


def test_the_corpus_has_at_least_60_cases() -> None:
    assert len(EXPECTED) >= 60
    assert {p.name for p in CORPUS.glob("[0-9]*.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_bad_event_is_rejected_naming_its_field(name: str) -> None:
    raw = (CORPUS / name).read_bytes()
    with pytest.raises(EventRejected) as caught:
        parse_event(raw, SITE)
    fields = [problem.field for problem in caught.value.problems]
    assert EXPECTED[name] in fields, f"{name}: expected a problem with {EXPECTED[name]!r}, got {caught.value}"
    assert all(problem.reason for problem in caught.value.problems)
