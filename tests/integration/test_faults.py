"""Model-based fault test: random events, duplicated and reordered, with crashes injected before and after
AWS calls in every adapter; after the queues drain, what is published equals the reference model."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from lxml import etree

from sitemap_updater.core.sharding import Limits
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.sweep import sweep
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import LocalRunFactory

NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
# Adapter methods that talk to AWS, by the pipeline attribute that holds the adapter.
CALLS = {
    "store": ("put_state", "leave_section", "put_entry", "open_outbox", "close_outbox", "put_file", "move_file_state",
              "delete_file", "clear_pending_index", "put_index_sha", "mark_sent"),
    "bucket": ("publish", "delete"),
    "rebuild_queue": ("send",),
    "index_queue": ("send",),
    "notify_queue": ("send",),
}  # fmt: skip


class InjectedFault(RuntimeError):
    """A crash or timeout, as Lambda would see it."""


class Faults:
    """Raises before or after a call with a small probability, at most ``budget`` times per wave."""

    def __init__(self, rng: random.Random, rate: float) -> None:
        self.rng, self.rate, self.budget, self.injected = rng, rate, 0, 0

    def wrap(self, call: Callable[..., Any], name: str) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self._maybe(f"before {name}")
            result = call(*args, **kwargs)
            self._maybe(f"after {name}")
            return result

        return wrapped

    def _maybe(self, where: str) -> None:
        if self.budget > 0 and self.rng.random() < self.rate:
            self.budget -= 1
            self.injected += 1
            raise InjectedFault(where)


def install(pipeline: Pipeline, faults: Faults) -> None:
    for attribute, names in CALLS.items():
        adapter = getattr(pipeline, attribute)
        for name in names:
            object.__setattr__(adapter, name, faults.wrap(getattr(adapter, name), f"{attribute}.{name}"))


def random_events(rng: random.Random, count: int) -> list[dict[str, Any]]:
    urls = [f"{BASE}/{rng.choice(['blog', 'docs', 'shop'])}/p{i}" for i in range(30)]
    events = []
    for _ in range(count):
        url = rng.choice(urls)
        version = rng.randint(0, 6)
        if rng.random() < 0.25:
            events.append(event(url, type="delete", version=version, occurred_at="2026-11-18T00:00:00Z"))
        else:
            events.append(event(url, version=version, lastmod=f"2026-11-{rng.randint(1, 20):02d}"))
    return events


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_update_is_lost_or_stale_under_faults(local_run: LocalRunFactory, seed: int) -> None:
    rng = random.Random(seed)
    run = local_run(max_urls_per_file=6)
    faults = Faults(rng, rate=0.05)
    install(run.pipeline, faults)
    sent: list[dict[str, Any]] = []
    for _wave in range(4):
        events = random_events(rng, 40)
        wave = events + rng.sample(events, 10)  # duplicated deliveries
        rng.shuffle(wave)  # reordered
        sent += wave
        faults.budget = 3  # a message fails at most 3 of its 5 receives
        run.send_wave([json.dumps(e) for e in wave])
    faults.budget = 0
    sweep(run.pipeline)  # the safety net for changes whose rebuild was never queued
    run.drain()
    published = run.published()
    assert faults.injected > 0
    assert published == reference_site(sent, Limits(max_urls=6)).all_bytes()
    named = [
        (loc.text or "").removeprefix(f"{BASE}/")
        for loc in etree.fromstring(published["sitemap.xml"]).iterfind("s:sitemap/s:loc", NS)
    ]
    assert all(name in published for name in named)
