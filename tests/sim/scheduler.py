"""Deterministic concurrency: tasks are threads, but only one runs at a time, and each gives the turn back at
every AWS call. A seeded random choice of which task runs next gives reproducible interleavings at exactly
the granularity at which AWS makes calls atomic."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tests.sim.faults import Faults, InjectedFault, LambdaDied

__all__ = ["Clock", "Faults", "InjectedFault", "LambdaDied", "Scheduler", "Task"]

T = TypeVar("T")


@dataclass
class Clock:
    """Virtual seconds since the start of the simulation."""

    now: float = 0.0


class Task:
    """One invocation, run on its own thread, one step at a time."""

    def __init__(self, name: str, body: Callable[[], object], faults_enabled: bool) -> None:
        self.name = name
        self.faults_enabled = faults_enabled
        self.result: object = None
        self.error: BaseException | None = None
        self.done = False
        self._body = body
        self._go = threading.Event()
        self._back = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = False

    def _run(self) -> None:
        self._go.wait()
        self._go.clear()
        try:
            self.result = self._body()
        except BaseException as exc:
            self.error = exc
        self.done = True
        self._back.set()

    def step(self) -> None:
        """Run until the task's next AWS call (or its end)."""
        if not self._started:
            self._started = True
            self._thread.start()
        self._go.set()
        self._back.wait()
        self._back.clear()

    def pause(self) -> None:
        """Called on the task's own thread: give the turn back and wait for the next one."""
        self._back.set()
        self._go.wait()
        self._go.clear()


class Scheduler:
    """Holds the running tasks; the adapters call :meth:`point` at every AWS call."""

    def __init__(self, rng: random.Random, clock: Clock, faults: Faults, step_seconds: float = 0.02) -> None:
        self.rng, self.clock, self.faults = rng, clock, faults
        self.tasks: list[Task] = []
        self.step_seconds = step_seconds
        self._current: Task | None = None

    def spawn(self, name: str, body: Callable[[], object], faults_enabled: bool = True) -> Task:
        task = Task(name, body, faults_enabled)
        self.tasks.append(task)
        return task

    def step(self) -> Task | None:
        """Advance one random task by one step; return it when it has finished."""
        task = self.rng.choice(self.tasks)
        self._current = task
        try:
            task.step()
        finally:
            self._current = None
        self.clock.now += self.step_seconds
        if task.done:
            self.tasks.remove(task)
            return task
        return None

    def faults_on(self) -> bool:
        """Whether transient faults may strike the running task (none outside tasks, none on a last try)."""
        return self._current is not None and self._current.faults_enabled

    def current_name(self) -> str:
        return self._current.name if self._current is not None else ""

    def point(self, where: str, call: Callable[[], T]) -> T:
        """One AWS call: maybe fail before it, let other tasks run, make it, maybe fail after it."""
        task = self._current
        if task is None:  # outside any task (set-up, the producer, the checks): no faults, no switch
            return call()
        self.faults.maybe(f"before {where}", task.faults_enabled)
        task.pause()
        self._current = task
        result = call()
        self.faults.maybe(f"after {where}", task.faults_enabled)
        return result
