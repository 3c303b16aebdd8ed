"""A moto server for the whole session; each test gets a fresh stack on it, created from template.yaml."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from sitemap_updater.local.runner import LocalRun
from tests.conftest import AS_OF_US, BASE, SECTIONS

FIXED_NOW = datetime.fromtimestamp(AS_OF_US / 1_000_000, UTC)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


LocalRunFactory = Callable[..., LocalRun]


@pytest.fixture
def local_run(moto_endpoint: str, request: pytest.FixtureRequest) -> Iterator[LocalRunFactory]:
    runs: list[LocalRun] = []
    counter = iter(range(1000))

    def make(
        max_urls_per_file: int | None = None, sections: str = SECTIONS, clock: Callable[[], datetime] | None = None
    ) -> LocalRun:
        name = f"t{abs(hash(request.node.nodeid)) % 10**8}-{next(counter)}"
        parameters = {"Sections": sections} if sections else None
        run = LocalRun(
            BASE, max_urls_per_file, moto_endpoint, clock=clock or (lambda: FIXED_NOW), name=name, parameters=parameters
        )
        runs.append(run)
        return run

    yield make
    for run in runs:
        run.close()


def bodies(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, ensure_ascii=False) for e in events]
