"""A clock that moves only when a test says so: time-limit tests without timing.

A method's time limit is a budget shared by its stages (:class:`Deadline` of
``dlsched.formulations.backend``: every stage asks it what is left). The tests install a
:class:`FakeClock` as the ``time.perf_counter`` of the modules that read the budget, make
each stage *cost* a stated number of fake seconds, and check what every later stage was
given and which status a stage that outlives the budget yields: the verdict is the same on
an idle or a loaded machine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


class WorkClock(FakeClock):
    """Seconds that advance with the work this thread does: ``1 / rate`` per Python call,
    return and call into C, counted while :meth:`counting` (``sys.setprofile``).

    A stage that works long without asking its deadline burns these seconds just as it
    burns CPU time, but the count is the same on an idle or a loaded machine. Work outside
    Python (a solver's own search) is not counted: the tests charge a solver the time it
    is told (:meth:`advance`).
    """

    def __init__(self, rate: float, start: float = 1000.0) -> None:
        super().__init__(start)
        self.rate = rate
        self.events = 0

    def _count(self, frame: Any, event: str, arg: Any) -> None:
        self.events += 1

    def perf_counter(self) -> float:
        self.reads += 1
        return self.now + self.events / self.rate

    @contextmanager
    def counting(self) -> Iterator[None]:
        """Count this thread's work inside the block (a profiler set before is restored)."""
        before = sys.getprofile()
        sys.setprofile(self._count)
        try:
            yield
        finally:
            sys.setprofile(before)
