"""No state of the bootstrap state machine, and no step's answer, comes near Step Functions' 256 KiB, whatever the
site's sections: run through the harness (the template's definition, the real worker) on the simulation's
in-memory AWS, at the widest layout the product allows (every page in a section of its own, each name the longest
an event may give, in characters that JSON escapes to 12 bytes each)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

import pytest

from sitemap_updater.core.event_rules import MAX_SECTION_CHARS
from sitemap_updater.handlers import bootstrap as handler
from sitemap_updater.local.bootstrap import PAYLOAD_LIMIT, LocalStateMachine
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.service import bootstrap
from sitemap_updater.wiring.pipeline import use_pipeline
from tests.conftest import BASE, event
from tests.sim.fakes import S3Object
from tests.sim.world import Config, Simulation

SECTIONS = 600  # 600 names of 100 such characters: 720 KB as one JSON object, nearly three times the limit
BOUND = 8 * 1024  # what any state or answer may hold here: names and counts, never one entry a section


class SimBackend:
    """The worker and its bucket on a simulation (no metering)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]:
        use_pipeline(self.sim.pipeline)
        try:
            return dict(handler.handler(payload, cast(Any, LocalContext("bootstrap"))))
        finally:
            use_pipeline(None)

    def list_objects(self, prefix: str) -> list[dict[str, Any]]:
        objects = self.sim.s3.objects
        return [{"Key": k, "Size": len(o.data)} for k, o in sorted(objects.items()) if k.startswith(prefix)]

    def get_object(self, key: str) -> bytes:
        return bytes(self.sim.s3.objects[key].data)

    def put_object(self, key: str, body: bytes) -> None:
        self.sim.s3.objects[key] = S3Object(body, hashlib.md5(body).hexdigest(), 0)


def _widest_sections(count: int) -> list[str]:
    """``count`` section names of MAX_SECTION_CHARS characters outside the BMP (JSON: a surrogate pair each)."""
    return [f"{i:04d}" + "\U0001d530" * (MAX_SECTION_CHARS - 4) for i in range(count)]


def _run(sections: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(bootstrap, "RECORD_THREADS", 1)  # the fakes take one call at a time
    sim = Simulation(Config(0, max_urls=10, max_files_per_index=50_000))
    machine = LocalStateMachine(SimBackend(sim))
    pages = [event(f"{BASE}/p/{i}", section=name) for i, name in enumerate(_widest_sections(sections))]
    lines = [json.dumps(p) for p in pages]
    machine.upload("wide", ["\n".join(lines[: sections // 2]).encode(), "\n".join(lines[sections // 2 :]).encode()])
    return machine.execute("wide")


def test_every_state_and_answer_stays_far_below_256_kib_at_the_widest_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    execution = _run(SECTIONS, monkeypatch)
    assert execution.status == "SUCCEEDED", execution.error
    assert execution.maps["RenderRanges"].items == SECTIONS  # one range a section: every name went through
    measured = execution.largest
    assert {"Plan result", "LoadChunk result", "RenderRange result", "RenderRanges item input"} <= measured.keys()
    assert max(measured.values()) < BOUND < PAYLOAD_LIMIT, sorted(measured.items(), key=lambda kv: -kv[1])[:3]


def test_the_sizes_do_not_grow_with_the_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    few, many = _run(2, monkeypatch).largest, _run(60, monkeypatch).largest
    assert few.keys() == many.keys()
    assert all(many[where] - few[where] <= 8 for where in few), {k: (few[k], many[k]) for k in few}
