"""A clock that moves only when a test says so: time-limit tests without timing.

A method's time limit is a budget shared by its stages (:class:`Deadline` of
``dlsched.formulations.backend``: every stage asks it what is left). The tests install a
:class:`FakeClock` as the ``time.perf_counter`` of the modules that read the budget, make
each stage *cost* a stated number of fake seconds, and check what every later stage was
given and which status a stage that outlives the budget yields: the verdict is the same on
an idle or a loaded machine.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any


class FakeClock:
    """Seconds that advance only by :meth:`advance`, and by ``tick`` after each read (a
    stage that reads the clock as it works then costs ``tick`` per read)."""

    def __init__(self, start: float = 1000.0, tick: float = 0.0) -> None:
        self.now = start
        self.tick = tick
        self.reads = 0

    def perf_counter(self) -> float:
        now = self.now
        self.now += self.tick
        self.reads += 1
        return now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class _TimeModule:
    """The ``time`` module with ``perf_counter`` (and ``monotonic``) read from the clock."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def perf_counter(self) -> float:
        return self._clock.perf_counter()

    def monotonic(self) -> float:
        return self._clock.perf_counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def install(monkeypatch: Any, clock: FakeClock, *modules: ModuleType) -> None:
    """Make each module's ``time`` read ``clock`` (undone when the test ends)."""
    for module in modules:
        assert module.time is time, f"{module.__name__} reads time another way"
        monkeypatch.setattr(module, "time", _TimeModule(clock))
