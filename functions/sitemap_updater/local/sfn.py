"""The parts of Step Functions the bootstrap harness (``local/bootstrap.py``) models: its errors and quotas, a
virtual clock, and the JSONPath of a state's Parameters, ResultSelector and ResultPath."""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

PAYLOAD_LIMIT = 256 * 1024  # bytes of a state's input or output, or of a task's result (Step Functions' quota)
CAUSE_LIMIT = 32_768  # characters of an error's cause (Step Functions truncates longer ones)
RUNTIME, DATA_LIMIT, TASK_FAILED = "States.Runtime", "States.DataLimitExceeded", "States.TaskFailed"
UNCAUGHT = frozenset({RUNTIME, DATA_LIMIT})  # States.ALL neither retries nor catches these
# What lambda:invoke returns besides the function's answer (its size counts towards the task's result).
LAMBDA_RESULT = {
    "ExecutedVersion": "$LATEST",
    "SdkHttpMetadata": {
        "AllHttpHeaders": {"X-Amz-Executed-Version": ["$LATEST"], "x-amzn-Remapped-Content-Length": ["0"],
                           "Connection": ["keep-alive"], "x-amzn-RequestId": ["00000000-0000-0000-0000-000000000000"],
                           "Content-Type": ["application/json"], "Date": ["Thu, 26 Nov 2026 10:00:00 GMT"],
                           "X-Amzn-Trace-Id": ["Root=1-00000000-000000000000000000000000;Sampled=1"]},
        "HttpStatusCode": 200,
    },
    "SdkResponseMetadata": {"RequestId": "00000000-0000-0000-0000-000000000000"},
    "StatusCode": 200,
}  # fmt: skip
_FORMAT = re.compile(r"States\.Format\('([^']*)',\s*(.+)\)")


class StatesError(Exception):
    """An error by its Step Functions name (``States.Runtime``, a Lambda's error type, ...) and cause."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"{error}: {cause}")
        self.error, self.cause = error, cause[:CAUSE_LIMIT]


class StillRunning(Exception):
    """Raised by an injector: this attempt's invocation keeps running for ``seconds`` and answers then."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"still running for {seconds} s")
        self.seconds = seconds


class Ended(Exception):
    pass


class Clock:
    """Virtual time from ``start``; work scheduled for a moment runs when the clock reaches it."""

    def __init__(self, start: datetime | None = None) -> None:
        self.start = start or datetime.now(UTC)
        self.seconds = 0.0
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._count = 0

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.seconds)

    def at(self, seconds: float, work: Callable[[], None]) -> None:
        """Run ``work`` once the clock reaches ``seconds``."""
        self._count += 1
        heapq.heappush(self._due, (seconds, self._count, work))

    def advance(self, seconds: float) -> None:
        """Move on ``seconds``, running what falls due on the way, each at its own moment."""
        until = self.seconds + seconds
        while self._due and self._due[0][0] <= until:
            at, _, work = heapq.heappop(self._due)
            self.seconds = max(self.seconds, at)
            work()
        self.seconds = until

    def pending(self) -> float | None:
        """When the last scheduled work is due (None: nothing is)."""
        return max((at for at, _, _ in self._due), default=None)


def size(value: Any) -> int:
    """The bytes Step Functions counts for a state's data: its JSON (non-ASCII escaped, the larger form)."""
    return len(json.dumps(value, separators=(",", ":")).encode())


def handles(catcher: dict[str, Any], error: str) -> bool:
    names = catcher.get("ErrorEquals", [])
    return error in names or ("States.ALL" in names and error not in UNCAUGHT)


def retry_of(state: dict[str, Any]) -> tuple[int, float, float]:
    """Attempts a Task's Retry allows for any error (``States.ALL``): its MaxAttempts retries plus the first; its
    interval and backoff rate."""
    for retrier in state.get("Retry", []):
        if "States.ALL" in retrier.get("ErrorEquals", []):
            return (1 + int(retrier.get("MaxAttempts", 3)), float(retrier.get("IntervalSeconds", 1)),
                    float(retrier.get("BackoffRate", 2)))  # fmt: skip
    return 1, 0.0, 1.0


def evaluate(template: Any, data: Any, context: dict[str, Any]) -> Any:
    """A Parameters-like object with its ``.$`` keys' paths resolved."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                out[key[:-2]] = _value(str(value), data, context)
            elif isinstance(value, dict) and ("Ref" in value or "Fn::GetAtt" in value):
                out[key] = value  # a resource name: the local run knows its own
            else:
                out[key] = evaluate(value, data, context)
        return out
    return template


def _value(expression: str, data: Any, context: dict[str, Any]) -> Any:
    formatted = _FORMAT.fullmatch(expression)
    if formatted:
        template, argument = formatted.groups()
        return template.replace("{}", str(_value(argument.strip(), data, context)), 1)
    return path(data, expression, context)


def path(data: Any, expression: str, context: dict[str, Any]) -> Any:
    """The value a JSONPath names: ``$`` the state's data, ``$$`` the context object."""
    root, rest = (context, expression[2:]) if expression.startswith("$$") else (data, expression[1:])
    for part in [p for p in rest.split(".") if p]:
        root = root[part]
    return root


def place(data: Any, path: str | None, result: Any) -> Any:
    """``ResultPath``: null keeps the input, ``$`` replaces it, ``$.x`` sets one field."""
    if path is None:
        return data
    if path == "$":
        return result
    placed = dict(data)
    placed[path.removeprefix("$.")] = result
    return placed


_MISSING = object()


def _lookup(data: Any, expression: str) -> Any:
    root = data
    for part in [p for p in expression[1:].split(".") if p]:
        if not isinstance(root, dict) or part not in root:
            return _MISSING
        root = root[part]
    return root


def holds(rule: dict[str, Any], data: Any) -> bool:
    """Whether a Choice rule holds for ``data``: ``Not``, ``And``, ``Or`` and, on a ``Variable``, ``IsPresent``,
    ``IsNull``, ``BooleanEquals`` and ``StringEquals`` (a type that differs compares false; a variable that is
    missing fails the state with States.Runtime, except for ``IsPresent``)."""
    if "Not" in rule:
        return not holds(rule["Not"], data)
    if "And" in rule:
        return all(holds(r, data) for r in rule["And"])
    if "Or" in rule:
        return any(holds(r, data) for r in rule["Or"])
    value = _lookup(data, rule["Variable"])
    if "IsPresent" in rule:
        return (value is not _MISSING) == bool(rule["IsPresent"])
    if value is _MISSING:
        raise StatesError(
            RUNTIME,
            f"Invalid path '{rule['Variable']}': the choice state's condition path references an invalid value.",
        )
    if "IsNull" in rule:
        return (value is None) == bool(rule["IsNull"])
    if "BooleanEquals" in rule:
        return isinstance(value, bool) and value == rule["BooleanEquals"]
    if "StringEquals" in rule:
        return isinstance(value, str) and value == rule["StringEquals"]
    raise StatesError(RUNTIME, f"a choice rule {sorted(rule)} is not run locally")


def choose(state: dict[str, Any], data: Any) -> str:
    """The state a Choice state goes to: its first rule that holds, else its Default."""
    for rule in state["Choices"]:
        if holds(rule, data):
            return str(rule["Next"])
    if "Default" not in state:
        raise StatesError("States.NoChoiceMatched", "no choice rule matched and there is no Default")
    return str(state["Default"])
