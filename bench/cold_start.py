"""Cold start: the import time of each handler module in a fresh interpreter (`python -X importtime`), and the
imports that dominate it. Median of 5 fresh processes per handler."""

from __future__ import annotations

import statistics
import subprocess
import sys

HANDLERS = (
    "ingest",
    "rebuild_shard",
    "rebuild_index",
    "notify",
    "sweep",
    "upkeep",
    "reconcile",
    "webhook",
    "bootstrap",
)
RUNS = 5
# Top-level packages whose import time is reported on their own.
GROUPS = ("aws_lambda_powertools", "pydantic", "pydantic_core", "boto3", "botocore", "lxml", "sitemap_updater")


def _import_times(module: str) -> tuple[float, dict[str, float]]:
    """Total import seconds of ``module`` and the self time of each top-level package it pulled in."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env={"POWERTOOLS_SERVICE_NAME": "bench", "PATH": ""},
    )
    total = 0.0
    groups: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if not parts[0].isdigit():
            continue
        self_us, cumulative_us, name = int(parts[0]), int(parts[1]), parts[2]
        top = name.strip().split(".")[0]
        groups[top] = groups.get(top, 0.0) + self_us / 1e6
        if name.strip() == module:
            total = cumulative_us / 1e6
    return total, groups


def measure() -> list[tuple[str, float, list[tuple[str, float]]]]:
    """Per handler: the median import seconds and the five heaviest packages (self time, last run)."""
    rows = []
    for handler in HANDLERS:
        module = f"sitemap_updater.handlers.{handler}"
        samples = [_import_times(module) for _ in range(RUNS)]
        total = statistics.median(t for t, _ in samples)
        heaviest = sorted(samples[-1][1].items(), key=lambda kv: -kv[1])[:5]
        rows.append((handler, total, heaviest))
        print(f"{handler:>14}: {total * 1000:6.0f} ms; " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in heaviest))
    return rows


if __name__ == "__main__":
    measure()
