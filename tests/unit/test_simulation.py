"""The simulated deployment (tests/sim): real handlers on in-memory AWS, with crashes, timeouts, duplicated,
delayed and reordered deliveries, concurrent invocations and SQS redelivery in virtual time. A fixed set of
seeds runs here; ``make soak`` runs thousands (docs/reliability.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from sitemap_updater.core.messages import Message, PageMark, mark_messages
from sitemap_updater.service.reconcile import Reconciliation
from tests.conftest import BASE, event
from tests.sim.events import Events
from tests.sim.fixed import run_fixed
from tests.sim.scheduler import LambdaDied
from tests.sim.world import Config, Simulation

# 1-20, and seeds that once found a bug
SEEDS = [*range(1, 21), 22, 89, 137, 670, 1120, 1208, 1266, 1357, 1544, 2282, 4162, 6187, 6327, 7005, 7231]


@pytest.mark.parametrize("seed", SEEDS)
def test_no_update_is_lost_stale_or_announced_twice(seed: int) -> None:
    # Given a random sequence of page events with faults injected around every AWS call
    simulation = Simulation(Config(seed))
    # When the queues have drained and the hourly sweep finds nothing left
    result = simulation.run()
    # Then the published files equal the reference model, the index never named a missing file, no older
    # bytes replaced newer ones, malformed events are in the DLQ with a reason, and every published change was
    # announced to IndexNow once (a crash after an accepted POST may repeat it); in a thirteenth of the seeds no
    # notifier is on, and the notifier is never invoked
    assert result.violations == []
    assert sum(result.faults.get(kind, 0) for kind in ("raised", "died")) > 0
    if simulation.notifiers:
        assert result.posts > 0
    else:
        assert result.posts == 0 and "NotifyFunction" not in result.invocations_by_function


# make soak's sequences over several sites (Config.for_soak): 3 adds one mid-run and removes another, 24 removes
# two, 84 had a site's index rebuild die before deleting a further index file it no longer needed, 1875 a deletion
# of a deleted page that found a dead move's removal marker where its tombstone had been (and kept no tombstone),
# 1932 a page shown only by bytes a rebuild put and died before announcing, which moved to another section and was
# deleted there before any file showed it (it was never announced).
SITE_SEEDS = [3, 24, 84, 1875, 1932]


# make soak's seeds that found announcement bugs (docs/architecture.md, Notifications): 475 files merged and split
# again under retired names before the index unnamed them; 878 a removal told to IndexNow by a notifier that died
# before the feed; 2751, 3320 and 3871 a page put by a dead attempt under a name the next rebuild abandoned while
# the page's own mark was on its way (announced removed, then never again); 3210 and 7644 a page deleted and
# published again before the index unnamed its retired file; 4074 a page moved away and back.
ANNOUNCE_SEEDS = [475, 878, 2751, 3210, 3320, 3871, 4074, 7644]


@pytest.mark.parametrize("seed", ANNOUNCE_SEEDS)
def test_soak_sequences_that_once_broke_announcements_keep_every_invariant(seed: int) -> None:
    assert Simulation(Config.for_soak(seed)).run().violations == []


@pytest.mark.parametrize("seed", SITE_SEEDS)
def test_sites_added_and_removed_at_run_time_keep_every_invariant_and_their_own_hosts(seed: int) -> None:
    # Given the stack's own site and 2-3 sites added at run time, each with its own events, under the faults
    config = Config.for_soak(seed)
    simulation = Simulation(config)
    assert config.sites >= 2 and len(simulation.trees) == 1 + config.sites
    # When the queues have drained
    result = simulation.run()
    # Then every site's files equal the reference models, no file of one site ever named a URL on another's host,
    # every change was announced once, and a site removed mid-run left no object, item or site behind
    assert result.violations == []
    assert result.sites == 1 + config.sites


def test_a_removal_that_deletes_at_once_leaves_what_running_rebuilds_write_after_it() -> None:
    # Given sequence 24 (two sites removed while their events flow), with `sites remove` deleting the tree at once
    # instead of waiting for the functions' cache and the invocations still running (service/sites.py)
    result = Simulation(replace(Config.for_soak(24), removal_wait_s=0)).run()
    # Then a removed site's files and records are written again after the deletion: what the wait prevents
    assert any(v.startswith("removed site") and "left" in v for v in result.violations), result.violations


def test_an_event_that_fails_on_every_receive_ends_in_the_dead_letter_queue_and_the_rest_publishes() -> None:
    # Given a sequence with an event whose URL is too long for a DynamoDB sort key (refused on every receive)
    result = Simulation(Config(6, failing_rate=1.0)).run()
    # Then it is in the ingest DLQ with DynamoDB's ValidationException as its reason, the DLQ alarm fires, and
    # every other event is published as the reference model says
    assert result.dead_lettered >= 1
    assert result.violations == []


@pytest.mark.parametrize("seed", [221, 282])
def test_moves_at_a_high_fault_rate(seed: int) -> None:
    # Given section moves, news, media and rank ties, with a fault around one AWS call in ten (seed 221 left a
    # moved page in its old section's file until ingest queued a pending change before overwriting it; 282
    # announced a page again for a change of expired news only)
    result = Simulation(Config(seed, fault_rate=0.1)).run()
    # Then every invariant holds
    assert result.violations == []


def test_the_checks_catch_a_lost_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an ingest that forgets to queue the rebuild of every fifth change
    original = mark_messages
    calls = {"n": 0}

    def forgetful(section: str, at_us: int, marks: list[PageMark], batch_changes: int = 0) -> Iterator[Message]:
        calls["n"] += 1
        return original(section, at_us, marks, batch_changes) if calls["n"] % 5 else iter([])

    monkeypatch.setattr("sitemap_updater.service.marks.mark_messages", forgetful)
    # When a sequence runs without faults
    result = Simulation(Config(1, fault_rate=0.0)).run()
    # Then the simulation reports stale published files
    assert any("reference model" in v for v in result.violations)


class _Scripted(Simulation):
    """A simulation whose events are given, not drawn."""

    def __init__(self, config: Config, script: list[tuple[float, dict[str, object]]]) -> None:
        super().__init__(config)
        self.script = script

    def _events(self) -> Events:
        return Events([(at, json.dumps(body), 0.0) for at, body in self.script], [body for _, body in self.script])


def test_a_move_whose_rebuild_mark_was_lost_leaves_no_copy_in_the_old_section(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a page published in "blog", then moved to "docs" by an ingest that dies after its writes and
    # before its rebuild marks, and a newer event for the page (still in "docs") that arrives before SQS
    # delivers the first move again
    url = f"{BASE}/blog/moved"
    original = mark_messages
    died: list[str] = []

    def dies_once(section: str, at_us: int, marks: list[PageMark], batch_changes: int = 0) -> Iterator[Message]:
        if section == "docs" and not died:
            died.append(section)
            raise LambdaDied("after dynamodb.put_item")
        return original(section, at_us, marks, batch_changes)

    monkeypatch.setattr("sitemap_updater.service.marks.mark_messages", dies_once)
    script: list[tuple[float, dict[str, object]]] = [
        (0.0, event(url, version=1, lastmod="2026-11-01")),
        (100.0, event(url, version=2, lastmod="2026-11-02", section="docs")),
        (110.0, event(url, version=3, lastmod="2026-11-03", section="docs")),
    ]
    # When the queues drain (the first move is redelivered after its visibility timeout, and is stale by then)
    result = _Scripted(Config(3, fault_rate=0.0, busy_rate=0.0), script).run()
    # Then the page is listed in exactly one file: the "docs" one the reference model renders
    assert died
    assert result.violations == []


def test_a_burst_over_many_sections_rebuilds_the_index_at_most_twice_per_cache_lifetime() -> None:
    # Given 400 changes over 20 sections, 10 a second for 40 s (every section publishes again and again)
    bodies = [event(f"{BASE}/s{i % 20}/p{i}", version=1) for i in range(400)]
    # When they go through the real handlers on the simulated deployment (the template's 5 s cache lifetime)
    sim = run_fixed(bodies, gap_s=0.1, max_urls=50)
    # Then every page is published as the reference models say
    assert sim.result.violations == []
    # And the index requests of one half-lifetime are one SQS message: at most two index rebuilds per 5 s, plus
    # the runs that settle the last files once their lifetime has passed (without this, one run per rebuild)
    runs = sim.result.invocations_by_function["RebuildIndexFunction"]
    rebuilds = sim.result.invocations_by_function["RebuildShardFunction"]
    assert runs <= 2 * (sim.result.virtual_s / 5 + 1)
    assert runs < rebuilds


def test_drift_made_out_of_band_is_repaired_and_the_checks_catch_it_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a sequence whose published site is changed out of band once it has settled (a deleted file, an
    # overwritten file, the index deleted, a stray file)
    config = Config(3, fault_rate=0.0)
    # Then reconciliation repairs it: every invariant holds
    assert Simulation(config).run().violations == []
    # And without reconciliation the simulation reports the site as broken
    monkeypatch.setattr("sitemap_updater.service.reconcile.reconcile", lambda _pipeline: Reconciliation())
    assert Simulation(config).run().violations != []


def test_text_sitemaps_follow_their_files_and_the_checks_catch_a_stale_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a sequence of a site with text sitemaps on (a fifth of the seeds), under faults
    config = Config(7)
    # Then each file's text twin lists its URLs
    assert Simulation(config).run().violations == []
    # And a rebuild that wrote empty twins is caught
    monkeypatch.setattr("sitemap_updater.service.publish.render_text", lambda _urls: b"")
    assert any("text sitemap" in v for v in Simulation(config).run().violations)
