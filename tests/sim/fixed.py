"""The simulated deployment driven by given events instead of random ones: for tests that need a chosen input
(the bad-input corpus, the longest URLs, every order of one set of events) through the real handlers, with the
simulation's checks (the reference models, the dead-letter queue, notifications) at the end."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tests.sim.events import Events
from tests.sim.world import Config, Result, Simulation


class FixedSimulation(Simulation):
    """Sends ``bodies`` (valid events, as dicts) and ``malformed`` (raw bodies) in the given order, one every
    ``gap_s`` virtual seconds, without injected faults unless ``fault_rate`` says otherwise."""

    def __init__(
        self,
        bodies: Sequence[dict[str, Any]],
        malformed: Sequence[str] = (),
        *,
        seed: int = 1,
        max_urls: int = 10,
        fault_rate: float = 0.0,
        gap_s: float = 0.5,
    ) -> None:
        config = Config(seed, fault_rate=fault_rate, busy_rate=0.0, failing_rate=0.0, max_urls=max_urls)
        super().__init__(config)
        self._bodies = list(bodies)
        self._malformed = list(malformed)
        self._gap_s = gap_s

    def _events(self) -> Events:
        raw = [json.dumps(body) for body in self._bodies] + self._malformed
        sends = [(i * self._gap_s, text, 0.0) for i, text in enumerate(raw)]
        return Events(sends, self._bodies, set(self._malformed))

    def dead_letter_reasons(self) -> dict[str, str]:
        """Body -> the reason it was dead-lettered with."""
        dead = self.ingest_queue.dead_letter
        assert dead is not None
        return {m.body: m.attributes.get("reason", "") for m in dead.messages}

    def published(self) -> dict[str, bytes]:
        """Every sitemap file and the index, by name."""
        return {n: o.data for n, o in self.s3.objects.items() if n.endswith((".xml", ".xml.gz"))}


def run_fixed(bodies: Sequence[dict[str, Any]], malformed: Sequence[str] = (), **options: Any) -> FixedSimulation:
    """Run the events through the simulated deployment; the caller reads ``result`` and the bucket."""
    simulation = FixedSimulation(bodies, malformed, **options)
    simulation.result = simulation.run()
    return simulation


__all__ = ["FixedSimulation", "Result", "run_fixed"]
