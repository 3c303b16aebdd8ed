"""Mutation testing of core/, the services, the AWS adapters and the notifier (``make mutate``; not in ``make test``).

Each mutant is one small change to one module (a flipped comparison, a shifted constant, a removed call or
statement, a swapped operator, a negated condition). Third-party packages are imported once; each mutant runs in
a forked child that loads the mutated module in place of the real one and runs only the tests that cover that
module, stopping at the first failure. A mutant is killed when a test fails or it runs past its time limit.
Mutants known to behave exactly like the original are listed in ``EQUIVALENT`` with the reason, and in
docs/testing.md.

    python -m tests.mutation [--module core/urls.py] [--sample N] [--seed S] [--list] [--stale]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import random
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from tests.mutants import PACKAGE, Mutant, enumerate_mutants, mutated_source

ROOT = Path(__file__).resolve().parent.parent

_CORE_TESTS = [
    "tests/unit/test_conformance.py",
    "tests/unit/test_limits.py",
    "tests/unit/test_oracle.py",
    "tests/unit/test_url_rules.py",
    "tests/unit/test_core_rules.py",
]
# The corpus case by case (its run through the simulated deployment takes minutes under shared load).
_BAD_EVENTS = "tests/unit/test_bad_events.py::test_each_bad_event_is_rejected_naming_its_field"
_EDGES = "tests/unit/test_event_edges.py"
_FUTURE = "tests/unit/test_future_events.py"  # the clock skew, in every place events come in
_RECOVERY = "tests/unit/test_recovery.py"
_BATCHES = "tests/unit/test_batch_outcomes.py"
_STORAGE = "tests/unit/test_storage_limits.py"
_MANIFEST = "tests/unit/test_manifest_adapter.py"  # the DynamoDB adapters on moto
# Module -> the tests that cover it (fast ones first: the first failure ends the run).
TESTS: dict[str, list[str]] = {
    "core/text.py": ["tests/unit/test_text.py", *_CORE_TESTS, "tests/unit/test_events.py"],
    "core/urls.py": ["tests/unit/test_urls.py", _EDGES, *_CORE_TESTS, "tests/unit/test_events.py"],
    "core/entry.py": [
        "tests/unit/test_mut_entry_limits.py",
        *_CORE_TESTS,
        "tests/unit/test_render.py",
        "tests/unit/test_events.py",
    ],
    "core/render.py": [
        *_CORE_TESTS,
        "tests/unit/test_render.py",
        "tests/unit/test_sharding.py",
        "tests/unit/test_states.py",
    ],
    "core/sharding.py": ["tests/unit/test_sharding.py", _EDGES, *_CORE_TESTS, "tests/unit/test_render.py"],
    "core/layout.py": [*_CORE_TESTS, "tests/unit/test_recovery.py", "tests/unit/test_sharding.py"],
    "core/reduce.py": [*_CORE_TESTS, "tests/unit/test_render.py"],
    "core/events.py": [_EDGES, "tests/unit/test_events.py", _FUTURE, _BAD_EVENTS, *_CORE_TESTS],
    "core/errors.py": [_EDGES, _BAD_EVENTS, "tests/unit/test_events.py", *_CORE_TESTS],
    "core/moments.py": [*_CORE_TESTS, "tests/unit/test_events.py", "tests/unit/test_fastline.py"],
    "core/records.py": [
        "tests/unit/test_records.py",
        "tests/unit/test_fastline.py",
        "tests/unit/test_recovery.py",
        *_CORE_TESTS,
    ],
    "core/fastline.py": [
        "tests/unit/test_mut_entry_limits.py",
        _FUTURE,
        "tests/unit/test_fastline.py",
        "tests/unit/test_limits.py",
    ],
    "core/spill.py": [
        "tests/unit/test_spill.py",
        "tests/unit/test_mut_build.py",
        "tests/integration/test_build_cli.py",
    ],
    "core/event_rules.py": [_EDGES, _FUTURE, "tests/unit/test_events.py", "tests/unit/test_fastline.py", *_CORE_TESTS],
    "service/ingest.py": ["tests/unit/test_mut_recovery.py", "tests/unit/test_recovery.py"],
    "service/rebuild.py": [
        "tests/unit/test_rebuild_rewrite.py",
        "tests/unit/test_mut_recovery.py",
        "tests/unit/test_announce.py",
        "tests/unit/test_change_names.py",
        "tests/unit/test_recovery.py",
        "tests/unit/test_rebuild_edges.py",
        "tests/unit/test_rebuild_boundaries.py",
    ],
    "core/changes.py": ["tests/unit/test_announce.py", "tests/unit/test_mut_recovery.py"],
    "core/states.py": [
        "tests/unit/test_states.py",
        "tests/unit/test_rebuild_rewrite.py",
        "tests/unit/test_announce.py",
        "tests/unit/test_recovery.py",
    ],
    "service/rebuild_changes.py": [
        "tests/unit/test_announce.py",
        "tests/unit/test_mut_recovery.py",
        "tests/unit/test_recovery.py",
        "tests/unit/test_simulation.py",
    ],
    "service/announce.py": [
        "tests/unit/test_announce.py",
        "tests/unit/test_mut_recovery.py",
        "tests/unit/test_recovery.py",
    ],
    "service/index.py": [
        "tests/unit/test_cdn_lifetime.py",
        "tests/unit/test_recovery.py",
        "tests/unit/test_rebuild_edges.py",
    ],
    "service/sweep.py": [
        "tests/unit/test_sweep_upkeep.py",
        "tests/unit/test_recovery.py",
        "tests/integration/test_robots_check.py",
    ],
    "service/dead_letters.py": [
        "tests/unit/test_dead_letter_reasons.py",
        "tests/integration/test_dead_letters.py",
    ],
    "service/batches.py": [
        "tests/unit/test_batch_outcomes.py",
        "tests/integration/test_dead_letters.py",
    ],
    "service/notify.py": [
        "tests/unit/test_mut_notify_held.py",
        "tests/unit/test_announce.py",
        "tests/unit/test_notify_retries.py",
        "tests/unit/test_aws_failures.py",
    ],
    "service/bulk_import.py": ["tests/unit/test_bulk_import.py", _FUTURE, "tests/integration/test_import.py"],
    "service/adopt.py": [
        "tests/unit/test_mut_adopt.py",
        "tests/integration/test_adopt_bounds.py",
        "tests/integration/test_import.py",
        "tests/integration/test_adopt.py",
    ],
    "service/adopt_fields.py": [
        "tests/unit/test_mut_adopt.py",
        "tests/integration/test_adopt_bounds.py",
        "tests/integration/test_import.py",
        "tests/integration/test_adopt.py",
    ],
    "service/adopt_stream.py": [
        "tests/unit/test_mut_adopt.py",
        "tests/integration/test_adopt_bounds.py",
        "tests/integration/test_import.py",
        "tests/integration/test_adopt.py",
    ],
    "service/adopt_findings.py": ["tests/integration/test_adopt_bounds.py", "tests/integration/test_adopt.py"],
    "core/webhooks_signatures.py": [
        "tests/unit/test_webhook_signatures.py",
        "tests/unit/test_webhook_lifecycles.py",
        "tests/integration/test_webhooks.py",
    ],
    "core/webhooks_payloads.py": [
        "tests/unit/test_mut_webhook_payloads.py",
        "tests/unit/test_webhook_lifecycles.py",
        "tests/unit/test_webhook_mapping.py",
        "tests/integration/test_webhooks.py",
    ],
    "core/webhooks_mapping.py": [
        "tests/unit/test_mut_webhook_payloads.py",
        "tests/unit/test_webhook_mapping.py",
        "tests/integration/test_webhooks.py",
    ],
    "service/webhooks.py": [
        "tests/unit/test_webhook_receiver_answers.py",
        "tests/unit/test_webhook_lifecycles.py",
        _FUTURE,
        "tests/integration/test_webhooks.py",
    ],
    "service/build.py": [
        "tests/unit/test_mut_build.py",
        _FUTURE,
        "tests/integration/test_build_edges.py",
        "tests/integration/test_build_cli.py",
    ],
    "service/build_input.py": ["tests/unit/test_build_input.py", "tests/integration/test_build_edges.py"],
    "service/build_publish.py": [
        "tests/unit/test_build_publish.py",
        "tests/integration/test_build_edges.py",
        "tests/integration/test_build_interrupted.py",
        "tests/integration/test_build_cli.py",
    ],
    "service/build_pool.py": [
        "tests/unit/test_build_pool.py",
        "tests/unit/test_mut_build.py",
        "tests/integration/test_build_interrupted.py",
    ],
    "service/scratch.py": [
        "tests/unit/test_build_pool.py",
        "tests/unit/test_build_publish.py",
        "tests/integration/test_build_interrupted.py",
        "tests/integration/test_build_cli.py",
    ],
    "service/pipeline.py": [
        "tests/unit/test_cold_start.py",
        "tests/unit/test_recovery.py",
        "tests/integration/test_dead_letters.py",
    ],
    "wiring/pipeline.py": ["tests/unit/test_cold_start.py"],
    "core/lines.py": ["tests/unit/test_export_lines.py", "tests/unit/test_local_inputs.py", _BAD_EVENTS],
    "core/bootstrap_plan.py": ["tests/unit/test_bootstrap_plan.py"],
    "core/pages.py": ["tests/unit/test_ingest_writes.py", "tests/integration/test_ingest_writes.py"],
    "core/snapshots.py": ["tests/unit/test_snapshot_objects.py", "tests/unit/test_announce.py", _RECOVERY],
    "service/adopt_limits.py": ["tests/unit/test_mut_adopt.py", "tests/integration/test_adopt.py"],
    "service/bootstrap.py": [_FUTURE, "tests/unit/test_bootstrap_payloads.py", "tests/integration/test_bootstrap.py"],
    "service/bootstrap_release.py": [
        "tests/unit/test_bootstrap_release.py",
        "tests/integration/test_bootstrap_endings.py",
    ],
    "service/marks.py": [_RECOVERY, "tests/unit/test_ingest_writes.py", _BATCHES, "tests/unit/test_sweep_upkeep.py"],
    "service/parked.py": ["tests/unit/test_bootstrap_release.py", "tests/integration/test_import.py"],
    "service/publish.py": [
        "tests/unit/test_rebuild_rewrite.py",
        "tests/unit/test_snapshot_objects.py",
        "tests/unit/test_announce.py",
        _RECOVERY,
        "tests/integration/test_publish_race.py",
    ],
    "service/reconcile.py": ["tests/unit/test_reconcile.py", "tests/unit/test_snapshot_objects.py"],
    "service/redrive.py": ["tests/unit/test_redrive.py", "tests/integration/test_redrive.py"],
    "service/resection.py": ["tests/unit/test_resection_ranks.py", "tests/integration/test_resection.py"],
    "service/verify.py": ["tests/integration/test_verify.py"],
    # The notifier: its handler, the change records it reads, its feed, and the HTTP and Search Console adapters.
    "handlers/notify.py": ["tests/unit/test_notify_handler.py", _BATCHES],
    "core/messages.py": [
        "tests/unit/test_change_record_size.py",
        _RECOVERY,
        "tests/unit/test_announce.py",
        "tests/unit/test_mut_recovery.py",
        _BATCHES,
        "tests/unit/test_rebuild_edges.py",
    ],
    "core/feed.py": ["tests/unit/test_feed.py", "tests/unit/test_announce.py"],
    "adapters/http.py": ["tests/integration/test_notify_batches.py"],
    "adapters/search_console.py": [
        "tests/unit/test_notify_retries.py",
        "tests/unit/test_sitemap_domain.py",
        "tests/unit/test_cold_start.py",
    ],
    # The AWS adapters: the unit tests over botocore stubs and the simulation's client-level fakes first, then moto.
    "adapters/backoff.py": ["tests/unit/test_aws_failures.py", "tests/unit/test_cold_start.py"],
    "adapters/dynamo_values.py": [_MANIFEST, "tests/unit/test_ingest_writes.py", "tests/unit/test_aws_failures.py"],
    "adapters/executions.py": ["tests/unit/test_executions_adapter.py"],
    "adapters/fetch.py": ["tests/unit/test_fetch_adapter.py", "tests/integration/test_verify.py"],
    "adapters/file_records.py": [
        _MANIFEST,
        "tests/unit/test_ingest_writes.py",
        "tests/integration/test_publish_race.py",
        "tests/integration/test_ingest_writes.py",
    ],
    "adapters/manifest.py": [
        _MANIFEST,
        "tests/unit/test_ingest_writes.py",
        _STORAGE,
        "tests/unit/test_aws_failures.py",
        _RECOVERY,
        "tests/integration/test_ingest_writes.py",
        "tests/integration/test_publish_race.py",
    ],
    "adapters/queues.py": [
        "tests/unit/test_queue_adapter.py",
        "tests/unit/test_dead_letter_reasons.py",
        _BATCHES,
        "tests/integration/test_redrive.py",
    ],
    "adapters/secrets.py": ["tests/unit/test_webhook_secrets.py"],
    "adapters/storage.py": [
        "tests/unit/test_storage_adapter.py",
        _RECOVERY,
        "tests/unit/test_snapshot_objects.py",
        _STORAGE,
        "tests/integration/test_publish_race.py",
    ],
    "adapters/webhook_documents.py": [
        _MANIFEST,
        "tests/unit/test_webhook_lifecycles.py",
        "tests/integration/test_webhooks.py",
    ],
}


DESELECTED: list[str] = []  # tests left out of every run (--deselect): say why in docs/testing.md

# Where every module is mutated (or named in NOT_MUTATED with the reason); handlers/notify.py is in TESTS as well.
MUTATED_DIRS = ("core", "service", "adapters")
# Modules of MUTATED_DIRS that are not mutated, with the reason (docs/testing.md).
NOT_MUTATED: dict[str, str] = {}


def unlisted() -> list[str]:
    """Modules of MUTATED_DIRS in neither TESTS nor NOT_MUTATED: each needs its tests named, or a reason."""
    found = [f"{d}/{p.name}" for d in MUTATED_DIRS for p in sorted((PACKAGE / d).glob("*.py"))]
    return [m for m in found if not m.endswith("__init__.py") and m not in TESTS and m not in NOT_MUTATED]


def _equivalent() -> dict[str, str]:
    """Mutants that cannot change behaviour (``tests/mutation_equivalent.tsv``): key -> the reason."""
    lines = (ROOT / "tests" / "mutation_equivalent.tsv").read_text(encoding="utf-8").splitlines()
    return dict(tuple(line.split("\t", 1)) for line in lines if line and not line.startswith("#"))  # type: ignore[misc]


EQUIVALENT = _equivalent()


def stale_equivalents() -> list[str]:
    """Keys of ``EQUIVALENT`` that no mutant has any more (their line was edited, moved to another module or
    removed): each is removed, or listed again under the mutant's new key once its reason is checked."""
    by_module: dict[str, list[str]] = {}
    for key in EQUIVALENT:
        by_module.setdefault(key.split(": ", 1)[0], []).append(key)
    stale = []
    for module, keys in by_module.items():
        current = {m.key for m in enumerate_mutants(module)} if (PACKAGE / module).is_file() else set()
        stale += [key for key in keys if key not in current]
    return stale


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
        deselect = [f"--deselect={test}" for test in DESELECTED]
        result = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *deselect, *TESTS[module]]))
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


def clean_limits(modules: list[str], jobs: int) -> tuple[dict[str, float], list[str]]:
    """Each module's time limit: 4 times its tests' run without a mutant, at least 120 s (others share the
    cores: a slow run is not a loop). Modules with the same tests share one run; ``jobs`` run at once. Modules
    whose tests fail without a mutant are returned apart: their mutants cannot be judged."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for module in modules:
        groups.setdefault(tuple(TESTS[module]), []).append(module)
    waiting = list(groups.values())
    running: list[tuple[list[str], Running]] = []
    limits: dict[str, float] = {}
    failing: list[str] = []
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                group = waiting.pop(0)
                running.append((group, Running(None, group[0], None, 1800)))
            time.sleep(0.05)
            for group, child in list(running):
                if (outcome := child.poll()) is not None:
                    running.remove((group, child))
                    if outcome != "passed":
                        failing += group
                        print(f"clean run of {', '.join(group)}: tests fail without a mutant", flush=True)
                        continue
                    limits.update(dict.fromkeys(group, max(120.0, 4 * child.seconds)))
                    print(f"clean run of {', '.join(group)}: {child.seconds:.1f} s", flush=True)
    finally:
        for _group, other in running:  # a failure or an interruption: no test run outlives this
            with contextlib.suppress(ProcessLookupError):
                os.killpg(other.pid, signal.SIGKILL)
    return limits, failing


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
    parser.add_argument("--deselect", action="append", default=[], help="a test (node ID) failing without a mutant")
    parser.add_argument("--stale", action="store_true", help="list the equivalent keys no mutant has; 1 if any")
    args = parser.parse_args(argv)
    stale = stale_equivalents()
    if args.stale:
        print("\n".join(stale))
        return 1 if stale else 0
    for key in stale:
        print(f"warning: stale in tests/mutation_equivalent.tsv (no mutant has this key): {key}", flush=True)
    DESELECTED.extend(args.deselect)
    for test in DESELECTED:
        print(f"warning: {test} is not run (--deselect)", flush=True)
    modules = args.module or list(TESTS)
    for module in unlisted():
        print(f"warning: {module} is in neither TESTS nor NOT_MUTATED: it is not mutated", flush=True)
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
    limits, failing = clean_limits(sorted({m.module for m in mutants}), args.jobs)
    skipped = [m for m in mutants if m.module in failing]
    mutants = [m for m in mutants if m.module not in failing]
    killed, survived, equivalent = run_all(mutants, limits, args.jobs)
    judged = killed + len(survived)
    score = killed / judged if judged else 1.0
    minutes = (time.monotonic() - started) / 60
    print(f"\n{len(mutants)} mutants: {killed} killed, {len(survived)} survived, {len(equivalent)} equivalent")
    print(f"score {score:.1%} of {judged} non-equivalent mutants, {minutes:.1f} min")
    if skipped:
        print(f"NOT JUDGED: {len(skipped)} mutants of {', '.join(failing)}, whose tests fail without a mutant")
    for mutant in survived:
        print(f"  survived: {mutant.ident}")
        print(f"  key: {mutant.key}")
    return 0 if score >= 0.9 and not skipped else 1


if __name__ == "__main__":
    sys.exit(main())
