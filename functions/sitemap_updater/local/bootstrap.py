"""The bootstrap state machine of template.yaml, run locally against a local stack.

It reads the definition from the template and walks its states as Step Functions does, for the parts the
definition uses: a Task's payload is built from its ``Parameters`` (``.$`` keys are paths: ``$``, ``$.a.b``,
``$$.Map.Item.Value.x`` and ``States.Format``), its result goes through ``ResultSelector``, ``ResultPath`` and
``OutputPath``; a Map reads its items with its ``ItemReader`` (S3 ``listObjectsV2`` or a JSON array object),
builds each with ``ItemSelector`` and runs its one Task per item, retried alone as its ``Retry`` says; a Catch
of ``States.ALL`` places the error and goes on; a Fail raises; a Wait is noted, not waited (nothing runs
concurrently here). Every Task runs the real handler, under its function's IAM
policy as a local run enforces it. Items run one after another: what is measured is the work, not parallelism.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sitemap_updater.local.runner import TEMPLATE, LocalRun
from sitemap_updater.local.stack import load_template
from sitemap_updater.service.bootstrap import export_prefix
from sitemap_updater.wiring.pipeline import use_pipeline

STATE_MACHINE = "BootstrapStateMachine"
_FORMAT = re.compile(r"States\.Format\('([^']*)',\s*(.+)\)")


class StepFailed(RuntimeError):
    """A step failed on every attempt its Retry allows (a Map fails when any item does: no failure tolerated)."""


@dataclass(slots=True)
class MapRun:
    """One Map state's items, as an execution's map run shows them."""

    items: int = 0
    attempts: int = 0
    retried: list[str] = field(default_factory=list)  # items that failed at least once, by their payload
    results: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(slots=True)
class Execution:
    output: Any = None
    states: list[str] = field(default_factory=list)
    maps: dict[str, MapRun] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    error: Any = None  # what a Fail state was given: the error a Catch placed


Injector = Callable[[str, dict[str, Any], int], None]  # (state, payload, attempt): raise to fail that attempt


class Backend(Protocol):
    """Where the state machine runs: the worker's invocation and the bucket its ItemReaders read."""

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]: ...
    def list_objects(self, prefix: str) -> list[dict[str, Any]]: ...
    def get_object(self, key: str) -> bytes: ...
    def put_object(self, key: str, body: bytes) -> None: ...


class LocalRunBackend:
    """A local stack: the real handler under the worker's IAM policy, the stack's bucket."""

    def __init__(self, local: LocalRun, handler: str, function: str) -> None:
        from sitemap_updater.local.stack import session

        self.local, self.handler, self.function = local, handler, function
        self.s3 = session().client("s3", endpoint_url=local.endpoint_url)
        self.bucket = local.stack.physical["SitemapBucket"]

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]:
        use_pipeline(self.local.pipeline)
        try:
            with self.local.iam.acting_as(self.function):
                return self.local._invoke(self.handler, payload)
        finally:
            use_pipeline(None)

    def list_objects(self, prefix: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            items += [{"Key": o["Key"], "Size": o["Size"], "Etag": o["ETag"]} for o in page.get("Contents", [])]
        return items

    def get_object(self, key: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def put_object(self, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)


class LocalStateMachine:
    """Runs ``BootstrapStateMachine`` on a local stack (a :class:`LocalRun`) or another :class:`Backend`."""

    FUNCTION = "BootstrapFunction"

    def __init__(self, local: LocalRun | Backend, template: Path | None = None) -> None:
        resources = load_template(template or TEMPLATE)["Resources"]
        self.definition: dict[str, Any] = resources[STATE_MACHINE]["Properties"]["Definition"]
        self.handler = str(resources[self.FUNCTION]["Properties"]["Handler"])
        self.backend = LocalRunBackend(local, self.handler, self.FUNCTION) if isinstance(local, LocalRun) else local

    def upload(self, run: str, chunks: Sequence[bytes], gzipped: Sequence[int] = ()) -> list[str]:
        """Put the export's chunks where the state machine reads them (those in ``gzipped`` compressed)."""
        names = []
        for number, data in enumerate(chunks):
            name = f"{export_prefix(run)}part-{number:05d}.jsonl" + (".gz" if number in gzipped else "")
            body = gzip.compress(data, mtime=0) if number in gzipped else data
            self.backend.put_object(name, body)
            names.append(name)
        return names

    def execute(
        self, run: str, inject: Injector | None = None, before: Callable[[str], None] | None = None
    ) -> Execution:
        """One execution with input ``{"run": run}``; ``before(state)`` runs before each top-level state."""
        execution = Execution()
        data: Any = {"run": run}
        name: str | None = self.definition["StartAt"]
        while name is not None:
            state = self.definition["States"][name]
            if before is not None:
                before(name)
            started = time.perf_counter()
            execution.states.append(name)
            following = None if state.get("End") else state.get("Next")
            try:
                if state["Type"] == "Task":
                    data, _attempts_made = self._task(name, state, data, {}, inject)
                elif state["Type"] == "Map":
                    data = self._map(name, state, data, execution, inject)
                elif state["Type"] == "Fail":
                    execution.error = data.get("error") if isinstance(data, dict) else None
                    raise StepFailed(f"{state.get('Error', 'Failed')}: {state.get('Cause', '')} ({execution.error})")
                elif state["Type"] != "Wait":
                    raise StepFailed(f"{name}: a {state['Type']} state is not run locally")
            except StepFailed as exc:
                catcher = next((c for c in state.get("Catch", []) if "States.ALL" in c["ErrorEquals"]), None)
                if catcher is None:
                    raise
                error = {"Error": "States.TaskFailed", "Cause": str(exc)}
                data = _place(data, catcher.get("ResultPath", "$"), error)
                following = catcher["Next"]
            execution.seconds[name] = time.perf_counter() - started
            name = following
        execution.output = data
        return execution

    # --- states ----------------------------------------------------------------------------------------
    def _task(
        self, name: str, state: dict[str, Any], data: Any, context: dict[str, Any], inject: Injector | None
    ) -> tuple[Any, int]:
        """The state's output, and how many attempts it took."""
        parameters = _evaluate(state.get("Parameters", {}), data, context)
        payload = parameters.get("Payload", data)
        attempts = _attempts(state)
        for attempt in range(1, attempts + 1):
            try:
                if inject is not None:
                    inject(name, payload, attempt)
                result: Any = {"Payload": self.backend.invoke(payload)}
                break
            except Exception as exc:
                if attempt == attempts:
                    raise StepFailed(f"{name} failed {attempts} times: {type(exc).__name__}: {exc}") from exc
        if "ResultSelector" in state:
            result = _evaluate(state["ResultSelector"], result, context)
        output = _place(data, state.get("ResultPath", "$"), result)
        return (_path(output, state["OutputPath"], context) if "OutputPath" in state else output), attempt

    def _map(self, name: str, state: dict[str, Any], data: Any, execution: Execution, inject: Injector | None) -> Any:
        run = execution.maps.setdefault(name, MapRun())
        started = time.perf_counter()
        processor = state["ItemProcessor"]
        inner = processor["States"][processor["StartAt"]]
        for item in self._items(state["ItemReader"], data):
            context = {"Map": {"Item": {"Value": item}}}
            payload = _evaluate(state["ItemSelector"], data, context) if "ItemSelector" in state else item
            output, tries = self._task(processor["StartAt"], inner, payload, context, inject)
            run.results.append(output)
            run.items += 1
            run.attempts += tries
            if tries > 1:
                run.retried.append(json.dumps(payload, sort_keys=True))
        run.seconds += time.perf_counter() - started
        if "ResultWriter" in state:  # as Step Functions writes them: one object of the succeeded items
            prefix = _evaluate(state["ResultWriter"].get("Parameters", {}), data, {}).get("Prefix", "")
            self.backend.put_object(f"{prefix}/local/SUCCEEDED_0.json", json.dumps(run.results).encode())
        return _place(data, state.get("ResultPath", "$"), run.results)

    def _items(self, reader: dict[str, Any], data: Any) -> list[Any]:
        parameters = _evaluate(reader.get("Parameters", {}), data, {})
        if reader["Resource"].endswith(":s3:listObjectsV2"):
            return self.backend.list_objects(parameters.get("Prefix", ""))
        if reader["Resource"].endswith(":s3:getObject"):
            found = json.loads(self.backend.get_object(parameters["Key"]))
            if not isinstance(found, list):
                raise StepFailed(f"{parameters['Key']}: a JSON ItemReader needs an array")
            return found
        raise StepFailed(f"ItemReader {reader['Resource']} is not run locally")


def _attempts(state: dict[str, Any]) -> int:
    """Attempts a Task's Retry allows for any error (``States.ALL``): its MaxAttempts retries plus the first."""
    for retrier in state.get("Retry", []):
        if "States.ALL" in retrier.get("ErrorEquals", []):
            return 1 + int(retrier.get("MaxAttempts", 3))
    return 1


def _evaluate(template: Any, data: Any, context: dict[str, Any]) -> Any:
    """A Parameters-like object with its ``.$`` keys' paths resolved."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                out[key[:-2]] = _value(str(value), data, context)
            elif isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value):
                out[key] = value  # a resource name: the local run knows its own
            else:
                out[key] = _evaluate(value, data, context)
        return out
    return template


def _value(expression: str, data: Any, context: dict[str, Any]) -> Any:
    formatted = _FORMAT.fullmatch(expression)
    if formatted:
        template, argument = formatted.groups()
        return template.replace("{}", str(_value(argument.strip(), data, context)), 1)
    return _path(data, expression, context)


def _path(data: Any, path: str, context: dict[str, Any]) -> Any:
    root, rest = (context, path[2:]) if path.startswith("$$") else (data, path[1:])
    for part in [p for p in rest.split(".") if p]:
        root = root[part]
    return root


def _place(data: Any, path: str | None, result: Any) -> Any:
    """``ResultPath``: null keeps the input, ``$`` replaces it, ``$.x`` sets one field."""
    if path is None:
        return data
    if path == "$":
        return result
    placed = dict(data)
    placed[path.removeprefix("$.")] = result
    return placed
