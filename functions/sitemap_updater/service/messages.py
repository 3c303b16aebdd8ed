"""Use cases behind the SQS handlers: one message or one batch in, partial-failure answers out."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sitemap_updater.service.index import IndexRebuild, rebuild_index
from sitemap_updater.service.notify import Notifiers, NotifyResult, NotifyRetry, notify
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import DirtyMark, SectionRebuild, rebuild_section


@dataclass(slots=True)
class BatchOutcome:
    """Message IDs that failed (to be retried), and what the rest did."""

    failures: list[str]
    sections: list[SectionRebuild]
    errors: dict[str, str]

    def response(self) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": m} for m in self.failures]}


def rebuild_batch(records: list[dict[str, Any]], pipeline: Pipeline) -> BatchOutcome:
    """Coalesce a FIFO batch by section and rebuild each section once. A failed section fails all of its
    messages (so FIFO order holds); other sections still publish."""
    by_section: dict[str, list[tuple[str, DirtyMark]]] = defaultdict(list)
    for record in records:
        for mark in DirtyMark.from_message(json.loads(record["body"])):
            by_section[mark.section].append((record["messageId"], mark))
    outcome = BatchOutcome([], [], {})
    for section in sorted(by_section):
        items = by_section[section]
        try:
            done = rebuild_section(pipeline, section, [mark for _, mark in items])
            outcome.sections.append(done)
            pipeline.observe(done)
        except Exception as exc:
            outcome.failures += [
                m for m in dict.fromkeys(message_id for message_id, _ in items) if m not in outcome.failures
            ]
            outcome.errors[section] = f"{type(exc).__name__}: {exc}"
    return outcome


def index_batch(records: list[dict[str, Any]], pipeline: Pipeline) -> tuple[IndexRebuild | str, list[str]]:
    """Any number of index requests give one index rebuild; on failure every message is retried and the
    error (its type and message) is returned in place of the result."""
    try:
        done = rebuild_index(pipeline)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}", [record["messageId"] for record in records]
    pipeline.observe(done)
    return done, []


def notify_batch(
    records: list[dict[str, Any]], pipeline: Pipeline, notifiers: Notifiers
) -> tuple[NotifyResult | None, list[str]]:
    """All change records of a batch are coalesced into as few requests as possible. When a search engine
    keeps answering 429 or 5xx, every message is retried (what was accepted is recorded and not resent)."""
    try:
        done = notify([json.loads(record["body"]) for record in records], pipeline, notifiers)
    except NotifyRetry:
        return None, [record["messageId"] for record in records]
    pipeline.observe(done)
    return done, []
