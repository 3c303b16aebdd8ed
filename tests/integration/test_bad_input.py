"""The bad-input corpus through the pipeline: each case lands in the DLQ with its reason; its batch publishes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from sitemap_updater.core.event_rules import MAX_BODY_BYTES
from tests.conftest import BASE, event
from tests.integration.conftest import LocalRunFactory

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad_events"
EXPECTED: dict[str, str] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))


def test_every_bad_event_goes_to_the_dlq_and_its_batch_is_published(local_run: LocalRunFactory) -> None:
    # Given every corpus case SQS can carry (it refuses empty bodies and bodies over 256 KiB itself),
    # each placed between good events so that every batch of 10 mixes both
    sendable: dict[str, str] = {}
    for name in sorted(EXPECTED):
        data = (CORPUS / name).read_bytes()
        if data.strip() and len(data) <= MAX_BODY_BYTES:
            sendable[name] = data.decode("utf-8")
    wave: list[str] = []
    good_urls = []
    for i, body in enumerate(sendable.values()):
        url = f"{BASE}/blog/good-{i}"
        good_urls.append(url)
        wave += [json.dumps(event(url, version=1)), body]
    run = local_run()
    # When the wave goes through the pipeline
    report = run.send_wave(wave).as_dict()
    # Then each bad event is rejected, with a reason naming its field, and sits in the DLQ
    assert report["events"]["rejected"] == len(sendable)
    assert report["dlq"] == len(sendable)
    reasons = {r["event"]: r["reason"] for r in report["rejections"]}
    for name, body in sendable.items():
        assert EXPECTED[name] in reasons[body], f"{name}: {reasons[body]}"
    # And every good event of those batches is published
    blog = gzip.decompress(run.published()["sitemap-blog-00000000.xml.gz"]).decode()
    assert all(f"<loc>{url}</loc>" in blog for url in good_urls)
