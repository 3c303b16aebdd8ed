"""Invoke one Lambda handler the way the runtime does, with only the built package importable.

Run as ``python -I -S -B driver.py PACKAGE HANDLER EVENT_JSON RESULT_JSON``: no site-packages, no environment
paths. Writes the handler's response, the loaded modules, and those that came from neither the package nor the
standard library; an exception in the handler propagates (non-zero exit, traceback on stderr)."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Context:
    """The parts of the Lambda context that Powertools reads."""

    function_name: str
    memory_limit_in_mb: int = 512
    aws_request_id: str = "package-test"
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:package-test"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def module_paths(module: ModuleType) -> list[str]:
    """Where a module was loaded from: its file, or a namespace package's folders (none for built-ins)."""
    file = getattr(module, "__file__", None)
    if file:
        return [file]
    return [str(p) for p in getattr(module, "__path__", [])]


def foreign_modules(package: Path, stdlib: list[Path]) -> list[str]:
    """Loaded modules from anywhere but the package and the standard library."""
    roots = [package.resolve(), *(p.resolve() for p in stdlib)]
    found = []
    for name, module in sorted(sys.modules.items()):
        if name == "__main__":  # this script
            continue
        for path in module_paths(module):
            if not any(Path(path).resolve().is_relative_to(root) for root in roots):
                found.append(f"{name}: {path}")
    return found


def main(package: Path, handler_path: str, event_file: Path, result_file: Path) -> None:
    stdlib = [Path(p) for p in sys.path if p]  # with -I -S: the standard library only
    if sys.flags.isolated != 1 or sys.flags.no_site != 1 or any("site-packages" in str(p) for p in stdlib):
        raise SystemExit(f"run with -I -S so that only the standard library is importable: {sys.path}")
    sys.path.insert(0, str(package))
    module_name, function_name = handler_path.rsplit(".", 1)
    handler = getattr(importlib.import_module(module_name), function_name)
    event = json.loads(event_file.read_text(encoding="utf-8"))
    response = handler(event, Context(function_name=module_name.rsplit(".", 1)[-1]))
    result = {"response": response, "foreign_modules": foreign_modules(package, stdlib), "modules": sorted(sys.modules),
              "python": list(sys.version_info[:2])}  # fmt: skip
    result_file.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
