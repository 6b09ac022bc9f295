"""The GENIE methods' fast forms for the simulator (view policies, ``dlsched.state``).

Each runs the very function of ``heuristics.genie`` on a :class:`LiveSnapshot`: the few
fields of a snapshot those functions read (pending tasks in arrival order, time,
parameters, cluster, idle GPUs per server, running tasks), taken from the simulator's live
view instead of a rebuilt :class:`~dlsched.instance.Instance`. Same function, same inputs,
same decision; ``tests/test_schedule_digests.py`` pins the schedules and
``tests/test_genie_live.py`` compares with the snapshot path (``check="full"``). The
idle GPUs per server are built only when read; the methods that place best fit
(:func:`idle_gpus_of`) read the view's idle lists and servers by idle count instead.

Running tasks: the snapshot the simulator builds for a snapshot method lists its running
tasks without the ``extra["model"]`` that ``capacity`` counts against a model's share, so
on a snapshot in the simulator ``capacity`` counts no running task; the live form shows
no running task either (an empty tuple), which is the same input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.jobs import Job

from .genie_idle import IdleGpus


class LiveSnapshot:
    """What ``heuristics.genie`` reads of a snapshot, from the simulator's live view."""

    __slots__ = ("jobs", "time", "params", "cluster", "view", "_idle", "running",
                 "__weakref__")

    def __init__(self, view: Any) -> None:
        self.jobs: tuple[Job, ...] = view.queue_jobs()
        self.time: float = view.time
        self.params = view.params
        self.cluster = view.cluster
        self.view = view  # valid during the policy call only, as the snapshot
        self._idle: tuple[tuple[int, ...], ...] | None = None
        self.running: tuple = ()  # see the module docstring

    @property
    def idle_by_server(self) -> tuple[tuple[int, ...], ...]:
        """Per server, its idle GPU indices (built on the first read)."""
        if self._idle is None:
            view = self.view
            self._idle = tuple(map(view.idle_gpus, range(view.cluster.num_nodes)))
        return self._idle


def idle_gpus_of(instance: Any) -> IdleGpus:
    """:class:`IdleGpus` of a snapshot; of a :class:`LiveSnapshot`, read off its live view
    (the same idle GPUs, without copying them)."""
    if type(instance) is LiveSnapshot:
        return IdleGpus.of_view(instance.view)
    return IdleGpus.of_free(list(instance.idle_by_server))  # take() replaces, never changes


def live(name: str, fn: Callable[..., Decision]) -> Callable[..., Decision]:
    """``fn`` (a method of ``heuristics.genie``) as a view policy's ``decide``; an input
    error names the policy and the time, as the simulator's policy caller does."""
    def decide(view: Any, **options: Any) -> Decision:
        try:
            return fn(LiveSnapshot(view), **options)
        except InputError as exc:
            if exc.field.split(".")[0] == "options":
                raise
            raise InputError(f"policy {name!r} at t = {view.time:g} s: {exc.message}",
                             field=exc.field, fix=exc.fix) from None

    decide.__doc__ = f"``{fn.__name__}`` on the simulator's live view (module docstring)."
    return decide


def some_gpu_idle(view: Any, **_options: Any) -> bool:
    """A task can start only on idle GPUs (the smallest shape is one GPU)."""
    return view.idle_count > 0
