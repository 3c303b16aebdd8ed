"""The simulated deployment (tests/sim): real handlers on in-memory AWS, with crashes, timeouts, duplicated,
delayed and reordered deliveries, concurrent invocations and SQS redelivery in virtual time. A fixed set of
seeds runs here; ``make soak`` runs thousands (docs/reliability.md)."""

from __future__ import annotations

import pytest

from sitemap_updater.service import rebuild
from tests.sim.world import Config, Simulation

SEEDS = [*range(1, 21), 137, 1120, 1208, 1266, 2282]  # and seeds that once found a bug


@pytest.mark.parametrize("seed", SEEDS)
def test_no_update_is_lost_stale_or_announced_twice(seed: int) -> None:
    # Given a random sequence of page events with faults injected around every AWS call
    simulation = Simulation(Config(seed))
    # When the queues have drained and the hourly sweep finds nothing left
    result = simulation.run()
    # Then the published files equal the reference model, the index never named a missing file, no older
    # bytes replaced newer ones, malformed events are in the DLQ with a reason, and every published change was
    # announced to IndexNow once (a crash after an accepted POST may repeat it)
    assert result.violations == []
    assert sum(result.faults.get(kind, 0) for kind in ("raised", "died")) > 0
    assert result.posts > 0


def test_the_checks_catch_a_lost_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an ingest that forgets to queue the rebuild of every fifth change
    original = rebuild._mark_dirty
    calls = {"n": 0}

    def forgetful(*args: object) -> None:
        calls["n"] += 1
        if calls["n"] % 5:
            original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(rebuild, "_mark_dirty", forgetful)
    # When a sequence runs without faults
    result = Simulation(Config(7, fault_rate=0.0)).run()
    # Then the simulation reports stale published files
    assert any("reference model" in v for v in result.violations)
