"""Event-driven simulation of a workload under a scheduling policy.

Events are arrivals, completions and the policy's own wake-ups (a period, or a time the
policy asks for in ``Result.extra["wake_at"]``). After all events at one time are applied,
the policy decides which pending jobs start now and where; it returns a
:class:`~dlsched.decision.Decision`, which is checked before anything changes (an invalid
one stops the run with :class:`SimulationError` naming the policy and the time). Jobs are
non-preemptive: they start at the decision time and run to completion.

State. The engine keeps a persistent, incrementally updated state (``.live``): per-GPU
job counts, utilization, memory and predicted ends, per-server CPU/RAM, idle GPUs per
server indexed by their count, and the pending queue in arrival order. Nothing is rebuilt
per event; the cost of an event does not grow with the queue or the cluster, except where a
policy itself looks at them.

Two ways to call a policy:

* a *view policy* (``dlsched.state.ViewPolicy``, e.g. FIFO of SCHED² and Horus) reads the
  read-only :class:`~.live.SimView` — FIFO looks at the queue head, packing at the servers
  with the fewest idle GPUs that fit — and declares when it cannot start anything
  (``can_start``); it is not called then;
* any other method sees a snapshot — an :class:`~dlsched.instance.Instance` at that time
  with the pending queue in arrival order and the running jobs (built lazily, with their
  remaining time at the current rate). For problems with exclusive GPUs it is not called
  when no pending job fits into the idle GPUs.

Checks (``check``). ``"fast"`` (default): each decision is checked against the live state
on the GPUs and servers it touches (``checks.check_live``: the validator's generic rules,
then the problem's own rules on the instance the policy saw). ``"full"``: the method runs
on a full snapshot (view policies are not used) and its decision goes through
``dlsched.validate.validate`` as a whole. Both give the same schedule (a test compares the
per-job tables for every policy family). Methods called through
:func:`dlsched.solve.solve` are validated by ``solve`` itself. At the end of every run the
whole schedule is checked once from the records alone (``checks.check_schedule``).

Progress is counted in work seconds at a rate set by a :class:`~.speed.SpeedModel`; rates
change only at events. Completions live in a heap with version stamps (a rate change
re-stamps the job instead of searching the heap), arrivals are a sorted list with a
pointer, and only the jobs sharing a GPU with a starting or finishing job have their
rates recomputed. Utilization (busy GPUs) and fragmentation (SCHED² Eq. 1) are kept per
server and updated only where a GPU changed (``live.LiveCluster``); the fragmentation
series is evaluated in one vector pass from the log of changed servers when the run ends.

Container jobs (Liquid): a placement with ``tasks`` holds its GPUs and, on every server
it uses, the CPU and RAM of its containers there (a PS holds no GPU but still holds its
server's CPU and RAM). Problems whose batch is placed whole (Liquid) run in *prefix mode*
(``Policy.prefix``): the policy sees the longest prefix of the pending queue (arrival
order) that it can place — first the longest prefix whose total GPUs, CPU and RAM fit the
free totals (at most ``Policy.max_jobs`` jobs); if the policy finds no solution for it,
shorter prefixes by bisection. Feasibility is monotone in the prefix, so for an exact
method this is the longest feasible prefix; for a heuristic, the one it placed. Strict
FIFO: a job never overtakes an earlier one that does not fit.

Stepping (for agents and preempting policies). :meth:`_Engine.next_batch` applies the
next event time's events and says whether a decision is due; :meth:`_Engine.view`,
:meth:`_Engine.snapshot` show the state; :meth:`_Engine.apply` checks and applies a
decision; :meth:`_Engine.end_batch` records the time series; :meth:`_Engine.result`
closes the run. :meth:`_Engine.run` is that loop with the policy deciding.

Requeue hook (PAB). A snapshot policy may return ``extra["requeue"]`` (running jobs to move
back to the queue) and ``extra["watch_at"]`` (a time to be called again even with nothing
pending; the current time only after a round that placed or requeued something).
:meth:`_Engine.apply` checks the requeues (``checks.check_requeue``, in every check mode)
and applies them before the placements: the job is released like a completion, its run is
kept in ``JobRecord.attempts``, its progress is lost (it restarts from its full work) and
it goes to the tail of the queue. ``checks.check_schedule`` counts the attempts' loads.
"""

from __future__ import annotations

import heapq
import logging
import math
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..decision import Decision, TaskPlacement
from ..errors import InputError, MethodError
from ..instance import Instance
from ..jobs import Job, RunningJob
from ..problems import get_problem
from ..registry import get_method
from ..result import Status
from ..solve import run_method, solve
from ..state import view_policy
from ..validate import validate
from .checks import check_live, check_requeue, check_schedule
from .live import LazyRunning, LiveCluster, PendingQueue, SimView
from .speed import BoundSpeed, SpeedModel

log = logging.getLogger(__name__)

_COMPLETE, _WAKE = 0, 1
_WAKE_POLICY, _WAKE_PERIOD, _WAKE_WATCH = -1, -2, -3
CHECK_MODES = ("fast", "full")


class SimulationError(RuntimeError):
    """A run cannot go on: an invalid decision, a method error, or a stalled queue."""


@dataclass(frozen=True)
class Policy:
    """A registered method used as a per-event policy.

    Parameters
    ----------
    method
        Method name registered for the workload's problem (``dlsched methods``).
    backend, time_limit
        For exact methods: the solver and its per-event time limit in seconds.
    seed
        Passed to the method.
    options
        Method options, passed through.
    via_solve
        Call through :func:`dlsched.solve.solve` (status, objective, bound per event);
        exact methods always are. Otherwise the method runs directly and its decision
        is checked by the simulator.
    interval
        Also wake the policy every ``interval`` seconds (batch policies, e.g. a GA that
        plans every N seconds).
    batch_only
        Call the policy only at wake-ups (arrivals and completions just queue/free).
    prefix
        Prefix mode (module docstring); ``None``: on for problems placed whole (Liquid).
    max_jobs
        In prefix mode, show the policy at most this many pending jobs.
    """

    method: str
    backend: str | None = None
    time_limit: float | None = None
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    via_solve: bool = False
    interval: float | None = None
    batch_only: bool = False
    prefix: bool | None = None
    max_jobs: int | None = None

    @property
    def label(self) -> str:
        return self.method + (f"[{self.backend}]" if self.backend else "")


@dataclass
class JobRecord:
    """What happened to one job (``gpus``: GPU indices in the cluster, once started)."""

    job: Job
    work: float
    start: float | None = None
    end: float | None = None
    gpus: np.ndarray | None = None
    nodes: int = 0
    locality_slowdown: float = 1.0
    base_rate: float = 1.0
    rate: float = 1.0
    work_left: float = 0.0
    last_t: float = 0.0
    version: int = 0
    pred_end: float = 0.0
    tasks: tuple[TaskPlacement, ...] = ()
    node_extra: dict[int, tuple[float, float]] | None = None
    gpu_list: tuple[int, ...] = ()
    attempts: list[tuple[float, float, tuple[int, ...]]] = field(default_factory=list)
    """Earlier runs ended by a requeue: (start, requeue time, GPU indices); their progress
    is lost (the job restarts from its full work)."""


@dataclass
class SimRun:
    """Raw outcome of :func:`simulate`; ``dlsched.simulate.metrics`` turns it into tables."""

    workload: Instance
    policy: Policy
    speed: SpeedModel
    records: list[JobRecord]
    busy_t: np.ndarray  # times at which the number of busy GPUs changed
    busy_n: np.ndarray  # busy GPUs from busy_t[i] on
    frag_t: np.ndarray  # sample times of the mean server fragmentation (SCHED² Eq. 1)
    frag: np.ndarray
    events: list[tuple[float, str, str]]  # (time, kind, job) when recorded
    policy_calls: int
    event_count: int
    wall_time: float
    events_without_solution: int = 0
    check: str = "fast"
    requeues: int = 0  # running jobs a policy moved back to the queue (JobRecord.attempts)


class _Caller:
    """Calls the registered method on a snapshot (the checks are the engine's)."""

    def __init__(self, workload: Instance, policy: Policy) -> None:
        self.policy = policy
        spec = get_method(workload.problem, policy.method)
        if policy.backend is not None and policy.backend not in spec.backends:
            raise InputError(
                f"method {policy.method!r} has no backend {policy.backend!r}",
                field="backend",
                fix=f"use one of: {', '.join(spec.backends)}" if spec.backends
                else "leave the backend out: this method uses no solver")
        check = getattr(spec.run, "check_options", None)
        if check is not None:  # before the run, and for the fast forms that skip spec.run
            check(dict(policy.options))
        self.spec = spec
        self.via_solve = policy.via_solve or spec.kind == "exact"
        self.state: Any = None
        self.no_solution = 0
        self.last_extra: dict[str, Any] = {}

    def __call__(self, snapshot: Instance) -> tuple[Decision, float | None]:
        p = self.policy
        options = dict(p.options)
        if self.state is not None:
            options["policy_state"] = self.state
        where = f"policy {p.label!r} at t = {snapshot.time:g} s"
        try:
            if self.via_solve:
                result = solve(snapshot, p.method, backend=p.backend, time_limit=p.time_limit,
                               seed=p.seed, **options)
                if result.status is Status.INVALID_INPUT:
                    raise SimulationError(f"{where}: invalid input: {result.message}")
                extra = result.extra
                decision = result.decision
                if decision is None:
                    self.no_solution += 1
                    decision = Decision()
            else:
                out = run_method(self.spec, snapshot, backend=p.backend,
                                 time_limit=p.time_limit, seed=p.seed, options=options,
                                 given=dict(p.options))
                extra = out.extra
                decision = out.decision if out.decision is not None else Decision()
                if out.decision is None:
                    self.no_solution += 1
        except MethodError as exc:
            raise SimulationError(f"{where}: {exc}") from None
        except InputError as exc:
            if exc.source or exc.field.split(".")[0] in ("options", "backend", "time_limit"):
                # the policy's own settings or a file it reads (weights): bad input
                raise InputError(f"{where}: {exc.message}", field=exc.field, fix=exc.fix,
                                 source=exc.source) from None
            raise SimulationError(f"{where}: {exc.one_line()}") from None
        if "policy_state" in extra:
            self.state = extra["policy_state"]
        self.last_extra = extra
        wake = extra.get("wake_at")
        return decision, (float(wake) if wake is not None else None)


class _RecordLookup:
    """job id -> Job of the workload (the jobs a view policy may place)."""

    def __init__(self, records: list[JobRecord], by_id: dict[str, int]) -> None:
        self._records = records
        self._by_id = by_id

    def __getitem__(self, job_id: str) -> Job:
        return self._records[self._by_id[job_id]].job


def simulate(
    workload: Instance,
    policy: Policy | str,
    speed: SpeedModel | None = None,
    *,
    record_events: bool = True,
    frag_samples: bool = True,
    progress: Callable[[int], None] | None = None,
    max_time: float | None = None,
    observe: Callable[[Instance], None] | None = None,
    check: str = "fast",
) -> SimRun:
    """Replay ``workload`` under ``policy``.

    Parameters
    ----------
    workload
        An Instance whose jobs carry ``submit_time`` and ``duration`` (no running jobs).
    policy
        A :class:`Policy` or a method name.
    speed
        Rate models; default :meth:`SpeedModel.for_workload` (the problem's models; for
        trace-derived workloads the recorded duration is the packed placement's time).
    record_events
        Keep the (time, kind, job) event list (tests; off for long traces).
    frag_samples
        Record the mean server fragmentation after each event batch.
    progress
        Called with the number of jobs completed since the last call.
    max_time
        Stop (with SimulationError) if the clock passes this time.
    observe
        Called with every snapshot before the policy sees it (to sample snapshots; an
        exception it raises ends the run and propagates). The policy then always runs on
        snapshots, called whenever some pending job's GPU count fits the idle GPUs.
    check
        ``"fast"`` (decisions checked on what they touch, view policies used) or
        ``"full"`` (snapshot methods and the full validator); module docstring.

    Returns
    -------
    SimRun
        Per-job records and time series; see ``dlsched.simulate.metrics``.

    Raises
    ------
    SimulationError
        Invalid decision, method failure, jobs left pending with nothing to wait for, or a
        schedule that fails the final check.
    InputError
        The workload lacks what the speed models need, or an unknown ``check`` mode.
    """
    if isinstance(policy, str):
        policy = Policy(policy)
    if workload.running:
        raise InputError("a workload has no running jobs", field="running",
                         fix="give the jobs submit times instead")
    if check not in CHECK_MODES:
        raise InputError(f"check mode {check!r}", field="check", fix=f"use one of {CHECK_MODES}")
    speed = speed or SpeedModel.for_workload(workload)
    bound = speed.bind(workload)
    sim = _Engine(workload, policy, bound, record_events, frag_samples, progress, max_time,
                  observe=observe, check=check)
    return sim.run()


class _Engine:
    def __init__(self, workload, policy, bound: BoundSpeed, record_events, frag_samples,
                 progress, max_time, *, observe=None, check: str = "fast") -> None:
        self.w = workload
        self.policy = policy
        self.speed = bound
        self.caller = _Caller(workload, policy)
        self.problem = get_problem(workload.problem)
        self.exclusive = self.problem.exclusive_gpus
        # problems that place a batch whole get the longest fitting prefix of the queue
        self.prefix = policy.prefix if policy.prefix is not None else self.problem.whole_batch
        if policy.max_jobs is not None and policy.max_jobs < 1:
            raise InputError(f"max_jobs = {policy.max_jobs}", field="policy.max_jobs",
                             fix="a positive number of jobs, or None")
        c = workload.cluster
        self.cluster = c
        self.G = c.num_gpus
        self.gpu_ids = c.gpu_ids
        self.gpu_index = c.gpu_index
        self.records = [JobRecord(job, bound.work(job)) for job in workload.jobs]
        self.jobs = workload.jobs
        self.by_id = {r.job.id: i for i, r in enumerate(self.records)}
        self.arrivals = sorted(range(len(self.records)),
                               key=lambda i: (self.records[i].job.submit_time, i))
        self._lookup = _RecordLookup(self.records, self.by_id)
        self.live = LiveCluster(c)
        self.queue = PendingQueue(workload.jobs)
        self.running: dict[int, JobRecord] = {}
        self.on_gpu: list[list[int]] = [[] for _ in range(self.G)]
        self.cum_util = [0.0] * self.G
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.record_events = record_events
        self.seed_caches = True
        self.frag_samples = frag_samples
        self.progress = progress
        self.max_time = max_time
        self.observe: Callable[[Instance], None] | None = observe
        self.check = check
        vp = view_policy(workload.problem, policy.method)
        use_view = (vp is not None and check == "fast" and observe is None
                    and not self.caller.via_solve and not self.prefix
                    and set(policy.options) <= vp.options)
        self.view_policy = vp if use_view else None
        self._view = SimView(self.live, self.queue, self.jobs, self._view_running, 0.0,
                             workload.problem, workload.params)
        self.events: list[tuple[float, str, str]] = []
        self.busy_t: list[float] = []
        self.busy_n: list[int] = []
        self.calls = 0
        self.event_count = 0
        self.done = 0
        self.requeues = 0
        self.t = 0.0
        self._a = 0
        self._wall = 0.0

    # ------------------------------------------------------------------ helpers
    def _push(self, t: float, kind: int, idx: int, version: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, idx, version))

    @staticmethod
    def _advance(rec: JobRecord, t: float) -> None:
        rec.work_left -= rec.rate * (t - rec.last_t)
        rec.last_t = t

    def _schedule_completion(self, idx: int, rec: JobRecord, t: float) -> None:
        rec.version += 1
        end = t + max(rec.work_left, 0.0) / rec.rate
        rec.pred_end = end
        self._push(end, _COMPLETE, idx, rec.version)
        live = self.live
        if self.exclusive:
            for g in rec.gpu_list:
                live.set_end(g, end)
        else:
            records = self.records
            for g in rec.gpu_list:
                live.set_end(g, max(records[i].pred_end for i in self.on_gpu[g]))

    def _rerate(self, idxs: set[int], t: float) -> None:
        """Recompute the interference factor of running jobs ``idxs`` at time ``t``."""
        for idx in idxs:
            rec = self.running[idx]
            self._advance(rec, t)
            factor = self.speed.interference_factor(rec.job.gpu_util or 0.0, rec.gpu_list,
                                                    self.cum_util)
            new = rec.base_rate * factor
            if new != rec.rate:
                rec.rate = new
                self._schedule_completion(idx, rec, t)

    def _neighbours(self, gpus, skip: int) -> set[int]:
        out: set[int] = set()
        for g in gpus:
            out.update(self.on_gpu[g])
        out.discard(skip)
        return out

    def _note_busy(self, t: float) -> None:
        n = self.live.busy_count
        if self.busy_t and self.busy_t[-1] == t:
            self.busy_n[-1] = n
        elif not self.busy_n or self.busy_n[-1] != n:
            self.busy_t.append(t)
            self.busy_n.append(n)

    def _sample_frag(self, t: float) -> None:
        self.live.sample_fragmentation(t)  # values computed in one pass by result()

    # ------------------------------------------------------------------ state changes
    def _arrive(self, idx: int, t: float) -> None:
        self.queue.add(idx)
        if self.record_events:
            self.events.append((t, "arrive", self.records[idx].job.id))

    def _start(self, idx: int, gpu_ids: tuple[str, ...], t: float,
               tasks: tuple[TaskPlacement, ...] = ()) -> None:
        rec = self.records[idx]
        job = rec.job
        self.queue.remove(idx)
        index = self.gpu_index
        gpus = tuple(index[g] for g in gpu_ids)
        rec.gpu_list = gpus
        rec.gpus = np.array(gpus, dtype=np.int64)
        rec.start = t
        rec.last_t = t
        rec.work_left = rec.work
        task_nodes = None
        node_extra = None
        if tasks:
            rec.tasks = tasks
            node_index = self.cluster.node_index
            task_nodes = {tp.task: node_index[tp.node] for tp in tasks}
            rec.nodes = len(set(task_nodes.values()))
            node_extra = {}
            for c in job.containers:
                n = task_nodes[c.id]
                cpu, ram = node_extra.get(n, (0.0, 0.0))
                node_extra[n] = (cpu + c.cpu, ram + c.ram_gb)
            rec.node_extra = node_extra
        else:
            node_of = self.live.gpu_node
            rec.nodes = len({node_of[g] for g in gpus})
        rec.base_rate, rec.locality_slowdown = self.speed.base_rate(job, gpus, task_nodes)
        rec.rate = rec.base_rate
        self.running[idx] = rec
        for g in gpus:
            self.on_gpu[g].append(idx)
        self.live.hold(gpus, job.gpu_util or 0.0, job.gpu_mem_gb or 0.0, job.cpu_per_gpu,
                       job.ram_gb_per_gpu, node_extra)
        if self.speed.interference:
            u = job.gpu_util or 0.0
            cum = self.cum_util
            for g in gpus:
                cum[g] += u
            jobs_on = self.live.jobs_on
            if any(jobs_on[g] > 1 for g in gpus):
                rec.rate = rec.base_rate * self.speed.interference_factor(u, gpus, cum)
                self._rerate(self._neighbours(gpus, idx), t)
            # alone on all its GPUs: U_g = u_j exactly, the factor is exactly 1.0
        self._schedule_completion(idx, rec, t)
        if self.record_events:
            self.events.append((t, "start", job.id))

    def _requeue(self, idx: int, t: float) -> None:
        """Move running job ``idx`` back to the queue: its GPUs freed, its progress lost."""
        rec = self.records[idx]
        self._release(idx, t)
        rec.attempts.append((float(rec.start), t, rec.gpu_list))
        rec.start = None
        rec.gpus = None
        rec.gpu_list = ()
        rec.work_left = rec.work
        rec.version += 1  # its completion in the heap is stale
        rec.rate = rec.base_rate = 1.0
        self.queue.add(idx)
        self.requeues += 1
        if self.record_events:
            self.events.append((t, "requeue", rec.job.id))

    def _finish(self, idx: int, t: float) -> None:
        rec = self.records[idx]
        self._release(idx, t)
        rec.end = t
        rec.work_left = 0.0
        self.done += 1
        if self.record_events:
            self.events.append((t, "complete", rec.job.id))

    def _release(self, idx: int, t: float) -> None:
        """Free what running job ``idx`` holds and re-rate the jobs sharing its GPUs."""
        rec = self.running.pop(idx)
        gpus = rec.gpu_list
        job = rec.job
        for g in gpus:
            self.on_gpu[g].remove(idx)
        live = self.live
        live.release(gpus, job.gpu_util or 0.0, job.gpu_mem_gb or 0.0, job.cpu_per_gpu,
                     job.ram_gb_per_gpu, rec.node_extra)
        if self.exclusive:
            for g in gpus:
                live.set_end(g, 0.0)
        if self.speed.interference:
            u = job.gpu_util or 0.0
            cum = self.cum_util
            for g in gpus:
                cum[g] -= u
                if not live.jobs_on[g]:
                    cum[g] = 0.0  # no float residue
            self._rerate(self._neighbours(gpus, idx), t)
        if not self.exclusive:
            records = self.records
            for g in gpus:
                live.set_end(g, max((records[i].pred_end for i in self.on_gpu[g]),
                                    default=0.0))

    # ------------------------------------------------------------------ what policies see
    def _running_jobs(self, t: float) -> list[RunningJob]:
        out = []
        ids = self.gpu_ids
        node_ids = self.cluster.node_ids
        for rec in self.running.values():
            job = rec.job
            left = max(rec.work_left - rec.rate * (t - rec.last_t), 0.0) / rec.rate
            extra: dict[str, Any] = {}
            if rec.node_extra:
                extra["node_cpu"] = {node_ids[n]: v[0] for n, v in rec.node_extra.items()}
                extra["node_ram_gb"] = {node_ids[n]: v[1] for n, v in rec.node_extra.items()}
            if self.observe is None:
                # what a performance-aware policy (PAB) measures: its rate over its rate
                # without interference, and its start (not in observed snapshots, which
                # are saved as instances)
                extra["rate_factor"] = rec.rate / rec.base_rate
                extra["start"] = rec.start
            out.append(RunningJob(
                job=job.id, gpus=tuple(ids[g] for g in rec.gpu_list), gpu_util=job.gpu_util or 0.0,
                gpu_mem_gb=job.gpu_mem_gb or 0.0, cpu_per_gpu=job.cpu_per_gpu,
                ram_gb_per_gpu=job.ram_gb_per_gpu, remaining_s=left, extra=extra))
        return out

    def _lazy_running(self, t: float) -> LazyRunning:
        return LazyRunning(lambda: self._running_jobs(t), len(self.running))

    def _snapshot(self, t: float, jobs: tuple[Job, ...] | None = None) -> Instance:
        """The policy's view at ``t`` as an Instance (pending queue, or ``jobs``: a prefix).

        Running jobs are built on first access; the derived loads (``gpu_busy``,
        ``gpu_usage``, ``node_usage``, ``job_index``) are seeded from the live state
        instead of being recomputed from the running jobs; they are the same numbers
        (``tests/test_sim_engine.py`` checks it).
        """
        if jobs is None:
            jobs = self.queue.jobs()
        snap = Instance(problem=self.w.problem, cluster=self.cluster, jobs=jobs,
                        params=self.w.params, running=self._lazy_running(t), time=t,
                        name=f"{self.w.name or 'workload'}@{t:g}")
        if self.seed_caches:
            snap.__dict__.update(self.live.arrays(),
                                 job_index={job.id: i for i, job in enumerate(jobs)})
        return snap

    def snapshot(self, t: float | None = None) -> Instance:
        """The full snapshot at the current (or given) time."""
        return self._snapshot(self.t if t is None else t)

    def view(self) -> SimView:
        """The read-only live view at the current time."""
        v = self._view
        v.time = self.t
        v._running = None  # running jobs are rebuilt on access, at this time
        return v

    def _view_running(self) -> LazyRunning:
        return self._lazy_running(self.t)

    # ------------------------------------------------------------------ deciding
    def _worth_calling(self) -> bool:
        """Whether a snapshot policy can start anything (a cheap necessary condition)."""
        q = self.queue
        if not len(q):
            return False
        if self.prefix:
            return self._prefix_bound() > 0
        if not self.exclusive:
            return True
        free = self.live.idle_total
        if free == 0:
            return False
        if q.demand and q.all_fixed():
            return q.min_demand() <= free
        return True

    def _due(self) -> bool:
        if self.view_policy is not None:
            if not len(self.queue):
                return False
            return bool(self.view_policy.can_start(self.view(), **self.policy.options))
        return self._worth_calling()

    def _call(self, t: float, jobs: tuple[Job, ...] | None = None
              ) -> tuple[Decision, float | None, bool, Instance]:
        """One snapshot call: (decision, wake-up time, whether a solution, the snapshot)."""
        self.calls += 1
        snapshot = self._snapshot(t) if jobs is None else self._snapshot(t, jobs)
        if self.observe is not None:
            snapshot.running.materialize()  # built now: an observer may keep the snapshot
            self.observe(snapshot)
        before = self.caller.no_solution
        decision, wake = self.caller(snapshot)
        return decision, wake, self.caller.no_solution == before, snapshot

    def _prefix_bound(self) -> int:
        """Longest queue prefix whose summed GPUs, CPU and RAM fit the free totals."""
        c = self.cluster
        live = self.live
        free_gpu = live.idle_total
        free_cpu = float(c.node_cpu.sum() - np.array(live.node_cpu).sum()) + 1e-9
        free_ram = float(c.node_ram_gb.sum() - np.array(live.node_ram).sum()) + 1e-9
        limit = self.policy.max_jobs or len(self.queue)
        k = 0
        for idx in self.queue:
            job = self.jobs[idx]
            if k >= limit:
                break
            if job.containers:
                gpus = sum(x.gpus for x in job.containers)
                cpu = sum(x.cpu for x in job.containers)
                ram = sum(x.ram_gb for x in job.containers)
            else:
                gpus = job.num_gpus or 0
                cpu, ram = gpus * job.cpu_per_gpu, gpus * job.ram_gb_per_gpu
            free_gpu -= gpus
            free_cpu -= cpu
            free_ram -= ram
            if free_gpu < 0 or free_cpu < 0 or free_ram < 0:
                break
            k += 1
        return k

    def _decide(self, t: float) -> None:
        """Ask the policy and apply its (checked) decision."""
        if self.view_policy is not None:
            self.calls += 1
            decision = self.view_policy.decide(self.view(), **self.policy.options)
            self.apply(decision)
            return
        requeue: tuple[str, ...] = ()
        watch = None
        if not self.prefix:
            decision, wake, _, snap = self._call(t)
            extra = self.caller.last_extra
            requeue = tuple(extra.get("requeue", ()))
            watch = extra.get("watch_at")
        else:
            queue = self.queue.jobs()
            before = self.caller.no_solution
            hi = self._prefix_bound()
            decision, wake, found, snap = self._call(t, queue[:hi])
            if not found:
                # bisection: lo jobs are known to fit (0 trivially); try at most hi
                lo, hi = 0, hi - 1
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    d, w, ok, s = self._call(t, queue[:mid])
                    if ok:
                        lo, decision, wake, found, snap = mid, d, w, True, s
                    else:
                        hi = mid - 1
                # one event without a solution, however many prefixes were tried
                self.caller.no_solution = before + (0 if found else 1)
        self.apply(decision, snap, checked=self.caller.via_solve, requeue=requeue)
        if wake is not None and wake > t:
            self._push(wake, _WAKE, _WAKE_POLICY, 0)
        # a watch at the current time (a zero warm-up) only after a round that changed
        # something, so a policy cannot stall the clock
        if watch is not None and (float(watch) > t or (float(watch) == t and (
                decision.placements or requeue))):
            self._push(float(watch), _WAKE, _WAKE_WATCH, 0)

    def apply(self, decision: Decision, snapshot: Instance | None = None, *,
              checked: bool = False, requeue: tuple[str, ...] = ()) -> None:
        """Check ``decision`` (unless ``checked`` by ``solve``) and start its jobs now.

        ``snapshot`` is the instance the policy saw (None: the live queue was shown).
        ``requeue``: running jobs to move back to the pending queue first (a policy returns
        them in ``extra["requeue"]``). They are always checked (``checks.check_requeue``:
        running now, plain GPU jobs, listed once, not placed in the same decision); each
        frees its GPUs and loses its progress (it restarts from its full work when placed
        again) and goes to the tail of the queue. The placements are then checked against
        the state after the requeues (the policy saw the requeued jobs still running, so
        its placements are conservative).
        """
        t = self.t
        if requeue:
            problems = check_requeue(requeue, self.by_id, self.running, self.records,
                                     {pl.job for pl in decision.placements})
            if problems:
                raise SimulationError(f"{self._where()} returned an invalid requeue: "
                                      + "; ".join(problems))
            for job_id in requeue:
                self._requeue(self.by_id[job_id], t)
        for pl in decision.placements:
            if pl.start is not None and abs(pl.start - t) > 1e-9:
                raise SimulationError(f"{self._where()}: job {pl.job} has start {pl.start}; "
                                      "jobs start at the snapshot time (non-preemptive, no "
                                      "reservations)")
        if not decision.placements:
            return
        if not checked:
            if self.check == "full":
                report = validate(snapshot if snapshot is not None else self._snapshot(t),
                                  decision)
                problems = list(report.violations)
            else:
                problems = check_live(self.live, decision, self._pending_test(snapshot),
                                      self._job_lookup(snapshot), self.problem,
                                      self._problem_instance(decision, snapshot))
            if problems:
                text = "\n".join(f"  {v}" for v in problems)
                raise SimulationError(f"{self._where()} returned an invalid decision: "
                                      f"infeasible:\n{text}")
        by_id = self.by_id
        for pl in decision.placements:
            self._start(by_id[pl.job], pl.gpus, t, pl.tasks)

    def _where(self) -> str:
        return f"policy {self.policy.label!r} at t = {self.t:g} s"

    def _pending_test(self, snapshot: Instance | None) -> Callable[[str], bool]:
        if snapshot is not None:
            index = snapshot.job_index
            return index.__contains__
        by_id, queue = self.by_id, self.queue
        return lambda job_id: by_id.get(job_id, -1) in queue

    def _job_lookup(self, snapshot: Instance | None) -> Any:
        if snapshot is not None:
            return {j.id: j for j in snapshot.jobs}
        return self._lookup

    def _problem_instance(self, decision: Decision, snapshot: Instance | None
                          ) -> Callable[[], Instance]:
        if snapshot is not None:
            return lambda: snapshot
        cache: list[Instance] = []

        def make() -> Instance:
            if not cache:
                jobs = tuple(self.records[self.by_id[p.job]].job for p in decision.placements)
                cache.append(Instance(problem=self.w.problem, cluster=self.cluster, jobs=jobs,
                                      params=self.w.params, running=self._lazy_running(self.t),
                                      time=self.t))
            return cache[0]

        return make

    # ------------------------------------------------------------------ stepping
    def next_batch(self) -> bool | None:
        """Apply all events of the next event time; None when the run is over.

        Returns whether the policy is due (it was woken, or jobs arrived or finished, and
        it can start something).
        """
        a, n_arr = self._a, len(self.arrivals)
        if not (a < n_arr or self.heap):
            return None
        records = self.records
        t_arr = records[self.arrivals[a]].job.submit_time if a < n_arr else math.inf
        t_heap = self.heap[0][0] if self.heap else math.inf
        t = min(t_arr, t_heap)
        if self.max_time is not None and t > self.max_time:
            raise SimulationError(f"clock passed max_time = {self.max_time:g} s")
        self.t = t
        changed = woke = watch = False
        self._done_before = self.done
        heap = self.heap
        while heap and heap[0][0] == t:
            _, kind, _, idx, version = heapq.heappop(heap)
            if kind == _COMPLETE:
                rec = records[idx]
                if idx in self.running and rec.version == version:
                    self._finish(idx, t)
                    changed = True
                    self.event_count += 1
            else:
                woke = True
                self.event_count += 1
                watch = watch or idx == _WAKE_WATCH
                if idx == _WAKE_PERIOD and (a < n_arr or len(self.queue) or self.running):
                    self._push(t + self.policy.interval, _WAKE, _WAKE_PERIOD, 0)
        while a < n_arr and records[self.arrivals[a]].job.submit_time == t:
            self._arrive(self.arrivals[a], t)
            a += 1
            changed = True
            self.event_count += 1
        self._a = a
        self._changed = changed or woke
        call = woke if self.policy.batch_only else (changed or woke)
        self._worth = self._due() if call else None
        if watch:  # the policy asked to look at its running jobs: called even with no queue
            self._worth = True
        return bool(self._worth)

    def end_batch(self) -> None:
        """Record the time series after a batch and detect a stalled queue."""
        t = self.t
        if self._changed:
            self._note_busy(t)
            if self.frag_samples:
                self._sample_frag(t)
        if self.progress is not None and self.done > self._done_before:
            self.progress(self.done - self._done_before)
        if (self._a >= len(self.arrivals) and len(self.queue) and not self.running
                and self._stalled(self._worth)):
            ids = [self.jobs[i].id for i, _ in zip(self.queue, range(5), strict=False)]
            raise SimulationError(
                f"policy {self.policy.label!r} left {len(self.queue)} jobs pending at "
                f"t = {t:g} s with nothing running and no arrival or wake-up to come "
                f"(first: {ids}); does every job fit the cluster?")

    def result(self) -> SimRun:
        """Close the run: check the whole schedule from the records and return it."""
        problems = check_schedule(self.records, self.cluster, self.exclusive)
        if problems:
            raise SimulationError("the finished schedule fails its check: "
                                  + "; ".join(problems[:5]))
        frag_t, frag = self.live.fragmentation_series()
        return SimRun(
            workload=self.w, policy=self.policy, speed=self.speed.model, records=self.records,
            busy_t=np.array(self.busy_t), busy_n=np.array(self.busy_n, dtype=np.int64),
            frag_t=frag_t, frag=frag, events=self.events,
            policy_calls=self.calls, event_count=self.event_count,
            wall_time=_time.perf_counter() - self._wall,
            events_without_solution=self.caller.no_solution, check=self.check,
            requeues=self.requeues)

    def run(self) -> SimRun:
        self._wall = _time.perf_counter()
        if self.policy.interval:
            first = self.records[self.arrivals[0]].job.submit_time if self.arrivals else 0.0
            self._push(first, _WAKE, _WAKE_PERIOD, 0)
        while True:
            due = self.next_batch()
            if due is None:
                break
            if due:
                self._decide(self.t)
            self.end_batch()
        return self.result()

    def _stalled(self, worth: bool | None) -> bool:
        """Idle cluster, no arrivals left, jobs pending: will anything ever start?

        ``worth`` is None when the policy was not due this round (a batch policy between
        wake-ups), False when no pending job could fit, True when it was called.
        """
        if any(kind == _WAKE and idx in (_WAKE_POLICY, _WAKE_WATCH)
               for _, kind, _, idx, _ in self.heap):
            return False  # the policy asked to be woken later
        if worth is None:
            return not self.policy.interval
        return True
