"""The published contract and the layering rules stay true."""

from __future__ import annotations

import ast
import json
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
