"""The GENIE methods' fast forms for the simulator (view policies, ``dlsched.state``).

Each runs the very function of ``heuristics.genie`` on a :class:`LiveSnapshot`: the few
fields of a snapshot those functions read (pending tasks in arrival order, time,
parameters, cluster, idle GPUs per server, running tasks), taken from the simulator's live
view instead of a rebuilt :class:`~dlsched.instance.Instance`. Same function, same inputs,
same decision; ``tests/test_schedule_digests.py`` pins the schedules and
``tests/test_genie_live.py`` compares with the snapshot path (``check="full"``). The
idle GPUs per server are built only when read; the methods that place best fit
(:func:`idle_gpus_of`) read the view's idle lists and servers by idle count instead.

Running tasks: the snapshot the simulator builds for a snapshot method lists each running
task with its ``extra["model"]``, which ``capacity`` counts against the model's share
(:func:`held_by_model`); the live form reads the same GPU counts per model off the live
view (``LazyRunning.gpus_by_model``) without building the running tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from dlsched.errors import InputError
from dlsched.jobs import Job

from .genie_idle import IdleGpus, arrival_order


class LiveSnapshot:
    """What ``heuristics.genie`` reads of a snapshot, from the simulator's live view."""

    __slots__ = ("_jobs", "time", "params", "cluster", "view", "_idle", "__weakref__")

    def __init__(self, view: Any) -> None:
        self._jobs: tuple[Job, ...] | None = None
        self.time: float = view.time
        self.params = view.params
        self.cluster = view.cluster
        self.view = view  # valid during the policy call only, as the snapshot
        self._idle: tuple[tuple[int, ...], ...] | None = None

    @property
    def jobs(self) -> tuple[Job, ...]:
        """The waiting tasks in arrival order (built on the first read: ``capacity`` reads
        its per-type queues instead, which the simulator keeps up to date)."""
        if self._jobs is None:
            self._jobs = self.view.queue_jobs()
        return self._jobs

    @property
    def running(self) -> Any:
        """The running tasks as a snapshot lists them (a ``LazyRunning``: built only if
        iterated)."""
        return self.view.running()

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


def held_by_model(instance: Any) -> dict[str | None, int]:
    """GPUs the running tasks of a snapshot hold per model (``extra["model"]``; None for a
    task without one); of a :class:`LiveSnapshot`, read off its live view."""
    if type(instance) is LiveSnapshot:
        return instance.view.running().gpus_by_model()
    held: dict[str | None, int] = {}
    for r in instance.running:
        model = r.extra.get("model")
        held[model] = held.get(model, 0) + len(r.gpus)
    return held


_BY_MODEL = ("genie", "tasks by model")  # the simulator's name for the grouped queue
_MODEL = attrgetter("model")


def _arrival(job: Job) -> tuple[float]:
    return (job.submit_time,)


def queues_by_model(instance: Any
                    ) -> tuple[Sequence[Job], dict[str, tuple[Sequence[tuple], Sequence[int]]]]:
    """The waiting tasks per model type in arrival order: ``(jobs, {model: (keys,
    order)})``, ``order`` indices into ``jobs`` and ``keys[p]`` = (arrival, queue position)
    of task ``order[p]``, ascending (positions compare across types: merging the types by
    key gives :func:`~.genie_idle.arrival_order`). Of a :class:`LiveSnapshot`, the
    simulator's grouped queue (``SimView.queue_groups``, kept up to date as tasks come and
    go: nothing built per call)."""
    if type(instance) is LiveSnapshot:
        view = instance.view
        groups = view.queue_groups(_BY_MODEL, _MODEL, _arrival)
        return view.workload_jobs, {m: (g.keys, g.order) for m, g in groups.items()}
    jobs = instance.jobs
    out: dict[str, tuple[list[tuple], list[int]]] = {}
    for j in arrival_order(instance):
        job = jobs[j]
        keys, order = out.setdefault(job.model, ([], []))
        keys.append((job.submit_time, j))
        order.append(j)
    return jobs, out


def live(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a method of ``heuristics.genie``, or its stateful form, which returns
    ``(decision, state)``) as a view policy's ``decide``; an input error names the policy
    and the time, as the simulator's policy caller does."""
    def decide(view: Any, **options: Any) -> Any:
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
