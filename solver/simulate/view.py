"""What a policy sees of the live state (``live.LiveState``); nothing here changes it.

* :class:`SimView` — what a *view policy* (``dlsched.state.register_view_policy``) reads:
  the queue head and order, idle GPUs by server and by count, free GPU memory and server
  CPU/RAM. A policy returns a :class:`~dlsched.decision.Decision` and the engine checks it
  before anything changes.
* :func:`snapshot` — the state as an :class:`~dlsched.instance.Instance` for any other
  method: the pending queue (or a prefix of it) and the running jobs with their remaining
  time at the current rate, built only when something reads them (:class:`LazyRunning`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..instance import Instance
from ..jobs import Job, JobColumns, RunningJob
from .free_order import FreeMemoryOrder
from .live import LiveState
from .pending import SortedIndex


def running_jobs(state: LiveState, t: float, observed: bool) -> list[RunningJob]:
    """The running jobs at ``t`` as an instance lists them (``observed``: for an observer
    that saves snapshots as instances, so without the simulator-only fields)."""
    out = []
    ids = state.cluster.gpu_ids
    node_ids = state.cluster.node_ids
    for rec in state.running.values():
        job = rec.job
        left = max(rec.work_left - rec.rate * (t - rec.last_t), 0.0) / rec.rate
        extra: dict[str, Any] = {}
        if job.model is not None:  # as a snapshot file shows it (GENIE's capacity reads it)
            extra["model"] = job.model
        if rec.node_extra:
            extra["node_cpu"] = {node_ids[n]: v[0] for n, v in rec.node_extra.items()}
            extra["node_ram_gb"] = {node_ids[n]: v[1] for n, v in rec.node_extra.items()}
        if not observed:
            # what a performance-aware policy (PAB) measures: its rate over its rate
            # without interference, and its start
            extra["rate_factor"] = rec.rate / rec.base_rate
            extra["start"] = rec.start
        out.append(RunningJob(
            job=job.id, gpus=tuple(ids[g] for g in rec.gpu_list), gpu_util=job.gpu_util or 0.0,
            gpu_mem_gb=job.gpu_mem_gb or 0.0, cpu_per_gpu=job.cpu_per_gpu,
            ram_gb_per_gpu=job.ram_gb_per_gpu, remaining_s=left, extra=extra))
    return out


class LazyRunning(Sequence[RunningJob]):
    """The running jobs of a snapshot, built only when a policy or check reads them.

    :meth:`rate_factor`, :meth:`gpus_of` and :meth:`jobs_on` answer for one job or one GPU
    without building the list (PAB asks them at most of its rounds); like the list, they
    read the live state, so they hold while the policy decides (the engine changes nothing
    meanwhile).
    """

    __slots__ = ("_t", "_count", "_items", "_state", "_observed")

    def __init__(self, state: LiveState, t: float, observed: bool) -> None:
        self._t = t
        self._count = len(state.running)
        self._items: tuple[RunningJob, ...] | None = None
        self._state = state
        self._observed = observed

    def rate_factor(self, job_id: str) -> float | None:
        """What the list shows as ``extra.get("rate_factor", 1.0)`` for job ``job_id``;
        None when it is not running."""
        state = self._state
        rec = state.running.get(state.by_id.get(job_id, -1))
        if rec is None:
            return None
        return 1.0 if self._observed else rec.rate / rec.base_rate

    def gpus_of(self, job_id: str) -> tuple[int, ...] | None:
        """GPU indices of running job ``job_id``; None when it is not running."""
        state = self._state
        rec = state.running.get(state.by_id.get(job_id, -1))
        return None if rec is None else rec.gpu_list

    def gpus_by_model(self) -> dict[str | None, int]:
        """GPUs the running jobs hold per model (the list's ``extra["model"]``; None for a
        job without one), without building the list (GENIE's ``capacity`` asks it at every
        call)."""
        out: dict[str | None, int] = {}
        for rec in self._state.running.values():
            model = rec.job.model
            out[model] = out.get(model, 0) + len(rec.gpu_list)
        return out

    def jobs_on(self, gpu: int) -> tuple[str, ...]:
        """Ids of the running jobs holding GPU index ``gpu``."""
        records = self._state.records
        return tuple(records[i].job.id for i in self._state.on_gpu[gpu])

    def _all(self) -> tuple[RunningJob, ...]:
        if self._items is None:
            self._items = tuple(running_jobs(self._state, self._t, self._observed))
        return self._items

    def materialize(self) -> None:
        """Build the running jobs now (before the engine moves on)."""
        self._all()

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __getitem__(self, i):  # type: ignore[override]
        return self._all()[i]

    def __iter__(self) -> Iterator[RunningJob]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


def lazy_running(state: LiveState, t: float, observed: bool) -> LazyRunning:
    """:func:`running_jobs` at ``t``, built on first access."""
    return LazyRunning(state, t, observed)


class InstanceMaker:
    """Builds the Instances of one run (its problem, cluster and params) at every decision
    without the dataclass constructor (a frozen dataclass sets each field through
    ``object.__setattr__``, several µs a call, paid at every decision).

    The fields come from a template the constructor built once, so a new field's default
    is kept; ``Instance`` has no ``__post_init__`` (checked here), so the result equals
    ``Instance(...)`` with the same fields.
    """

    __slots__ = ("_fields",)

    def __init__(self, workload: Instance, cluster: Any) -> None:
        template = Instance(problem=workload.problem, cluster=cluster, jobs=(),
                            params=workload.params)
        names = {f.name for f in dataclasses.fields(Instance)}
        if hasattr(Instance, "__post_init__") or set(template.__dict__) != names:
            raise TypeError("Instance derives fields on construction: build it with "
                            "Instance(...) instead")
        self._fields = dict(template.__dict__)

    def __call__(self, jobs: tuple[Job, ...], running: Sequence[RunningJob], time: float,
                 name: str = "") -> Instance:
        """An Instance of these ``jobs`` and ``running`` jobs at ``time``."""
        inst = object.__new__(Instance)
        d = inst.__dict__
        d.update(self._fields)
        d["jobs"] = jobs
        d["running"] = running
        d["time"] = time
        d["name"] = name
        d["provenance"] = {}  # a fresh mapping, as the default factory gives
        return inst


def snapshot(state: LiveState, workload: Instance, t: float, jobs: tuple[Job, ...] | None,
             observed: bool, make: InstanceMaker | None = None) -> Instance:
    """The state at ``t`` as an Instance: the pending queue, or ``jobs`` (a prefix of it).

    The derived loads (``gpu_busy``, ``gpu_usage``, ``node_usage``, ``idle_by_server``,
    ``job_index``, ``job_columns``) are seeded from the live state instead of being
    recomputed from the running jobs and the queue; they are the same numbers
    (``tests/test_sim_engine.py`` checks it). ``make``: the run's :class:`InstanceMaker`.
    """
    seeded: dict[str, Any] = state.arrays()
    if jobs is None:
        jobs = state.queue.jobs()
        seeded.update(job_index=state.queue.job_index(), job_columns=state.queue.columns())
    else:
        seeded["job_index"] = {job.id: i for i, job in enumerate(jobs)}
    name = f"{workload.name or 'workload'}@{t:g}"
    if make is None:
        snap = Instance(problem=workload.problem, cluster=state.cluster, jobs=jobs,
                        params=workload.params, running=lazy_running(state, t, observed),
                        time=t, name=name)
    else:
        snap = make(jobs, lazy_running(state, t, observed), t, name)
    snap.__dict__.update(seeded)
    return snap


class SimView:
    """Read-only view of the live state for view policies (``dlsched.state``).

    Attributes ``time``, ``cluster``, ``problem`` and ``params`` are plain values; the
    methods read the live structures without copying them.
    """

    __slots__ = ("_state", "_queue", "_jobs", "time", "cluster", "problem", "params")

    def __init__(self, state: LiveState, problem: str, params: Mapping[str, Any]) -> None:
        self._state = state
        self._queue = state.queue
        self._jobs = state.jobs
        self.time = 0.0
        self.cluster = state.cluster
        self.problem = problem
        self.params = params

    # queue
    def head(self) -> Job | None:
        """The oldest pending job."""
        i = self._queue.head()
        return None if i is None else self._jobs[i]

    def queue_jobs(self) -> tuple[Job, ...]:
        """Pending jobs in arrival order (a tuple, cached until the queue changes)."""
        return self._queue.jobs()

    def queue_length(self) -> int:
        """Number of pending jobs."""
        return len(self._queue)

    def queue(self) -> Iterator[Job]:
        """Pending jobs in arrival order (lazily)."""
        jobs = self._jobs
        return (jobs[i] for i in self._queue)

    def queue_records(self) -> np.ndarray:
        """Pending jobs in arrival order as indices into :attr:`workload_jobs` (int64,
        read-only)."""
        return self._queue.records()

    def queue_sorted(self, name: Hashable, key: Callable[[Job], tuple]) -> Sequence[int]:
        """Pending jobs as indices into :attr:`workload_jobs`, ordered by ``key(job)``, ties
        by queue position; ``key`` must depend on the job alone. The order is kept up to
        date as jobs come and go (not re-sorted per call): read it, do not change it.
        ``name`` identifies the order within the run."""
        return self._queue.sorted_by(name, key).order

    def queue_groups(self, name: Hashable, group: Callable[[Job], Hashable],
                     key: Callable[[Job], tuple]) -> Mapping[Hashable, SortedIndex]:
        """Pending jobs split by ``group(job)`` (static, like ``key``), each group's
        ``order`` (record indices) sorted by ``keys`` = ``(*key(job), n)`` (``n`` orders
        jobs by queue position). Kept up to date like :meth:`queue_sorted`; read only."""
        return self._queue.grouped_by(name, group, key)

    def queue_added(self) -> int:
        """Jobs ever added to the queue (arrivals and requeues). A policy that keeps its own
        copy of the queue knows what changed since it last looked when the length is what
        its own starts and this count predict: only jobs added since, at the tail."""
        return self._queue.added

    def queue_last_added(self, k: int) -> list[int]:
        """The records of the ``k`` jobs added last (``k`` ≥ 1), in queue order; valid while
        all of them still wait."""
        return self._queue.last_added(k)

    def queue_by_arrival(self) -> np.ndarray:
        """:meth:`queue_records` sorted by submit time, ties by queue position (a
        snapshot's arrival order; the queue order itself unless a requeue broke it)."""
        records = self._queue.records()
        if self._queue.in_arrival_order:
            return records
        submit = self._queue.workload_columns("submit_time")
        return records[np.argsort(submit[records], kind="stable")]

    @property
    def workload_jobs(self) -> Sequence[Job]:
        """Every job of the workload, by record index (read-only)."""
        return self._jobs

    @property
    def workload_columns(self) -> JobColumns:
        """Numeric fields of every job of the workload as arrays, by record index."""
        return self._queue.workload_columns

    def queue_columns(self) -> JobColumns:
        """Numeric fields of the pending jobs as arrays, in queue order."""
        return self._queue.columns()

    def min_demand(self) -> int | None:
        """Smallest GPU demand among pending jobs with a fixed demand."""
        return self._queue.min_demand()

    # running jobs
    def running(self) -> LazyRunning:
        """The running jobs as a snapshot at :attr:`time` shows them, built only if iterated;
        ``rate_factor``, ``gpus_of`` and ``jobs_on`` answer per job or GPU (PAB)."""
        return lazy_running(self._state, self.time, False)

    # cluster
    @property
    def idle_count(self) -> int:
        """GPUs holding no job."""
        return self._state.idle_total

    def idle_gpus(self, server: int) -> tuple[int, ...]:
        """Idle GPU indices of ``server`` in cluster order."""
        return tuple(self._state.idle[server])

    def first_server_with_idle(self, count: int, skip: Mapping[int, Any] | set[int] = ()
                               ) -> int | None:
        """Lowest-index server with exactly ``count`` idle GPUs that is not in ``skip``."""
        by = self._state.by_idle
        if not 0 <= count < len(by):
            return None
        for s in by[count]:
            if s not in skip:
                return s
        return None

    def servers_by_idle(self) -> Sequence[Sequence[int]]:
        """Entry ``c``: the servers with exactly ``c`` idle GPUs, ascending (the live
        index, for loops that ask :meth:`first_server_with_idle` often; read only)."""
        return self._state.by_idle

    def idle_lists(self) -> Sequence[Sequence[int]]:
        """Entry ``s``: the idle GPU indices of server ``s`` in cluster order (the live
        lists, for loops that ask :meth:`idle_gpus` often; read only)."""
        return self._state.idle

    @property
    def max_idle(self) -> int:
        """Largest possible idle count of a server."""
        return self._state.max_idle

    def most_idle(self) -> int:
        """The largest number of idle GPUs on one server now."""
        by = self._state.by_idle
        for count in range(len(by) - 1, 0, -1):
            if by[count]:
                return count
        return 0

    def idle_on(self, server: int) -> int:
        """Number of idle GPUs of ``server``."""
        return len(self._state.idle[server])

    def idle_counts(self) -> np.ndarray:
        """Idle GPUs of every server (int64, a new array)."""
        idle = self._state.idle
        return np.fromiter(map(len, idle), dtype=np.int64, count=len(idle))

    def open_servers(self) -> Iterator[int]:
        """Servers with at least one idle GPU, by index (lazily; do not hold across calls)."""
        return iter(self._state.open_servers)

    def gpu_mem_free(self, g: int) -> float:
        """Capacity minus memory in use on GPU ``g`` (GB)."""
        return self._state.mem_cap[g] - self._state.mem[g]

    def gpu_mem_free_all(self) -> np.ndarray:
        """Capacity minus memory in use, every GPU (GB; a new array)."""
        return self.cluster.gpu_mem_gb - np.array(self._state.mem)

    def free_memory_order(self) -> Sequence[tuple[float, int]]:
        """Entries ``(-free memory, GPU index)`` of every GPU, ascending: most free memory
        first, ties by index (``free_order.FreeMemoryOrder``: kept up to date from the
        first call on; read it, do not change it or hold it across calls)."""
        return self._free_order().keys()

    def busy_at_full_memory(self) -> int:
        """How many busy GPUs have free memory at least their capacity (a job holding no
        memory, or a float residue): normally 0. Then, when every GPU holds the same
        memory, :meth:`free_memory_order` starts with exactly the idle GPUs, by index
        (``free_order.FreeMemoryOrder``; asking this does not patch that order)."""
        return self._free_order().busy_at_full_memory()

    def _free_order(self) -> FreeMemoryOrder:
        """The state's free-memory order, built on the first request."""
        order = self._state.free_order
        return FreeMemoryOrder(self._state) if order is None else order

    @property
    def queue_in_arrival_order(self) -> bool:
        """The queue order is (submit time, queue position) order (a requeue can break
        it)."""
        return self._queue.in_arrival_order

    def loads(self, copy: bool = True) -> dict[str, Any]:
        """numpy copies of the loads a snapshot carries (``gpu_busy``, ``gpu_usage``:
        (utilization, memory) per GPU, ``node_usage``: (CPU, RAM) per server,
        ``idle_by_server``): the same arrays, so a fast form computes the same numbers.
        ``copy=False``: the arrays the live state keeps, without copies (read them during
        the call only, never change them)."""
        return self._state.arrays(copy)

    def node_free(self, n: int) -> tuple[float, float]:
        """(CPU, RAM in GB) free on server ``n``."""
        state = self._state
        return state.cpu_cap[n] - state.node_cpu[n], state.ram_cap[n] - state.node_ram[n]
