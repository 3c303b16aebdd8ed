"""Use cases behind the SQS handlers: one message or one batch in, partial-failure answers out.

A message that fails on its queue's last allowed receive is sent to the queue's dead-letter queue with its error
as the ``reason`` (``service/dead_letters.py``) and reported handled, so none is moved there without one."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sitemap_updater.core.messages import INDEX_GROUP, NOTIFY_GROUP, DirtyMark, read_rebuild_request
from sitemap_updater.service.dead_letters import DeadLetter, DeadLetters, Settled, error_text, settle
from sitemap_updater.service.index import IndexRebuild, rebuild_index
from sitemap_updater.service.notify import Notifiers, NotifyResult, NotifyRetry, notify
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import SectionRebuild, rebuild_section


@dataclass(slots=True)
class BatchOutcome:
    """Message IDs that failed (to be retried), and what the rest did."""

    failures: list[str]
    sections: list[SectionRebuild]
    errors: dict[str, str]  # section -> error
    unreadable: dict[str, str] = field(default_factory=dict)  # message ID -> why it could not be read
    dead_lettered: list[DeadLetter] = field(default_factory=list)
    unsent: dict[str, str] = field(default_factory=dict)  # message ID -> why its dead-letter send failed

    def response(self) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": m} for m in self.failures]}


def rebuild_dead_letters(pipeline: Pipeline) -> DeadLetters:
    return DeadLetters(pipeline.rebuild_dead_letters, pipeline.settings.rebuild_max_receive_count)


def index_dead_letters(pipeline: Pipeline) -> DeadLetters:
    return DeadLetters(pipeline.index_dead_letters, pipeline.settings.index_max_receive_count)


def notify_dead_letters(pipeline: Pipeline) -> DeadLetters:
    return DeadLetters(pipeline.notify_dead_letters, pipeline.settings.notify_max_receive_count)


def rebuild_batch(records: list[dict[str, Any]], pipeline: Pipeline) -> BatchOutcome:
    """Coalesce a FIFO batch by section and rebuild each section once. A failed section fails all of its
    messages (so FIFO order holds); other sections still publish. Of a failed section's messages, those on
    their last allowed receive are dead-lettered with the error; a message that cannot be read fails alone."""
    by_section: dict[str, list[tuple[str, DirtyMark]]] = defaultdict(list)
    message_errors: dict[str, str] = {}
    outcome = BatchOutcome([], [], {})
    for record in records:
        message_id = str(record["messageId"])
        try:
            marks = read_rebuild_request(json.loads(record["body"]))
        except Exception as exc:
            message_errors[message_id] = outcome.unreadable[message_id] = f"unreadable: {error_text(exc)}"
            continue
        for mark in marks:
            by_section[mark.section].append((message_id, mark))
    for section in sorted(by_section):
        items = by_section[section]
        try:
            done = rebuild_section(pipeline, section, [mark for _, mark in items])
            outcome.sections.append(done)
            pipeline.observe(done)
        except Exception as exc:
            error = error_text(exc)
            outcome.errors[section] = error
            for message_id in dict.fromkeys(message_id for message_id, _ in items):
                # A message marking several failed sections is dead-lettered once, with every error.
                known = message_errors.get(message_id)
                message_errors[message_id] = f"{known}; {section}: {error}" if known else f"{section}: {error}"
    settled = settle(records, message_errors, rebuild_dead_letters(pipeline))
    _take(outcome, settled)
    return outcome


def index_batch(records: list[dict[str, Any]], pipeline: Pipeline) -> tuple[IndexRebuild | str, Settled]:
    """Any number of index requests give one index rebuild; on failure every message is retried (those on their
    last receive dead-lettered with the error) and the error (its type and message) is returned in place of the
    result."""
    try:
        done = rebuild_index(pipeline)
    except Exception as exc:
        error = error_text(exc)
        errors = {str(record["messageId"]): error for record in records}
        return error, settle(records, errors, index_dead_letters(pipeline), INDEX_GROUP)
    pipeline.observe(done)
    return done, Settled()


def notify_batch(
    records: list[dict[str, Any]], pipeline: Pipeline, notifiers: Notifiers
) -> tuple[NotifyResult | str | None, Settled]:
    """All change records of a batch are coalesced into as few requests as possible. When a search engine
    keeps answering 429 or 5xx (the result is None), or the notifier fails (the result is the error), every
    message is retried (what was accepted is recorded and not resent), and those on their last receive are
    dead-lettered with the error. A record that cannot be read fails alone."""
    readable: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for record in records:
        try:
            body = json.loads(record["body"])
        except ValueError as exc:
            errors[str(record["messageId"])] = f"unreadable change record: {error_text(exc)}"
            continue
        readable.append(body)
    result: NotifyResult | str | None
    try:
        done = notify(readable, pipeline, notifiers)
    except NotifyRetry as exc:
        result = None
        error = f"search engine busy: {error_text(exc)}"
    except Exception as exc:
        result = error = error_text(exc)
    else:
        pipeline.observe(done)
        return done, settle(records, errors, notify_dead_letters(pipeline), NOTIFY_GROUP)
    for record in records:
        errors.setdefault(str(record["messageId"]), error)
    return result, settle(records, errors, notify_dead_letters(pipeline), NOTIFY_GROUP)


def _take(outcome: BatchOutcome, settled: Settled) -> None:
    outcome.failures += settled.failures
    outcome.dead_lettered += settled.dead_lettered
    outcome.unsent.update(settled.unsent)
