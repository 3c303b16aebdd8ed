"""Mutation testing of core/ and the recovery services (``make mutate``; not part of ``make test``).

Each mutant is one small change to one module (a flipped comparison, a shifted constant, a removed call or
statement, a swapped operator, a negated condition). Third-party packages are imported once; each mutant runs in
a forked child that loads the mutated module in place of the real one and runs only the tests that cover that
module, stopping at the first failure. A mutant is killed when a test fails or it runs past its time limit.
Mutants known to behave exactly like the original are listed in ``EQUIVALENT`` with the reason, and in
docs/testing.md.

    python -m tests.mutation [--module core/urls.py] [--sample N] [--seed S] [--list]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import importlib.abc
import importlib.machinery
import importlib.util
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "functions" / "sitemap_updater"

_CORE_TESTS = [
    "tests/unit/test_conformance.py",
    "tests/unit/test_limits.py",
    "tests/unit/test_oracle.py",
    "tests/unit/test_url_rules.py",
    "tests/unit/test_core_rules.py",
]
# Module -> the tests that cover it (fast ones first: the first failure ends the run).
TESTS: dict[str, list[str]] = {
    "core/text.py": ["tests/unit/test_text.py", *_CORE_TESTS, "tests/unit/test_events.py"],
    "core/urls.py": ["tests/unit/test_urls.py", *_CORE_TESTS, "tests/unit/test_events.py"],
    "core/entry.py": [*_CORE_TESTS, "tests/unit/test_render.py", "tests/unit/test_events.py"],
    "core/render.py": [*_CORE_TESTS, "tests/unit/test_render.py", "tests/unit/test_sharding.py"],
    "core/sharding.py": ["tests/unit/test_sharding.py", *_CORE_TESTS, "tests/unit/test_render.py"],
    "core/layout.py": [*_CORE_TESTS, "tests/unit/test_recovery.py", "tests/unit/test_sharding.py"],
    "core/reduce.py": [*_CORE_TESTS, "tests/unit/test_properties.py", "tests/unit/test_render.py"],
    "core/events.py": ["tests/unit/test_events.py", "tests/unit/test_bad_events.py", *_CORE_TESTS],
    "core/errors.py": ["tests/unit/test_bad_events.py", "tests/unit/test_events.py", *_CORE_TESTS],
    "core/moments.py": [*_CORE_TESTS, "tests/unit/test_events.py", "tests/unit/test_fastline.py"],
    "core/records.py": [
        "tests/unit/test_records.py",
        "tests/unit/test_fastline.py",
        "tests/unit/test_recovery.py",
        *_CORE_TESTS,
    ],
    "core/fastline.py": ["tests/unit/test_fastline.py", "tests/unit/test_limits.py"],
    "service/ingest.py": ["tests/unit/test_recovery.py", "tests/unit/test_simulation.py"],
    "service/rebuild.py": [
        "tests/unit/test_recovery.py",
        "tests/unit/test_rebuild_edges.py",
        "tests/unit/test_rebuild_boundaries.py",
        "tests/unit/test_simulation.py",
    ],
    "service/index.py": [
        "tests/unit/test_cdn_lifetime.py",
        "tests/unit/test_recovery.py",
        "tests/unit/test_rebuild_edges.py",
        "tests/unit/test_simulation.py",
    ],
    "service/sweep.py": [
        "tests/unit/test_sweep_upkeep.py",
        "tests/unit/test_recovery.py",
        "tests/integration/test_handlers_and_sweep.py",
    ],
    "service/dead_letters.py": [
        "tests/unit/test_dead_letter_reasons.py",
        "tests/unit/test_simulation.py",
        "tests/integration/test_dead_letters.py",
    ],
    "service/messages.py": [
        "tests/unit/test_batch_outcomes.py",
        "tests/unit/test_simulation.py",
        "tests/integration/test_dead_letters.py",
    ],
    "service/notify.py": [
        "tests/unit/test_aws_failures.py",
        "tests/unit/test_simulation.py",
        "tests/integration/test_notify.py",
    ],
    "service/bulk_import.py": ["tests/integration/test_pipeline.py"],
    "service/adopt.py": ["tests/integration/test_import.py"],
    "service/build.py": ["tests/integration/test_build_cli.py"],
    "service/pipeline.py": [
        "tests/unit/test_cold_start.py",
        "tests/unit/test_recovery.py",
        "tests/integration/test_dead_letters.py",
    ],
    "service/runtime.py": ["tests/unit/test_cold_start.py", "tests/integration/test_handlers_and_sweep.py"],
}


def _equivalent() -> dict[str, str]:
    """Mutants that cannot change behaviour (``tests/mutation_equivalent.tsv``): key -> the reason."""
    lines = (ROOT / "tests" / "mutation_equivalent.tsv").read_text(encoding="utf-8").splitlines()
    return dict(tuple(line.split("\t", 1)) for line in lines if line and not line.startswith("#"))  # type: ignore[misc]


EQUIVALENT = _equivalent()

_SWAP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_SWAP_BINOP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
_QUIET_CALLS = ("Error", "Exception", "Rejected", "LimitExceeded", "Field", "warning", "exception", "info", "debug")


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int  # the index-th mutation site of the module, in walk order
    line: int
    description: str
    source_line: str
    occurrence: int = 0  # among mutants of the module with the same description and source line (0: unique)

    @property
    def ident(self) -> str:
        return f"{self.module}:{self.line}: {self.description} in `{self.source_line}`"

    @property
    def key(self) -> str:
        """The ident without the line number (stable while other lines are edited)."""
        key = f"{self.module}: {self.description} in `{self.source_line}`"
        return f"{key} #{self.occurrence}" if self.occurrence else key


Apply = Callable[[ast.AST], ast.AST | None]


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _constant(value: str | bool | int) -> Apply:
    return lambda _node: ast.Constant(value)


def _mutations(node: ast.AST, quiet: bool) -> list[tuple[str, Apply]]:
    """The mutations of one node: (description, function returning the replacement node)."""
    found: list[tuple[str, Apply]] = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            swap = _SWAP_COMPARE.get(type(op))
            if swap is not None:

                def compare(n: ast.AST, i: int = i, swap: type[ast.cmpop] = swap) -> ast.AST:
                    assert isinstance(n, ast.Compare)
                    n.ops[i] = swap()
                    return n

                found.append((f"{type(op).__name__} -> {swap.__name__}", compare))
    elif isinstance(node, ast.BinOp) and type(node.op) in _SWAP_BINOP:
        swap_op = _SWAP_BINOP[type(node.op)]

        def binop(n: ast.AST, swap_op: type[ast.operator] = swap_op) -> ast.AST:
            assert isinstance(n, ast.BinOp)
            n.op = swap_op()
            return n

        found.append((f"{type(node.op).__name__} -> {swap_op.__name__}", binop))
    elif isinstance(node, ast.BoolOp):
        other: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And

        def boolop(n: ast.AST, other: type[ast.boolop] = other) -> ast.AST:
            assert isinstance(n, ast.BoolOp)
            n.op = other()
            return n

        found.append((f"{type(node.op).__name__} -> {other.__name__}", boolop))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        found.append(("not removed", lambda n: n.operand if isinstance(n, ast.UnaryOp) else n))
    elif isinstance(node, ast.Constant) and not quiet:
        value = node.value
        if isinstance(value, bool):
            found.append((f"{value} -> {not value}", _constant(not value)))
        elif isinstance(value, int):
            found.append((f"{value} -> {value + 1}", _constant(value + 1)))
            if value > 1:
                found.append((f"{value} -> {value - 1}", _constant(value - 1)))
        elif isinstance(value, str) and value:
            found.append((f"{value[:30]!r} -> 'XX'+...", _constant("XX" + value)))
    elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and isinstance(node.func, ast.Name):
        if not isinstance(node.args[0], ast.Starred):
            found.append((f"call {node.func.id}(x) -> x", lambda n: n.args[0] if isinstance(n, ast.Call) else n))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        found.append((f"call {_call_name(node.value)}() removed", lambda _n: ast.Pass()))
    elif isinstance(node, ast.Continue | ast.Break):
        found.append((f"{type(node).__name__.lower()} -> pass", lambda _n: ast.Pass()))
    elif isinstance(node, ast.If | ast.While | ast.IfExp) and not isinstance(node.test, ast.Compare | ast.UnaryOp):

        def negate(n: ast.AST) -> ast.AST:
            assert isinstance(n, ast.If | ast.While | ast.IfExp)
            n.test = ast.UnaryOp(ast.Not(), n.test)
            return n

        found.append(("condition negated", negate))
    return found


def _is_docstring(parent: ast.AST, field: str, index: int) -> bool:
    body_owner = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    return isinstance(parent, body_owner) and field == "body" and index == 0


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, int, ast.AST, list[tuple[str, Apply]]]]:
    """(parent, field, index in list or -1, node, mutations) in a fixed order."""

    def visit(parent: ast.AST, quiet: bool) -> Iterator[tuple[ast.AST, str, int, ast.AST, list[tuple[str, Apply]]]]:
        for field, value in ast.iter_fields(parent):
            if field in ("annotation", "returns", "type_comment", "decorator_list"):
                continue
            children = value if isinstance(value, list) else [value]
            for index, child in enumerate(children):
                if not isinstance(child, ast.AST):
                    continue
                if _is_docstring(parent, field, index) and isinstance(child, ast.Expr):
                    continue
                if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                    continue
                child_quiet = quiet or isinstance(child, ast.Raise | ast.Assert | ast.JoinedStr)
                if isinstance(child, ast.Call) and _call_name(child).endswith(_QUIET_CALLS):
                    child_quiet = True
                if isinstance(child, ast.Import | ast.ImportFrom):
                    continue
                mutations = _mutations(child, quiet)
                if mutations:
                    yield parent, field, index if isinstance(value, list) else -1, child, mutations
                yield from visit(child, child_quiet)

    yield from visit(tree, False)


def enumerate_mutants(module: str) -> list[Mutant]:
    source = (PACKAGE / module).read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    mutants: list[Mutant] = []
    count = 0
    for _parent, _field, _index, node, mutations in _sites(tree):
        for description, _apply in mutations:
            line = getattr(node, "lineno", 0)
            mutants.append(Mutant(module, count, line, description, lines[line - 1].strip()[:80] if line else ""))
            count += 1
    # Mutants that would share a key (the same change on two equal lines, or twice on one line) are numbered.
    seen: dict[str, int] = {}
    for mutant in mutants:
        seen[mutant.key] = seen.get(mutant.key, 0) + 1
    numbered: dict[str, int] = {}
    for i, mutant in enumerate(mutants):
        if seen[mutant.key] > 1:
            numbered[mutant.key] = numbered.get(mutant.key, 0) + 1
            mutants[i] = replace(mutant, occurrence=numbered[mutant.key])
    return mutants


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse((PACKAGE / mutant.module).read_text())
    count = 0
    for parent, field, index, node, mutations in _sites(tree):
        for _description, apply in mutations:
            if count == mutant.index:
                replacement = apply(copy.deepcopy(node))
                if index >= 0:
                    getattr(parent, field)[index] = replacement
                else:
                    setattr(parent, field, replacement)
                return ast.unparse(ast.fix_missing_locations(tree))
            count += 1
    raise LookupError(mutant.ident)


class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module's mutated source in place of the file."""

    def __init__(self, name: str, path: Path, source: str) -> None:
        self.name, self.path, self.source = name, path, source

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(compile(self.source, str(self.path), "exec"), module.__dict__)  # the mutant under test


def _module_name(module: str) -> str:
    return "sitemap_updater." + module.removesuffix(".py").replace("/", ".")


def start_tests(module: str, source: str | None) -> int:
    """Fork a child that runs the module's test files in order (stopping at the first failure), with
    ``source`` (a mutant) in place of the module's file. Returns the child's process id."""
    pid = os.fork()
    if pid:
        return pid
    code = 3
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        if source is not None:
            sys.meta_path.insert(0, _MutantFinder(_module_name(module), PACKAGE / module, source))
        import pytest

        # One session over the files in order (-x: the first failure ends it). Sessions run one after another in
        # a process leak state into each other (a moto-backed test after the simulation fails that way).
        result = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *TESTS[module]]))
        code = 0 if result in (0, 5) else 1  # 5: nothing collected
    finally:
        os._exit(code)


class Running:
    """A child running one mutant's tests, with its time limit."""

    def __init__(self, mutant: Mutant | None, module: str, source: str | None, timeout: float) -> None:
        self.mutant, self.module = mutant, module
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.pid = start_tests(module, source)

    def poll(self) -> str | None:
        """'passed', 'failed' or 'timeout' once finished; None while running."""
        done, status = os.waitpid(self.pid, os.WNOHANG)
        if done:
            return "passed" if os.waitstatus_to_exitcode(status) == 0 else "failed"
        if time.monotonic() > self.deadline:
            os.killpg(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            return "timeout"
        return None

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


def run_tests(module: str, source: str | None, timeout: float) -> tuple[str, float]:
    """Run the module's tests (with ``source`` in place of the module); (outcome, seconds)."""
    child = Running(None, module, source, timeout)
    while (outcome := child.poll()) is None:
        time.sleep(0.05)
    return outcome, child.seconds


def _preload() -> None:
    """Import the heavy third-party packages once, before any fork (never sitemap_updater itself)."""
    for name in ("pytest", "hypothesis", "pydantic", "pydantic_core", "lxml.etree", "usp.tree", "botocore.session",
                 "boto3", "moto", "aws_lambda_powertools", "_pytest.python"):  # fmt: skip
        try:
            __import__(name)
        except ImportError:
            continue


def sample(mutants: list[Mutant], size: int, seed: int) -> list[Mutant]:
    """A stratified sample: each module contributes its share of ``size`` in proportion to its mutants among all
    modules' (at least one), drawn with a generator of its own, so a run of some modules draws the same
    mutants of those modules as a run of all of them."""
    total = sum(len(enumerate_mutants(module)) for module in TESTS)
    by_module: dict[str, list[Mutant]] = {}
    for mutant in mutants:
        by_module.setdefault(mutant.module, []).append(mutant)
    chosen: list[Mutant] = []
    for module, group in by_module.items():
        share = max(1, round(size * len(group) / total))
        rng = random.Random(f"{seed}:{module}")
        chosen += sorted(rng.sample(group, min(share, len(group))), key=lambda m: m.index)
    return chosen


def run_all(mutants: list[Mutant], limits: dict[str, float], jobs: int) -> tuple[int, list[Mutant], list[Mutant]]:
    """Run the mutants, ``jobs`` at once, printing each outcome: (killed, survived, equivalent)."""
    killed, survived, equivalent = 0, [], []
    queue = list(enumerate(mutants))
    running: list[tuple[int, Running]] = []
    try:
        while queue or running:
            while queue and len(running) < jobs:
                number, mutant = queue.pop(0)
                if mutant.key in EQUIVALENT:
                    equivalent.append(mutant)
                    continue
                try:
                    source = mutated_source(mutant)
                    compile(source, mutant.module, "exec")
                except (SyntaxError, ValueError, LookupError):
                    killed += 1  # not valid Python: it could never run
                    continue
                running.append((number, Running(mutant, mutant.module, source, limits[mutant.module])))
            time.sleep(0.05)
            for number, child in list(running):
                result = child.poll()
                if result is None:
                    continue
                running.remove((number, child))
                assert child.mutant is not None
                done = f"[{number + 1}/{len(mutants)}]"
                if result == "passed":
                    survived.append(child.mutant)
                    print(f"{done} SURVIVED {child.mutant.ident}", flush=True)
                else:
                    killed += 1
                    print(f"{done} killed ({result}, {child.seconds:.1f} s) {child.mutant.ident}", flush=True)
    finally:
        for _number, child in running:  # interrupted: no test run outlives the runner
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
    return killed, survived, equivalent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--module", action="append", help="only these modules (as core/urls.py)")
    parser.add_argument("--sample", type=int, default=0, help="a stratified sample of N mutants (0: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--only", type=Path, help="only the mutants whose key is a line of this file (after sampling)")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--show", type=int, default=-1, help="print the source of the N-th listed mutant")
    args = parser.parse_args(argv)
    modules = args.module or list(TESTS)
    mutants = [m for module in modules for m in enumerate_mutants(module)]
    if args.sample:
        mutants = sample(mutants, args.sample, args.seed)
    if args.only:
        wanted = set(args.only.read_text(encoding="utf-8").splitlines())
        mutants = [m for m in mutants if m.key in wanted]
    if args.list:
        for number, mutant in enumerate(mutants):
            print(number, mutant.ident)
        return 0
    if args.show >= 0:
        print(mutated_source(mutants[args.show]))
        return 0
    _preload()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run stops its test runs too
    started = time.monotonic()
    limits: dict[str, float] = {}
    for module in sorted({m.module for m in mutants}):
        outcome, seconds = run_tests(module, None, timeout=1800)
        if outcome != "passed":
            print(f"the tests of {module} fail without a mutant (its TESTS, pytest -x): fix them first", flush=True)
            return 2
        limits[module] = max(60.0, 3 * seconds)
    killed, survived, equivalent = run_all(mutants, limits, args.jobs)
    judged = killed + len(survived)
    score = killed / judged if judged else 1.0
    minutes = (time.monotonic() - started) / 60
    print(f"\n{len(mutants)} mutants: {killed} killed, {len(survived)} survived, {len(equivalent)} equivalent")
    print(f"score {score:.1%} of {judged} non-equivalent mutants, {minutes:.1f} min")
    for mutant in survived:
        print(f"  survived: {mutant.ident}")
        print(f"  key: {mutant.key}")
    return 0 if score >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
