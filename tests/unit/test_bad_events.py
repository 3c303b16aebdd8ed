"""The bad-input corpus (tests/data/bad_events): every case is rejected with a reason naming its field, by the
model path and the build's fast path alike, as bytes (an export line) and as text (an SQS body); through the
simulated deployment each lands in the ingest dead-letter queue with that reason while the rest publishes.
``tests/integration/test_bad_corpus_build.py`` runs it through ``build``, ``test_bad_input.py`` through
``local``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sitemap_updater.core.errors import EventRejected
from sitemap_updater.core.events import parse_event
from sitemap_updater.core.fastline import LineParser
from sitemap_updater.core.lines import decoded
from sitemap_updater.core.urls import Site
from sitemap_updater.local.inputs import SQS_MAX_MESSAGE_BYTES, carried
from tests.conftest import BASE, HORIZON, event
from tests.sim.fixed import run_fixed

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_events"
EXPECTED: dict[str, str] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
SITE = Site.parse(BASE, sections=None)


def test_the_corpus_has_at_least_150_cases() -> None:
    assert len(EXPECTED) >= 150
    assert {p.name for p in CORPUS.glob("[0-9]*.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_bad_event_is_rejected_naming_its_field(name: str) -> None:
    raw = (CORPUS / name).read_bytes()
    text = decoded(raw)  # as the text SQS delivers, where it is UTF-8
    for body in (raw, text) if isinstance(text, str) else (raw,):  # and as an export line
        with pytest.raises(EventRejected) as caught:
            parse_event(body, SITE, HORIZON)
        fields = [problem.field for problem in caught.value.problems]
        assert EXPECTED[name] in fields, f"{name}: expected a problem with {EXPECTED[name]!r}, got {caught.value}"
        assert all(problem.reason for problem in caught.value.problems)
    # The build's fast path takes none of them: it leaves every rejection to the model path
    assert LineParser(SITE, HORIZON).record(raw) is None


def test_every_case_sqs_can_carry_is_dead_lettered_with_its_reason_and_the_rest_publishes() -> None:
    # Given every case SQS can carry (not empty, UTF-8 of SQS's characters within its size), each after a good event
    sendable = {}
    for name in sorted(EXPECTED):
        data = (CORPUS / name).read_bytes()
        if data.strip() and (text := carried(decoded(data), SQS_MAX_MESSAGE_BYTES)) is not None:
            sendable[name] = text
    good = [event(f"{BASE}/blog/good-{i}", version=1) for i in range(len(sendable))]
    # When they go through the real handlers on the simulated AWS
    sim = run_fixed(good, list(sendable.values()), max_urls=50, gap_s=0.1)
    # Then each bad event is in the ingest dead-letter queue with a reason naming its field, and nothing else is
    reasons = sim.dead_letter_reasons()
    assert set(reasons) == set(sendable.values())
    for name, body in sendable.items():
        assert f"; {reasons[body]}".count(f"; {EXPECTED[name]}: ") == 1, f"{name}: {reasons[body]}"
    # And every good event is published, as the reference models say
    assert sim.result.violations == []
    shown = b"".join(gzip.decompress(d) for n, d in sim.published().items() if n.endswith(".gz"))
    assert all(f"<loc>{body['url']}</loc>".encode() in shown for body in good)
