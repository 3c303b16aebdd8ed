"""The bootstrap state machine of template.yaml, run locally against a local stack.

It reads the definition from the template and walks its states as Step Functions does, for the parts the
definition uses: a Task's payload is built from its ``Parameters`` (``.$`` keys are paths: ``$``, ``$.a.b``,
``$$.Execution.Id``, ``$$.Map.Item.Value.x`` and ``States.Format``), its result goes through ``ResultSelector``,
``ResultPath`` and ``OutputPath``; a Map reads its items with its ``ItemReader`` (S3 ``listObjectsV2`` or a JSON
array object), builds each with ``ItemSelector`` and runs its one Task per item, retried alone as its ``Retry``
says; a ``Catch`` of ``States.ALL`` places the error and goes on (never for ``States.Runtime`` or
``States.DataLimitExceeded``, which AWS's ``States.ALL`` neither retries nor catches); a Fail fails the execution
with the error its ``ErrorPath`` names. Every Task runs the real handler, under its function's IAM policy as a
local run enforces it. Items run one after another: what is measured is the work, not parallelism.

Time is virtual (:class:`Clock`): a Wait and a Retry's interval move it on at once, and so may an injected
worker. The execution ends as on AWS: SUCCEEDED, FAILED, TIMED_OUT once its ``TimeoutSeconds`` have passed, or
ABORTED by :meth:`LocalStateMachine.stop` (an operator's StopExecution), with its stop date; no Catch runs for the
last two. A worker still running when its execution ends keeps running (``StillRunning``: its invocation completes
when the clock reaches it), as Lambda invocations outlive the execution that made them. Every state's input and
output and every worker's answer is measured, and one past 256 KiB fails the execution with
``States.DataLimitExceeded`` as on AWS. :meth:`LocalStateMachine.describe` answers DescribeExecution for the
worker's scheduled check (``step: check``), and :meth:`LocalStateMachine.check` runs that check.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, cast

from botocore.exceptions import ClientError

from sitemap_updater.core.moments import to_micros
from sitemap_updater.local.runner import TEMPLATE, LocalRun
from sitemap_updater.local.sfn import (
    DATA_LIMIT,
    LAMBDA_RESULT,
    PAYLOAD_LIMIT,
    RUNTIME,
    UNCAUGHT,
    Clock,
    Ended,
    StatesError,
    StillRunning,
    choose,
    evaluate,
    handles,
    path,
    place,
    retry_of,
    size,
)
from sitemap_updater.local.stack import load_template
from sitemap_updater.ports import ExecutionState
from sitemap_updater.service.bootstrap import export_prefix
from sitemap_updater.wiring.pipeline import use_executions, use_pipeline

__all__ = ["DATA_LIMIT", "PAYLOAD_LIMIT", "RUNTIME", "Clock", "Execution", "LocalStateMachine", "StatesError",
           "StillRunning"]  # fmt: skip
STATE_MACHINE = "BootstrapStateMachine"


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
    arn: str = ""
    status: str = "RUNNING"  # then SUCCEEDED, FAILED, TIMED_OUT or ABORTED
    started_s: float = 0.0
    stopped_s: float | None = None
    output: Any = None
    states: list[str] = field(default_factory=list)
    maps: dict[str, MapRun] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    error: dict[str, str] | None = None  # {"Error", "Cause"} of a failed execution
    largest: dict[str, int] = field(default_factory=dict)  # bytes: each state's input/output, each step's answer


@dataclass(frozen=True, slots=True)
class Call:
    """One invocation of the worker: when it started and answered (virtual seconds), and its step."""

    execution: str
    step: str
    started_s: float
    ended_s: float
    answer: dict[str, Any] | None
    payload: dict[str, Any] = field(default_factory=dict)


Injector = Callable[[str, dict[str, Any], int], None]  # (state, payload, attempt): raise to fail that attempt


class Backend(Protocol):
    """Where the state machine runs: the worker's invocation and the bucket its ItemReaders read."""

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]: ...
    def list_objects(self, prefix: str) -> list[dict[str, Any]]: ...
    def get_object(self, key: str) -> bytes: ...
    def put_object(self, key: str, body: bytes) -> None: ...


class LocalRunBackend:
    """A local stack: the real handler under the worker's IAM policy, the stack's bucket."""

    def __init__(self, local: LocalRun, handler: str, function: str, machine: LocalStateMachine) -> None:
        from sitemap_updater.local.stack import session

        self.local, self.handler, self.function, self.machine = local, handler, function, machine
        self.s3 = session().client("s3", endpoint_url=local.endpoint_url)
        self.bucket = local.stack.physical["SitemapBucket"]

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]:
        use_pipeline(self.local.pipeline)
        use_executions(self)
        try:
            with self.local.iam.acting_as(self.function):
                return self.local._invoke(self.handler, payload)
        finally:
            use_pipeline(None)
            use_executions(None)

    def describe(self, arn: str) -> ExecutionState | None:
        """DescribeExecution, allowed or denied by the worker's policy as IAM would."""
        policy = self.local.iam.active
        if policy is not None and not policy.allows("states:DescribeExecution", arn):
            message = f"User: {policy.function} is not authorized to perform: states:DescribeExecution on {arn}"
            raise ClientError(cast(Any, {"Error": {"Code": "AccessDeniedException", "Message": message}}), "Describe")
        return self.machine.describe(arn)

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

    def __init__(self, local: LocalRun | Backend, template: Path | None = None, clock: Clock | None = None) -> None:
        resources = load_template(template or TEMPLATE)["Resources"]
        self.definition: dict[str, Any] = resources[STATE_MACHINE]["Properties"]["Definition"]
        self.handler = str(resources[self.FUNCTION]["Properties"]["Handler"])
        check = resources[self.FUNCTION]["Properties"]["Events"]["CheckTheImportHold"]["Properties"]["Input"]
        self.check_payload: dict[str, Any] = json.loads(check)  # what the schedule sends the worker
        self.clock = clock or Clock()
        stack = local.stack.name if isinstance(local, LocalRun) else "local"
        self.arn_prefix = f"arn:aws:states:us-east-1:123456789012:execution:{stack}-bootstrap:"
        self.backend: Backend = (
            LocalRunBackend(local, self.handler, self.FUNCTION, self) if isinstance(local, LocalRun) else local
        )
        self.executions: dict[str, Execution] = {}
        self.calls: list[Call] = []  # every invocation of the worker, in the order they answered
        self._current: Execution | None = None

    def upload(self, run: str, chunks: Sequence[bytes], gzipped: Sequence[int] = ()) -> list[str]:
        """Put the export's chunks where the state machine reads them (those in ``gzipped`` compressed)."""
        names = []
        for number, data in enumerate(chunks):
            name = f"{export_prefix(run)}part-{number:05d}.jsonl" + (".gz" if number in gzipped else "")
            body = gzip.compress(data, mtime=0) if number in gzipped else data
            self.backend.put_object(name, body)
            names.append(name)
        return names

    # --- the execution's life ---------------------------------------------------------------------------
    def describe(self, arn: str) -> ExecutionState | None:
        """What DescribeExecution says of ``arn``: its status and stop date."""
        found = self.executions.get(arn)
        if found is None:
            return None
        stopped = 0 if found.stopped_s is None else to_micros(self.clock.start + timedelta(seconds=found.stopped_s))
        return ExecutionState(found.status, stopped)

    def stop(self) -> None:
        """The operator's StopExecution of the running execution: ABORTED now; no Catch runs, and its workers
        still running keep running."""
        if self._current is not None and self._current.status == "RUNNING":
            self._end(self._current, "ABORTED", self.clock.seconds)

    def check(self) -> dict[str, Any]:
        """One run of the worker's scheduled check (the template's ``CheckTheImportHold`` event)."""
        return self._invoke(self.check_payload, "")

    def _end(self, execution: Execution, status: str, at: float, error: dict[str, str] | None = None) -> None:
        execution.status, execution.stopped_s, execution.error = status, at, error

    def _tick(self, execution: Execution) -> None:
        """End the execution here if it was stopped or its time is up."""
        timeout = self.definition.get("TimeoutSeconds")
        if execution.status == "RUNNING" and timeout is not None:
            deadline = execution.started_s + float(timeout)
            if self.clock.seconds >= deadline:
                self._end(execution, "TIMED_OUT", deadline, {"Error": "States.Timeout", "Cause": ""})
        if execution.status != "RUNNING":
            raise Ended

    def _advance(self, execution: Execution, seconds: float) -> None:
        """Let ``seconds`` pass inside the execution (a Wait, a Retry's interval), up to its deadline."""
        timeout = self.definition.get("TimeoutSeconds")
        if timeout is not None:
            seconds = min(seconds, max(0.0, execution.started_s + float(timeout) - self.clock.seconds))
        self.clock.advance(seconds)
        self._tick(execution)

    def execute(
        self,
        run: str,
        inject: Injector | None = None,
        before: Callable[[str], None] | None = None,
        name: str | None = None,
        resection: bool = False,
    ) -> Execution:
        """One execution with input ``{"run": run}`` (and ``"resection": true`` with ``resection``); ``before(state)``
        runs before each top-level state."""
        execution = Execution(self.arn_prefix + (name or f"{run}-{len(self.executions) + 1}"))
        execution.started_s = self.clock.seconds
        self.executions[execution.arn] = self._current = execution
        context: dict[str, Any] = {"Execution": {"Id": execution.arn}}
        data: Any = {"run": run, **({"resection": True} if resection else {})}
        state_name: str | None = self.definition["StartAt"]
        try:
            while state_name is not None:
                state = self.definition["States"][state_name]
                if before is not None:
                    before(state_name)
                self._tick(execution)
                started = time.perf_counter()
                execution.states.append(state_name)
                self._measure(execution, f"{state_name} input", data)
                following = None if state.get("End") else state.get("Next")
                try:
                    if state["Type"] == "Choice":
                        following = choose(state, data)
                    data = self._state(state_name, state, data, context, execution, inject)
                except StatesError as exc:
                    catcher = next((c for c in state.get("Catch", []) if handles(c, exc.error)), None)
                    if catcher is None:
                        self._end(execution, "FAILED", self.clock.seconds, {"Error": exc.error, "Cause": exc.cause})
                        break
                    data = place(data, catcher.get("ResultPath", "$"), {"Error": exc.error, "Cause": exc.cause})
                    following = catcher["Next"]
                self._measure(execution, f"{state_name} output", data)
                execution.seconds[state_name] = time.perf_counter() - started
                if state["Type"] == "Fail":
                    break
                state_name = following
        except Ended:
            pass
        except StatesError as exc:  # an output past the limit: no Catch sees it
            self._end(execution, "FAILED", self.clock.seconds, {"Error": exc.error, "Cause": exc.cause})
        if execution.status == "RUNNING":
            self._end(execution, "SUCCEEDED", self.clock.seconds)
            execution.output = data
        self._current = None
        return execution

    # --- states ----------------------------------------------------------------------------------------
    def _state(
        self,
        name: str,
        state: dict[str, Any],
        data: Any,
        context: dict[str, Any],
        execution: Execution,
        inject: Injector | None,
    ) -> Any:
        kind = state["Type"]
        if kind == "Task":
            return self._task(name, state, data, context, execution, inject)[0]
        if kind == "Map":
            return self._map(name, state, data, context, execution, inject)
        if kind == "Wait":
            self._advance(execution, float(state["Seconds"]))
            return data
        if kind in ("Choice", "Succeed"):  # the execution loop takes a Choice's Next
            return data
        if kind == "Fail":
            error = path(data, state["ErrorPath"], context) if "ErrorPath" in state else state.get("Error", "")
            cause = path(data, state["CausePath"], context) if "CausePath" in state else state.get("Cause", "")
            self._end(execution, "FAILED", self.clock.seconds, {"Error": str(error), "Cause": str(cause)})
            return data
        raise StatesError(RUNTIME, f"{name}: a {kind} state is not run locally")

    def _invoke(self, payload: dict[str, Any], execution: str) -> dict[str, Any]:
        started = self.clock.seconds
        answer = self.backend.invoke(payload)
        self.calls.append(Call(execution, str(payload.get("step", "")), started, self.clock.seconds, answer, payload))
        return answer

    def _task(
        self,
        name: str,
        state: dict[str, Any],
        data: Any,
        context: dict[str, Any],
        execution: Execution,
        inject: Injector | None,
        background: list[float] | None = None,
    ) -> tuple[Any, int]:
        """The state's output, and how many attempts it took. With ``background``, an attempt that is
        ``StillRunning`` answers later (its moment is added to it) and this returns (None, attempts)."""
        parameters = evaluate(state.get("Parameters", {}), data, context)
        payload = parameters.get("Payload", data)
        attempts, interval, backoff = retry_of(state)
        for attempt in range(1, attempts + 1):
            try:
                if inject is not None:  # it may stop the execution, or move the clock past its end, meanwhile:
                    inject(name, payload, attempt)  # a worker that started writes all the same
                result: Any = {**LAMBDA_RESULT, "Payload": self._invoke(payload, execution.arn)}
                self._tick(execution)
                break
            except StillRunning as later:
                if background is None:
                    raise StatesError(RUNTIME, f"{name}: only a map item runs in the background") from later
                at = self.clock.seconds + later.seconds
                self.clock.at(at, lambda: self._late(payload, execution.arn))
                background.append(at)
                return None, attempt
            except (Ended, StatesError):
                raise
            except Exception as exc:
                if attempt == attempts:
                    cause = json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__})
                    raise StatesError(type(exc).__name__, cause) from exc
                self._advance(execution, interval * backoff ** (attempt - 1))
        self._measure(execution, f"{name} result", result)
        if "ResultSelector" in state:
            result = evaluate(state["ResultSelector"], result, context)
        output = place(data, state.get("ResultPath", "$"), result)
        return (path(output, state["OutputPath"], context) if "OutputPath" in state else output), attempt

    def _late(self, payload: dict[str, Any], execution: str) -> None:
        """A worker that kept running answers now (whatever became of its execution meanwhile)."""
        try:
            self._invoke(payload, execution)
        except Exception as exc:
            self.calls.append(Call(execution, f"{payload.get('step', '')} failed: {exc}", self.clock.seconds,
                                   self.clock.seconds, None))  # fmt: skip

    def _map(
        self,
        name: str,
        state: dict[str, Any],
        data: Any,
        context: dict[str, Any],
        execution: Execution,
        inject: Injector | None,
    ) -> Any:
        run = execution.maps.setdefault(name, MapRun())
        started = time.perf_counter()
        processor = state["ItemProcessor"]
        background: list[float] = []
        try:
            for item in self._items(state["ItemReader"], data):
                self._tick(execution)  # a stopped execution starts no more children
                item_context = {**context, "Map": {"Item": {"Value": item}}}
                payload = evaluate(state["ItemSelector"], data, item_context) if "ItemSelector" in state else item
                self._measure(execution, f"{name} item input", payload)
                try:
                    output, tries = self._child(processor, payload, item_context, execution, inject, background)
                except StatesError as exc:
                    if exc.error in UNCAUGHT:
                        raise
                    # A child failed on every attempt: no failure is tolerated, the map fails (its children
                    # still running are stopped; their Lambda invocations run on).
                    raise StatesError("States.ExceedToleratedFailureThreshold", exc.cause) from exc
                run.items += 1
                run.attempts += tries
                if output is not None:
                    self._measure(execution, f"{name} item output", output)
                    run.results.append(output)
                if tries > 1:
                    run.retried.append(json.dumps(payload, sort_keys=True))
            if background:  # the map waits for its children still running
                self._advance(execution, max(background) - self.clock.seconds)
        finally:
            run.seconds += time.perf_counter() - started
        if "ResultWriter" in state:  # as Step Functions writes them: one object of the succeeded items
            prefix = evaluate(state["ResultWriter"].get("Parameters", {}), data, {}).get("Prefix", "")
            self.backend.put_object(f"{prefix}/local/SUCCEEDED_0.json", json.dumps(run.results).encode())
        return place(data, state.get("ResultPath", "$"), run.results)

    def _child(
        self,
        processor: dict[str, Any],
        data: Any,
        context: dict[str, Any],
        execution: Execution,
        inject: Injector | None,
        background: list[float],
    ) -> tuple[Any, int]:
        """One map item's run of the processor's states (Tasks, and Choices between them, to a Succeed or an End):
        its output (None when a Task is still running in the background) and the most attempts one Task took."""
        name: str | None = processor["StartAt"]
        most = 1
        while name is not None:
            self._tick(execution)
            state = processor["States"][name]
            following = None if state.get("End") else state.get("Next")
            if state["Type"] == "Task":
                data, tries = self._task(name, state, data, context, execution, inject, background)
                most = max(most, tries)
                if data is None:
                    return None, most
                self._measure(execution, f"{name} output", data)
            elif state["Type"] == "Choice":
                following = choose(state, data)
            elif state["Type"] != "Succeed":
                raise StatesError(RUNTIME, f"{name}: a {state['Type']} state in a map is not run locally")
            name = following
        return data, most

    def _items(self, reader: dict[str, Any], data: Any) -> list[Any]:
        parameters = evaluate(reader.get("Parameters", {}), data, {})
        if reader["Resource"].endswith(":s3:listObjectsV2"):
            return self.backend.list_objects(parameters.get("Prefix", ""))
        if reader["Resource"].endswith(":s3:getObject"):
            found = json.loads(self.backend.get_object(parameters["Key"]))
            if not isinstance(found, list):
                raise StatesError("States.ItemReaderFailed", f"{parameters['Key']}: a JSON ItemReader needs an array")
            return found
        raise StatesError(RUNTIME, f"ItemReader {reader['Resource']} is not run locally")

    @staticmethod
    def _measure(execution: Execution, where: str, value: Any) -> None:
        """Note the JSON size of ``value``; past Step Functions' limit, the execution fails as on AWS."""
        measured = size(value)
        execution.largest[where] = max(execution.largest.get(where, 0), measured)
        if measured > PAYLOAD_LIMIT:
            raise StatesError(DATA_LIMIT, f"{where}: {measured:,} bytes, past the {PAYLOAD_LIMIT:,} a state may hold")
