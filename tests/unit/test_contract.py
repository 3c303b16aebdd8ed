"""The published contract and the layering rules stay true."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from sitemap_updater.core.events import event_json_schema

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "functions" / "sitemap_updater" / "core"


def test_docs_event_schema_matches_the_models() -> None:
    published = json.loads((ROOT / "docs" / "event.schema.json").read_text(encoding="utf-8"))
    assert published == event_json_schema(), "docs/event.schema.json drifted: run `make schema`"


def test_core_imports_no_io_layer() -> None:
    forbidden = ("boto3", "botocore", "sitemap_updater.adapters", "sitemap_updater.handlers",
                 "sitemap_updater.service", "sitemap_updater.cli", "os", "aws_lambda_powertools")  # fmt: skip
    for path in CORE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert not any(name == f or name.startswith(f + ".") for f in forbidden), f"{path.name} imports {name}"


HANDLERS = ("ingest", "rebuild_shard", "rebuild_index", "notify", "sweep", "upkeep")
# Modules a handler must not load at cold start: each costs every new Lambda container 40-240 ms
# (docs/benchmarks.md). Only the ingest path needs the event models.
HEAVY = {"boto3": HANDLERS, "s3transfer": HANDLERS, "aws_xray_sdk": HANDLERS,
         "sitemap_updater.core.events": tuple(h for h in HANDLERS if h != "ingest")}  # fmt: skip


def test_handlers_load_only_what_their_cold_start_needs() -> None:
    # Given each handler module imported in a fresh interpreter
    loaded: dict[str, set[str]] = {}
    for handler in HANDLERS:
        probe = f"import json, sys; import sitemap_updater.handlers.{handler}; print(json.dumps(sorted(sys.modules)))"
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                              env={**os.environ, "POWERTOOLS_SERVICE_NAME": "test"})  # fmt: skip
        loaded[handler] = set(json.loads(done.stdout))
    # Then none of them loads the heavy modules it does not need
    found = [(h, module) for module, handlers in HEAVY.items() for h in handlers if module in loaded[h]]
    assert found == []
