"""The bad-input corpus through ``local``: each case is rejected with its reason (from the DLQ where SQS carries it),
and its batch publishes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from sitemap_updater.core.lines import LongLine, decoded
from sitemap_updater.local.inputs import SQS_MAX_MESSAGE_BYTES, carried, preview
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_events"
EXPECTED: dict[str, str] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))


def test_every_bad_event_is_rejected_with_its_reason_and_its_batch_is_published(local_run: LocalRunFactory) -> None:
    # Given every corpus case that is not blank, as a wave file gives it (text, or bytes that are not UTF-8), each
    # placed between good events so that every batch of 10 mixes both
    cases: dict[str, str | bytes | LongLine] = {}
    for name in sorted(EXPECTED):
        data = (CORPUS / name).read_bytes()
        if data.strip():
            cases[name] = decoded(data)
    wave: list[str | bytes | LongLine] = []
    good_urls = []
    for i, body in enumerate(cases.values()):
        url = f"{BASE}/blog/good-{i}"
        good_urls.append(url)
        wave += [json.dumps(event(url, version=1)), body]
    run = local_run()
    # When the wave goes through the pipeline
    report = run.send_wave(wave).as_dict()
    # Then each bad event is rejected, with a reason naming its field: those SQS carries from the DLQ, the others
    # (not UTF-8, a character SQS refuses) before they are sent
    carried_here = {n for n, body in cases.items() if carried(body, SQS_MAX_MESSAGE_BYTES) is not None}
    assert report["events"]["rejected"] == len(cases)
    assert report["dlq"] == len(carried_here) and len(cases) - len(carried_here) >= 2
    reasons = {r["event"]: r["reason"] for r in report["rejections"]}
    for name, body in cases.items():
        reason = reasons[body if name in carried_here else preview(body)]
        assert f"; {reason}".count(f"; {EXPECTED[name]}: ") == 1, f"{name}: {reason}"
    # And every good event of those batches is published
    blog = gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"]).decode()
    assert all(f"<loc>{url}</loc>" in blog for url in good_urls)
