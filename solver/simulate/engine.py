"""Event-driven simulation of a workload under a scheduling policy.

Events are arrivals, completions and the policy's own wake-ups (a period, or a time the
policy asks for in ``Result.extra["wake_at"]``). After all events at one time are applied,
the policy sees a snapshot — an :class:`~dlsched.instance.Instance` of the workload's problem
at that time, with the running jobs (remaining time at their current rate) and the pending
queue in arrival order — and returns a :class:`~dlsched.decision.Decision`. Every non-empty
decision is checked by ``dlsched.validate.validate`` before it is applied; an invalid one
stops the run with :class:`SimulationError` naming the policy and the time. Jobs are
non-preemptive: they start at the snapshot time and run to completion.

Progress is counted in work seconds at a rate set by a :class:`~.speed.SpeedModel`; rates
change only at events. Per-event work is kept small: completions live in a heap with
version stamps (a rate change re-stamps the job instead of searching the heap), arrivals
are a sorted list with a pointer, and only the jobs sharing a GPU with a starting or
finishing job have their rates recomputed. For problems with exclusive GPUs the policy is
not called when no pending job fits into the free GPUs (its only valid answer would be to
start nothing).

Container jobs (Liquid): a placement with ``tasks`` holds its GPUs and, on every server
it uses, the CPU and RAM of its containers there (a PS holds no GPU but still holds its
server's CPU and RAM); these go to ``RunningJob.extra["node_cpu"/"node_ram_gb"]`` so the
snapshots show the right free capacity. Problems whose batch is placed whole (Liquid) run
in *prefix mode* (``Policy.prefix``): the policy sees the longest prefix of the pending
queue (arrival order) that it can place — first the longest prefix whose total GPUs, CPU
and RAM fit the free totals (at most ``Policy.max_jobs`` jobs); if the policy finds no
solution for it, shorter prefixes by bisection. Feasibility is monotone in the prefix, so
for an exact method this is the longest feasible prefix; for a heuristic, the one it
placed. Strict FIFO: a job never overtakes an earlier one that does not fit.
"""

from __future__ import annotations

import heapq
import logging
import math
import time as _time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..decision import Decision, TaskPlacement
from ..errors import InputError
from ..instance import Instance
from ..jobs import Job, RunningJob
from ..problems import get_problem
from ..registry import get_method
from ..result import Status
from ..solve import MethodError, solve
from ..validate import validate
from .speed import BoundSpeed, SpeedModel

log = logging.getLogger(__name__)

_COMPLETE, _WAKE = 0, 1


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
        is checked with the same validator.
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
    """What happened to one job."""

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
    running: RunningJob | None = None
    tasks: tuple[TaskPlacement, ...] = ()


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
    decision_log: list[dict[str, Any]] = field(default_factory=list)


class _Caller:
    """Calls the policy on a snapshot and returns a checked decision (or raises)."""

    def __init__(self, workload: Instance, policy: Policy) -> None:
        self.policy = policy
        spec = get_method(workload.problem, policy.method)
        self.spec = spec
        self.via_solve = policy.via_solve or spec.kind == "exact"
        self.state: Any = None
        self.no_solution = 0

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
                out = self.spec.run(snapshot, backend=p.backend, time_limit=p.time_limit,
                                    seed=p.seed, **options)
                extra = out.extra
                decision = out.decision if out.decision is not None else Decision()
                if out.decision is None:
                    self.no_solution += 1
                if decision.placements:
                    report = validate(snapshot, decision)
                    if not report.ok:
                        raise SimulationError(f"{where} returned an invalid decision: {report}")
        except MethodError as exc:
            raise SimulationError(f"{where}: {exc}") from None
        except InputError as exc:
            raise SimulationError(f"{where}: {exc.one_line()}") from None
        if "policy_state" in extra:
            self.state = extra["policy_state"]
        for pl in decision.placements:
            if pl.start is not None and abs(pl.start - snapshot.time) > 1e-9:
                raise SimulationError(f"{where}: job {pl.job} has start {pl.start}; jobs start "
                                      "at the snapshot time (non-preemptive, no reservations)")
        wake = extra.get("wake_at")
        return decision, (float(wake) if wake is not None else None)


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
) -> SimRun:
    """Replay ``workload`` under ``policy``.

    Parameters
    ----------
    workload
        An Instance whose jobs carry ``submit_time`` and ``duration`` (no running jobs).
    policy
        A :class:`Policy` or a method name.
    speed
        Rate models; default :meth:`SpeedModel.default_for` the workload's problem.
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
        exception it raises ends the run and propagates).

    Returns
    -------
    SimRun
        Per-job records and time series; see ``dlsched.simulate.metrics``.

    Raises
    ------
    SimulationError
        Invalid decision, method failure, or jobs left pending with nothing to wait for.
    InputError
        The workload lacks what the speed models need.
    """
    if isinstance(policy, str):
        policy = Policy(policy)
    if workload.running:
        raise InputError("a workload has no running jobs", field="running",
                         fix="give the jobs submit times instead")
    speed = speed or SpeedModel.default_for(workload.problem)
    bound = speed.bind(workload)
    sim = _Engine(workload, policy, bound, record_events, frag_samples, progress, max_time)
    sim.observe = observe
    return sim.run()


class _Engine:
    def __init__(self, workload, policy, bound: BoundSpeed, record_events, frag_samples,
                 progress, max_time) -> None:
        self.w = workload
        self.policy = policy
        self.speed = bound
        self.caller = _Caller(workload, policy)
        problem = get_problem(workload.problem)
        self.exclusive = problem.exclusive_gpus
        # problems that place a batch whole get the longest fitting prefix of the queue
        self.prefix = policy.prefix if policy.prefix is not None else problem.whole_batch
        if policy.max_jobs is not None and policy.max_jobs < 1:
            raise InputError(f"max_jobs = {policy.max_jobs}", field="policy.max_jobs",
                             fix="a positive number of jobs, or None")
        c = workload.cluster
        self.cluster = c
        self.G = c.num_gpus
        self.gpu_ids = c.gpu_ids
        self.gpu_index = c.gpu_index
        self.node_starts = np.array([g[0] for g in c.gpus_of_node], dtype=np.int64)
        self.node_sizes = c.node_gpu_count.astype(float)
        self.records = [JobRecord(job, bound.work(job)) for job in workload.jobs]
        self.by_id = {r.job.id: i for i, r in enumerate(self.records)}
        order = sorted(range(len(self.records)),
                       key=lambda i: (self.records[i].job.submit_time, i))
        self.arrivals = order
        self.pending: dict[str, int] = {}
        self.pending_jobs: dict[str, Job] = {}
        self.util = np.zeros(self.G)
        self.mem = np.zeros(self.G)
        self.node_cpu = np.zeros(c.num_nodes)
        self.node_ram = np.zeros(c.num_nodes)
        self.pending_demand: Counter[int] = Counter()
        self.running: dict[int, JobRecord] = {}
        self.on_gpu: list[list[int]] = [[] for _ in range(self.G)]
        self.gpu_jobs = np.zeros(self.G, dtype=np.int64)
        self.cum_util = np.zeros(self.G)
        self.gpu_end = np.zeros(self.G)  # predicted end of the latest job on each GPU
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.record_events = record_events
        self.seed_caches = True
        self.frag_samples = frag_samples
        self.progress = progress
        self.max_time = max_time
        self.observe: Callable[[Instance], None] | None = None
        self.events: list[tuple[float, str, str]] = []
        self.busy_t: list[float] = []
        self.busy_n: list[int] = []
        self.frag_t: list[float] = []
        self.frag: list[float] = []
        self.calls = 0
        self.event_count = 0
        self.done = 0

    # ------------------------------------------------------------------ helpers
    def _push(self, t: float, kind: int, idx: int, version: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, idx, version))

    def _advance(self, rec: JobRecord, t: float) -> None:
        rec.work_left -= rec.rate * (t - rec.last_t)
        rec.last_t = t

    def _schedule_completion(self, idx: int, rec: JobRecord, t: float) -> None:
        rec.version += 1
        end = t + max(rec.work_left, 0.0) / rec.rate
        rec.pred_end = end
        self._push(end, _COMPLETE, idx, rec.version)
        if self.exclusive:
            self.gpu_end[rec.gpus] = end
        else:
            for g in rec.gpus:
                self.gpu_end[g] = max(self.records[i].pred_end for i in self.on_gpu[g])

    def _rerate(self, idxs: set[int], t: float) -> None:
        """Recompute the interference factor of running jobs ``idxs`` at time ``t``."""
        for idx in idxs:
            rec = self.running[idx]
            self._advance(rec, t)
            factor = self.speed.interference_factor(rec.job.gpu_util or 0.0, rec.gpus,
                                                    self.cum_util)
            new = rec.base_rate * factor
            if new != rec.rate:
                rec.rate = new
                self._schedule_completion(idx, rec, t)

    def _neighbours(self, gpus: np.ndarray, skip: int) -> set[int]:
        out: set[int] = set()
        for g in gpus:
            out.update(self.on_gpu[g])
        out.discard(skip)
        return out

    def _note_busy(self, t: float) -> None:
        n = int(np.count_nonzero(self.gpu_jobs))
        if self.busy_t and self.busy_t[-1] == t:
            self.busy_n[-1] = n
        elif not self.busy_n or self.busy_n[-1] != n:
            self.busy_t.append(t)
            self.busy_n.append(n)

    def _sample_frag(self, t: float) -> None:
        x = np.maximum(self.gpu_end - t, 0.0) * (self.gpu_jobs > 0)
        s1 = np.add.reduceat(x, self.node_starts)
        s2 = np.add.reduceat(x * x, self.node_starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            frag = np.where(s2 > 0, 1.0 - s1 * s1 / (self.node_sizes * s2), 0.0)
        value = float(frag.mean())
        if self.frag_t and self.frag_t[-1] == t:
            self.frag[-1] = value
        else:
            self.frag_t.append(t)
            self.frag.append(value)

    # ------------------------------------------------------------------ state changes
    def _arrive(self, idx: int, t: float) -> None:
        job = self.records[idx].job
        self.pending[job.id] = idx
        self.pending_jobs[job.id] = job
        if job.num_gpus is not None:
            self.pending_demand[job.num_gpus] += 1
        if self.record_events:
            self.events.append((t, "arrive", job.id))

    def _start(self, idx: int, gpu_ids: tuple[str, ...], t: float,
               tasks: tuple[TaskPlacement, ...] = ()) -> None:
        rec = self.records[idx]
        job = rec.job
        del self.pending[job.id]
        del self.pending_jobs[job.id]
        if job.num_gpus is not None:
            self.pending_demand[job.num_gpus] -= 1
            if not self.pending_demand[job.num_gpus]:
                del self.pending_demand[job.num_gpus]
        gpus = np.array([self.gpu_index[g] for g in gpu_ids], dtype=np.int64)
        rec.gpus = gpus
        rec.start = t
        rec.last_t = t
        rec.work_left = rec.work
        extra: dict[str, Any] = {}
        task_nodes = None
        if tasks:
            rec.tasks = tasks
            node_index = self.cluster.node_index
            task_nodes = {tp.task: node_index[tp.node] for tp in tasks}
            rec.nodes = len(set(task_nodes.values()))
            cpu: dict[str, float] = {}
            ram: dict[str, float] = {}
            where = {tp.task: tp.node for tp in tasks}
            for c in job.containers:
                node = where[c.id]
                cpu[node] = cpu.get(node, 0.0) + c.cpu
                ram[node] = ram.get(node, 0.0) + c.ram_gb
            extra = {"node_cpu": cpu, "node_ram_gb": ram}
        else:
            rec.nodes = int(len(np.unique(self.cluster.gpu_node[gpus])))
        rec.base_rate, rec.locality_slowdown = self.speed.base_rate(job, gpus, task_nodes)
        rec.rate = rec.base_rate
        rec.running = RunningJob(job=job.id, gpus=tuple(gpu_ids), gpu_util=job.gpu_util or 0.0,
                                 gpu_mem_gb=job.gpu_mem_gb or 0.0, cpu_per_gpu=job.cpu_per_gpu,
                                 ram_gb_per_gpu=job.ram_gb_per_gpu, extra=extra)
        self.running[idx] = rec
        for g in gpus:
            self.on_gpu[g].append(idx)
        self.gpu_jobs[gpus] += 1
        self._use(rec.running, gpus, +1.0)
        if self.speed.interference:
            self.cum_util[gpus] += job.gpu_util or 0.0
            rec.rate = rec.base_rate * self.speed.interference_factor(
                job.gpu_util or 0.0, gpus, self.cum_util)
            self._rerate(self._neighbours(gpus, idx), t)
        self._schedule_completion(idx, rec, t)
        if self.record_events:
            self.events.append((t, "start", job.id))

    def _finish(self, idx: int, t: float) -> None:
        rec = self.running.pop(idx)
        rec.end = t
        rec.work_left = 0.0
        gpus = rec.gpus
        for g in gpus:
            self.on_gpu[g].remove(idx)
        self.gpu_jobs[gpus] -= 1
        self._use(rec.running, gpus, -1.0)
        idle = gpus[self.gpu_jobs[gpus] == 0]
        self.util[idle] = self.mem[idle] = 0.0  # no float residue on idle GPUs
        if self.exclusive:
            self.gpu_end[gpus] = 0.0
        if self.speed.interference:
            self.cum_util[gpus] -= rec.job.gpu_util or 0.0
            self.cum_util[gpus[self.gpu_jobs[gpus] == 0]] = 0.0  # no float residue
            self._rerate(self._neighbours(gpus, idx), t)
        if not self.exclusive:
            for g in gpus:
                self.gpu_end[g] = max((self.records[i].pred_end for i in self.on_gpu[g]),
                                      default=0.0)
        self.done += 1
        if self.record_events:
            self.events.append((t, "complete", rec.job.id))

    def _use(self, r: RunningJob, gpus: np.ndarray, sign: float) -> None:
        self.util[gpus] += sign * r.gpu_util
        self.mem[gpus] += sign * r.gpu_mem_gb
        nodes = self.cluster.gpu_node[gpus]
        np.add.at(self.node_cpu, nodes, sign * r.cpu_per_gpu)
        np.add.at(self.node_ram, nodes, sign * r.ram_gb_per_gpu)
        if r.extra:
            node_index = self.cluster.node_index
            for node, amount in r.extra.get("node_cpu", {}).items():
                self.node_cpu[node_index[node]] += sign * amount
            for node, amount in r.extra.get("node_ram_gb", {}).items():
                self.node_ram[node_index[node]] += sign * amount

    # ------------------------------------------------------------------ snapshot
    def _snapshot(self, t: float, jobs: tuple[Job, ...] | None = None) -> Instance:
        """The policy's view at ``t`` (pending queue, or ``jobs``: a prefix of it).

        Fast path: the snapshot's derived loads (``gpu_busy``, ``gpu_usage``,
        ``node_usage``, ``job_index``) are seeded from the engine's incremental arrays
        instead of being recomputed from the running jobs; they are the same numbers
        (``tests/test_sim_engine.py`` checks it) and the validator reads them unchanged.
        """
        running = []
        for rec in self.running.values():
            left = max(rec.work_left - rec.rate * (t - rec.last_t), 0.0) / rec.rate
            running.append(RunningJob(
                job=rec.running.job, gpus=rec.running.gpus, gpu_util=rec.running.gpu_util,
                gpu_mem_gb=rec.running.gpu_mem_gb, cpu_per_gpu=rec.running.cpu_per_gpu,
                ram_gb_per_gpu=rec.running.ram_gb_per_gpu, remaining_s=left,
                extra=rec.running.extra))
        if jobs is None:
            jobs = tuple(self.pending_jobs.values())
        snap = Instance(problem=self.w.problem, cluster=self.cluster, jobs=jobs,
                        params=self.w.params, running=tuple(running), time=t,
                        name=f"{self.w.name or 'workload'}@{t:g}")
        if self.seed_caches:
            snap.__dict__.update(
                gpu_busy=self.gpu_jobs > 0,
                gpu_usage=(self.util.copy(), self.mem.copy()),
                node_usage=(self.node_cpu.copy(), self.node_ram.copy()),
                job_index={job.id: i for i, job in enumerate(jobs)})
        return snap

    def _worth_calling(self) -> bool:
        if not self.pending:
            return False
        if self.prefix:
            return self._prefix_bound() > 0
        if not self.exclusive:
            return True
        free = self.G - int(np.count_nonzero(self.gpu_jobs))
        if free == 0:
            return False
        if len(self.pending_demand) and sum(self.pending_demand.values()) == len(self.pending):
            return min(self.pending_demand) <= free
        return True

    def _call(self, t: float, jobs: tuple[Job, ...] | None = None
              ) -> tuple[Decision, float | None, bool]:
        """One policy call: (decision, wake-up time, whether the policy found a solution)."""
        self.calls += 1
        snapshot = self._snapshot(t) if jobs is None else self._snapshot(t, jobs)
        if self.observe is not None:
            self.observe(snapshot)
        before = self.caller.no_solution
        decision, wake = self.caller(snapshot)
        return decision, wake, self.caller.no_solution == before

    def _prefix_bound(self) -> int:
        """Longest queue prefix whose summed GPUs, CPU and RAM fit the free totals."""
        c = self.cluster
        free_gpu = self.G - int(np.count_nonzero(self.gpu_jobs))
        free_cpu = float(c.node_cpu.sum() - self.node_cpu.sum()) + 1e-9
        free_ram = float(c.node_ram_gb.sum() - self.node_ram.sum()) + 1e-9
        limit = self.policy.max_jobs or len(self.pending_jobs)
        k = 0
        for job in self.pending_jobs.values():
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
        if not self.prefix:
            decision, wake, _ = self._call(t)
        else:
            queue = tuple(self.pending_jobs.values())
            before = self.caller.no_solution
            hi = self._prefix_bound()
            decision, wake, found = self._call(t, queue[:hi])
            if not found:
                # bisection: lo jobs are known to fit (0 trivially); try at most hi
                lo, hi = 0, hi - 1
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    d, w, ok = self._call(t, queue[:mid])
                    if ok:
                        lo, decision, wake, found = mid, d, w, True
                    else:
                        hi = mid - 1
                # one event without a solution, however many prefixes were tried
                self.caller.no_solution = before + (0 if found else 1)
        for pl in decision.placements:
            self._start(self.pending[pl.job], pl.gpus, t, pl.tasks)
        if wake is not None and wake > t:
            self._push(wake, _WAKE, -1, 0)

    # ------------------------------------------------------------------ main loop
    def run(self) -> SimRun:
        wall = _time.perf_counter()
        if self.policy.interval:
            first = self.records[self.arrivals[0]].job.submit_time if self.arrivals else 0.0
            self._push(first, _WAKE, -2, 0)
        a = 0
        n_arr = len(self.arrivals)
        while a < n_arr or self.heap:
            t_arr = self.records[self.arrivals[a]].job.submit_time if a < n_arr else math.inf
            t_heap = self.heap[0][0] if self.heap else math.inf
            t = min(t_arr, t_heap)
            if self.max_time is not None and t > self.max_time:
                raise SimulationError(f"clock passed max_time = {self.max_time:g} s")
            changed = woke = False
            done_before = self.done
            while self.heap and self.heap[0][0] == t:
                _, kind, _, idx, version = heapq.heappop(self.heap)
                if kind == _COMPLETE:
                    rec = self.records[idx]
                    if idx in self.running and rec.version == version:
                        self._finish(idx, t)
                        changed = True
                        self.event_count += 1
                else:
                    woke = True
                    self.event_count += 1
                    if idx == -2 and (a < n_arr or self.pending or self.running):
                        self._push(t + self.policy.interval, _WAKE, -2, 0)
            while a < n_arr and self.records[self.arrivals[a]].job.submit_time == t:
                self._arrive(self.arrivals[a], t)
                a += 1
                changed = True
                self.event_count += 1
            call = woke if self.policy.batch_only else (changed or woke)
            worth = self._worth_calling() if call else None
            if worth:
                self._decide(t)
            if changed or woke:
                self._note_busy(t)
                if self.frag_samples:
                    self._sample_frag(t)
            if self.progress is not None and self.done > done_before:
                self.progress(self.done - done_before)
            if a >= n_arr and self.pending and not self.running and self._stalled(worth):
                ids = list(self.pending)[:5]
                raise SimulationError(
                    f"policy {self.policy.label!r} left {len(self.pending)} jobs pending at "
                    f"t = {t:g} s with nothing running and no arrival or wake-up to come "
                    f"(first: {ids}); does every job fit the cluster?")
        return SimRun(
            workload=self.w, policy=self.policy, speed=self.speed.model, records=self.records,
            busy_t=np.array(self.busy_t), busy_n=np.array(self.busy_n, dtype=np.int64),
            frag_t=np.array(self.frag_t), frag=np.array(self.frag), events=self.events,
            policy_calls=self.calls, event_count=self.event_count,
            wall_time=_time.perf_counter() - wall,
            events_without_solution=self.caller.no_solution)

    def _stalled(self, worth: bool | None) -> bool:
        """Idle cluster, no arrivals left, jobs pending: will anything ever start?

        ``worth`` is None when the policy was not due this round (a batch policy between
        wake-ups), False when no pending job could fit, True when it was called.
        """
        if any(kind == _WAKE and idx == -1 for _, kind, _, idx, _ in self.heap):
            return False  # the policy asked to be woken later
        if worth is None:
            return not self.policy.interval
        return True
