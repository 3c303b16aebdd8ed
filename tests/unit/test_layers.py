"""Layers point down: the core does no I/O, the services talk to ports, wiring lives at the edge, and the
simulation's fakes implement the ports instead of deriving from the AWS adapters."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests.sim import fakes

PACKAGE = Path(__file__).resolve().parents[2] / "functions" / "sitemap_updater"
# What may not be imported, by layer: the core is pure (no AWS SDK, no adapters, no settings read from the
# environment); the services receive ports (no adapter, client or wiring); the ports know only the core.
FORBIDDEN = {
    "core": ("boto3", "botocore", "os", "sitemap_updater.adapters", "sitemap_updater.service",
             "sitemap_updater.settings", "sitemap_updater.wiring", "sitemap_updater.handlers"),
    "service": ("boto3", "botocore", "sitemap_updater.adapters", "sitemap_updater.wiring",
                "sitemap_updater.handlers", "sitemap_updater.local"),
    "ports.py": ("boto3", "botocore", "sitemap_updater.adapters", "sitemap_updater.service",
                 "sitemap_updater.wiring"),
}  # fmt: skip


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _modules(layer: str) -> list[Path]:
    target = PACKAGE / layer
    return [target] if target.is_file() else sorted(target.glob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_what_is_below_it(layer: str) -> None:
    wrong = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in _modules(layer)
        for name in _imports(path)
        if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[layer])
    }
    assert not wrong, sorted(wrong)


def test_the_simulations_fakes_implement_the_ports_without_deriving_from_the_adapters() -> None:
    derived = {
        f"{name} derives from {base.__module__}.{base.__qualname__}"
        for name, cls in inspect.getmembers(fakes, inspect.isclass)
        if cls.__module__ == fakes.__name__
        for base in cls.__mro__[1:]
        if base.__module__.startswith("sitemap_updater.adapters")
    }
    assert not derived, sorted(derived)
