"""A re-section through the bootstrap state machine of template.yaml (the local harness over the real handler on a
local stack): after Sections changes on a live site, every page whose event named no section moves at once, and
the published files are those a build of the same pages with the new setting makes."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from sitemap_updater.core.events import parse_event
from sitemap_updater.core.layout import build_site
from sitemap_updater.core.reduce import reduce_states, split_states, state_from_event
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import Site, parse_sections
from sitemap_updater.local.bootstrap import LocalStateMachine
from sitemap_updater.local.runner import LocalRun
from sitemap_updater.service import resection
from sitemap_updater.service.ingest import ingest
from tests.conftest import AS_OF_US, BASE, HORIZON, event
from tests.integration.conftest import LocalRunFactory, bodies

MAX_URLS = 10


def expected(pages: list[dict[str, Any]], sections: str) -> dict[str, bytes]:
    """A fresh build of ``pages`` with the Sections setting ``sections``: every file and the index."""
    site = Site.parse(BASE, sections=parse_sections(sections))
    states = reduce_states(state_from_event(parse_event(json.dumps(p), site, HORIZON).event) for p in pages)
    entries, tombstones = split_states(states.values())
    return build_site(entries, tombstones, Limits(max_urls=MAX_URLS), AS_OF_US, BASE).all_bytes()


def site_pages() -> list[dict[str, Any]]:
    pages = [
        event(f"{BASE}/{segment}/p{i}", version=1, lastmod="2026-11-11")
        for segment in ("blog", "docs", "news")
        for i in range(30)
    ]
    # Pages whose events named their section: they stay where they are whatever the setting
    pages += [event(f"{BASE}/docs/named{i}", version=1, section="guides") for i in range(5)]
    pages += [event(f"{BASE}/blog/pinned", version=1, section="root")]
    # A deleted page: its tombstone moves with it, and it is published nowhere
    pages.append(event(f"{BASE}/docs/p3", type="delete", version=2))
    return pages


def resettle(run: LocalRun, sections: str) -> None:
    """The stack updated with a new Sections setting: every function reads it from then on."""
    settings = run.pipeline.settings.model_copy(update={"sections": sections})
    run.pipeline = replace(run.pipeline, settings=settings)


@pytest.mark.parametrize(("before", "after"), [("blog", "blog,docs"), ("blog", "*"), ("blog,docs", ""), ("*", "blog")])
def test_a_resection_moves_every_page_at_once_to_what_a_build_with_the_new_setting_makes(
    local_run: LocalRunFactory, before: str, after: str
) -> None:
    # Given a live site published with one Sections setting
    run = local_run(MAX_URLS, sections=before)
    pages = site_pages()
    run.send_wave(bodies(pages))
    assert run.published() == expected(pages, before)
    assert expected(pages, before) != expected(pages, after)
    # When the setting changes and a bootstrap runs with {"resection": true}
    resettle(run, after)
    execution = LocalStateMachine(run).execute("resection", resection=True)
    run.drain()
    # Then the published files are a fresh build's with the new setting, byte for byte (the index too), and the
    # files of sections left empty are gone
    assert execution.status == "SUCCEEDED", execution.error
    assert "LoadChunks" not in execution.states
    assert run.published() == expected(pages, after)
    assert execution.output["release"]["replayed"] == 0
    # And the same events sent again (a CMS replaying its feed) change nothing: a moved page is not moved back
    again = run.send_wave(bodies(pages))
    assert again.events["accepted"] == 0 and run.published() == expected(pages, after)


class _Meddling:
    """The stack's manifest store, with something happening at a chosen point of the pass (delegates the rest)."""

    def __init__(self, store: Any, **hooks: Any) -> None:
        self._store, self._hooks = store, hooks

    def __getattr__(self, name: str) -> Any:
        hook = self._hooks.get(name)
        real = getattr(self._store, name)
        if hook is None:
            return real
        return lambda *args, **kwargs: hook(real, *args, **kwargs)


def _moved_ranks(run: LocalRun, pages: list[dict[str, Any]]) -> dict[str, str]:
    found = {p["url"]: run.pipeline.store.get_page(p["url"]) for p in pages}
    return {url: page.rank for url, page in found.items() if page is not None and ">" in page.rank}


def test_a_newer_event_arriving_mid_pass_wins_and_is_published(local_run: LocalRunFactory) -> None:
    # Given a live site with Sections "blog", changed to "blog,docs"
    run = local_run(MAX_URLS, sections="blog")
    pages = site_pages()
    run.send_wave(bodies(pages))
    resettle(run, "blog,docs")
    target = f"{BASE}/docs/p7"
    newer = event(target, version=5, lastmod="2026-11-19", section="guides")
    plain = replace(run.pipeline)
    calls: list[str] = []

    def put_entry(real: Any, write: Any) -> Any:
        done = real(write)
        if write.url == target and not calls:  # the move's entry is written ahead; then the CMS sends an event
            calls.append(write.url)
            ingest(json.dumps(newer), plain)
        return done

    run.pipeline = replace(run.pipeline, store=_Meddling(run.pipeline.store, put_entry=put_entry))
    # When the pass runs (the event is recorded after the move read the page, before its conditional write)
    execution = LocalStateMachine(run).execute("mid-pass", resection=True)
    run.pipeline = plain
    run.drain()
    # Then the event's state stands (its section, its lastmod), the move took back the entry it wrote ahead, and
    # once the event's rebuild has run the site is a build of every newest event with the new setting
    assert execution.status == "SUCCEEDED", execution.error
    assert calls == [target]
    stored = run.pipeline.store.get_page(target)
    assert stored is not None and stored.section == "guides" and ">" not in stored.rank
    assert run.published() == expected([*pages, newer], "blog,docs")


def test_a_call_that_dies_mid_move_is_retried_and_moves_nothing_twice(local_run: LocalRunFactory) -> None:
    # Given a live site whose Sections change from "blog" to "*", and a worker that dies once, after the removal
    # marker of one move is written and before its page state (its content ahead in the new section, the old
    # section's copy replaced, the page state still naming the old section)
    run = local_run(MAX_URLS, sections="blog")
    pages = site_pages()
    run.send_wave(bodies(pages))
    resettle(run, "*")
    died: list[str] = []

    def leave_section(real: Any, section: str, write: Any) -> Any:
        result = real(section, write)
        if not died and ">" in write.rank:
            died.append(write.url)
            raise RuntimeError("the worker died")
        return result

    plain = run.pipeline
    run.pipeline = replace(run.pipeline, store=_Meddling(run.pipeline.store, leave_section=leave_section))
    # When the pass runs
    machine = LocalStateMachine(run)
    execution = machine.execute("retried", resection=True)
    run.pipeline = plain
    run.drain()
    # Then the failed call ran again, finished the cut-short move, and no page was moved twice; the site is a
    # fresh build's with the new setting
    assert execution.status == "SUCCEEDED", execution.error
    assert len(died) == 1 and len(execution.maps["Resection"].retried) == 1
    answers = [c.answer for c in machine.calls if c.step == "resection" and c.answer is not None]
    assert sum(a["finished"] for a in answers) == 1
    ranks = _moved_ranks(run, pages)
    assert set(ranks) == {p["url"] for p in pages if "section" not in p and "/blog/" not in p["url"]}
    assert all(rank.endswith(tuple(f">000001:{s}" for s in ("docs", "news"))) for rank in ranks.values())
    assert run.published() == expected(pages, "*")


def test_every_payload_stays_small_at_many_segments_and_the_longest_urls(
    local_run: LocalRunFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a site of pages whose URLs are as long as the contract allows (so every Scan cursor is as long as a key
    # can be), and a pass of 400 Scan segments
    monkeypatch.setattr(resection, "SEGMENTS", 400)
    run = local_run(MAX_URLS, sections="blog")
    pages = [event(f"{BASE}/docs/{i:04d}" + "x" * 2000, version=1) for i in range(40)]
    pages += [event(f"{BASE}/blog/{i}", version=1) for i in range(20)]
    run.send_wave(bodies(pages))
    resettle(run, "docs")
    # When the pass runs, each call reading one Scan page of 3 items (a cursor in most answers)
    monkeypatch.setattr(resection, "PAGES_A_CALL", 1)
    monkeypatch.setattr(resection, "SCAN_LIMIT", 3)
    machine = LocalStateMachine(run)
    execution = machine.execute("many", resection=True)
    run.drain()
    # Then it succeeded, every segment ran, and no state's input or output, no answer, came near 256 KiB
    assert execution.status == "SUCCEEDED", execution.error
    assert execution.maps["Resection"].items == 400
    answers = [c.answer for c in machine.calls if c.step == "resection" and c.answer is not None]
    assert len(answers) > 400 and sum(a["cursor"] is not None for a in answers) == len(answers) - 400
    assert sum(a["moved"] for a in answers) == 60  # docs from root, blog to root
    assert max(execution.largest.values()) < 8_192, execution.largest
    assert run.published() == expected(pages, "docs")
