"""Rebuild requests parked while an import or a bootstrap runs, and sent again when it ends.

An import renders every section itself; a rebuild running meanwhile would plan a section from half its records.
So the rebuild function keeps the requests it receives (one item per batch, written only if the import still
runs: a transaction checks its item), and the import's end, or the hourly sweep after an import that died
having ended, sends them to the rebuild queue again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sitemap_updater.core.moments import to_micros
from sitemap_updater.service.pipeline import Pipeline


def park_batch(pipeline: Pipeline, records: list[dict[str, Any]]) -> bool:
    """While an import runs, keep a rebuild batch's requests for its end instead of rebuilding; False when none
    runs (rebuild now)."""
    if not records or not pipeline.store.import_running():
        return False
    messages = [(str(r.get("attributes", {}).get("MessageGroupId", "")), str(r.get("body", ""))) for r in records]
    parked_id = f"{to_micros(pipeline.clock()):016x}#{records[0].get('messageId', '')}"
    return pipeline.store.park(parked_id, messages)


def replay_parked(pipeline: Pipeline) -> int:
    """Send every parked rebuild request to the rebuild queue again (when no import runs); the number sent."""
    sent = 0
    for parked_id, messages in pipeline.store.parked():
        for number, (group, body) in enumerate(messages):
            dedup = hashlib.sha256(f"{parked_id}#{number}".encode()).hexdigest()
            pipeline.rebuild_queue.send_raw_grouped(body, {}, group or "parked", dedup)
        pipeline.store.unpark(parked_id)
        sent += len(messages)
    return sent
