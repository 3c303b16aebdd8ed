"""Ingest's conditional single-item writes against moto's DynamoDB: the conditions and projections as DynamoDB
evaluates them, with a crash between two writes. (Events for one URL at once are raced in the simulation, whose
DynamoDB applies each conditional write atomically as AWS does; moto's DynamoDB holds no lock between checking a
condition and writing, so it is no judge of threads racing on one item.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.adapters.manifest import ManifestStore, entry_sort_key
from sitemap_updater.core.pages import PageWrite
from sitemap_updater.core.sharding import Limits, page_key
from sitemap_updater.service.ingest import Outcome, ingest
from tests.conftest import BASE, event, reference_site
from tests.integration.conftest import LocalRunFactory

URL = f"{BASE}/blog/a"


def _item(store: ManifestStore, section: str) -> dict[str, Any] | None:
    key = {"pk": {"S": f"sec#{section}"}, "sk": {"S": entry_sort_key(page_key(URL), URL)}}
    found: dict[str, Any] | None = store._client.get_item(TableName=store.table, Key=key, ConsistentRead=True).get(
        "Item"
    )
    return found


def test_a_move_that_died_after_its_page_state_is_finished_by_its_redelivery(local_run: LocalRunFactory) -> None:
    # Given blog/a published, then its move to news dying right after the page state was written
    run = local_run(max_urls_per_file=8)
    first = event(URL, version=1, lastmod="2026-11-01")
    moved = event(URL, version=2, lastmod="2026-11-02", section="news")
    ingest(json.dumps(first), run.pipeline)
    store = run.pipeline.store
    assert isinstance(store, ManifestStore)
    original = store.put_state

    def dies_after(write: PageWrite, *args: Any) -> bool:
        original(write, *args)
        raise RuntimeError("the function timed out")

    object.__setattr__(store, "put_state", dies_after)
    with pytest.raises(RuntimeError):
        ingest(json.dumps(moved), run.pipeline)
    object.__setattr__(store, "put_state", original)
    assert _item(store, "news") is None  # nothing but the state was written
    # When SQS delivers it again
    result = ingest(json.dumps(moved), run.pipeline)
    run.drain()
    # Then it finished the writes: blog holds a removal marker (the rank, no record), news the entry
    assert result.outcome == Outcome.ACCEPTED
    marker, entry = _item(store, "blog"), _item(store, "news")
    assert marker is not None and entry is not None
    assert "record" not in marker and marker["rank"] == entry["rank"]
    # And the site is published as the reference model says, the page in news only
    assert run.published() == reference_site([first, moved], Limits(max_urls=8)).all_bytes()
    # And a third delivery is a duplicate that changes nothing
    assert ingest(json.dumps(moved), run.pipeline).outcome == Outcome.NOOP
