"""The simulator's live state, with one owner: :class:`LiveState`.

Everything that changes during a run is here and changes only through its methods
(:meth:`~LiveState.step`, :meth:`~LiveState.start`, :meth:`~LiveState.requeue`,
:meth:`~LiveState.wake`, :meth:`~LiveState.note`); the engine asks it, policies read it
through ``dlsched.simulate.view``, checks read its loads. It holds:

* the per-job records (``dlsched.simulate.records.JobRecord``), the running jobs and the
  jobs on each GPU, the pending queue (``pending.PendingQueue``);
* the events to come: arrivals are a list sorted by (submit time, job index) with a
  pointer; completions and the policy's wake-ups share one heap of ``(time, kind, seq,
  idx, version)``, so at one time completions (``COMPLETE``) come before wake-ups
  (``WAKE``), each in push order. A completion carries the job's version stamp: a rate
  change pushes a new completion with a new stamp instead of searching the heap, and the
  stale one is skipped when it comes up. A wake-up's ``idx`` is its tag (``WAKE_*``);
* the loads, updated per started or finished job so the cost of an event does not grow
  with the cluster or the queue: per GPU the number of jobs, utilization (percent),
  memory (GB) and predicted end of its latest job; per server the CPU and RAM in use, its
  idle GPUs (sorted, cluster order), an index of servers by idle-GPU count;
* once a policy asks for the GPUs' free-memory order (``free_order``), a log of the GPUs
  whose memory in use or job count changed (``mem_log``), from which that order is
  patched;
* what the run records: the event list, the busy-GPU series and the fragmentation log
  (``fragmentation.FragmentationLog``: a server's moments are recomputed only when one of
  its GPUs changed).

Progress is counted in work seconds at a rate set by the speed model (``BoundSpeed``);
rates change only at events, and only the jobs sharing a GPU with a starting or finishing
job have their rates recomputed (their completion is pushed again with a new version).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from itertools import compress
from typing import Any

import numpy as np

from ..decision import TaskPlacement
from ..instance import Instance
from ..problems.rates import BoundSpeed
from .fragmentation import FragmentationLog
from .live_loads import GpuLoads
from .pending import PendingQueue
from .records import JobRecord

COMPLETE, WAKE = 0, 1
WAKE_POLICY, WAKE_PERIOD, WAKE_WATCH = -1, -2, -3


class LiveState(GpuLoads):
    """The state of one run (module docstring).

    Parameters
    ----------
    workload
        The jobs (with submit times) and the cluster.
    speed
        The bound speed models (work of a job, its rate on a placement, interference).
    exclusive
        One job per GPU (the problem's ``exclusive_gpus``).
    record_events
        Keep the (time, kind, job) list of arrivals, starts, requeues and completions.
    """

    # slots: the hot paths read ~40 attributes, and an instance dict past 30 keys loses
    # CPython's fast attribute lookup (measured: ~5 % of a FIFO replay)
    __slots__ = ("cluster", "speed", "exclusive", "jobs", "records", "by_id", "_arrivals",
                 "_arrival_t", "_n", "_a", "_heap", "_seq", "queue", "running", "num_gpus",
                 "gpu_node", "node_gpus", "mem_cap", "cpu_cap", "ram_cap", "on_gpu",
                 "jobs_on", "util", "cum_util", "mem", "node_cpu", "node_ram", "gpu_end",
                 "idle", "max_idle", "by_idle", "open_servers", "idle_total", "node_size",
                 "version", "_arrays", "_touched", "_touched_nodes", "_dirty", "frag",
                 "record_events", "events", "busy_t", "busy_n", "done", "requeues",
                 "mem_log", "free_order", "_gpu_index", "_interference", "_node_span")

    def __init__(self, workload: Instance, speed: BoundSpeed, *, exclusive: bool,
                 record_events: bool) -> None:
        c, jobs = workload.cluster, workload.jobs
        self.cluster = c
        self.speed = speed
        self.exclusive = exclusive
        self.jobs = jobs
        self.records = [JobRecord(job, speed.work(job)) for job in jobs]
        self.by_id = {r.job.id: i for i, r in enumerate(self.records)}
        self._arrivals = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_time, i))
        self._arrival_t = [jobs[i].submit_time for i in self._arrivals]
        self._n = len(jobs)
        self._a = 0  # next arrival
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0
        self.queue = PendingQueue(jobs)
        self.running: dict[int, JobRecord] = {}
        G, N = c.num_gpus, c.num_nodes
        self.num_gpus = G
        self.gpu_node: list[int] = c.gpu_node.tolist()
        self.node_gpus: list[list[int]] = [g.tolist() for g in c.gpus_of_node]
        self.mem_cap: list[float] = c.gpu_mem_gb.tolist()
        self.cpu_cap: list[float] = c.node_cpu.tolist()
        self.ram_cap: list[float] = c.node_ram_gb.tolist()
        self.on_gpu: list[list[int]] = [[] for _ in range(G)]
        self.jobs_on = [0] * G
        self.util = [0.0] * G
        self.cum_util = [0.0] * G  # interference load: summed gpu_util of the GPU's jobs
        self.mem = [0.0] * G
        self.node_cpu = [0.0] * N
        self.node_ram = [0.0] * N
        self.gpu_end = [0.0] * G
        self.idle: list[list[int]] = [list(g) for g in self.node_gpus]
        self.max_idle = max((len(g) for g in self.node_gpus), default=0)
        self.by_idle: list[list[int]] = [[] for _ in range(self.max_idle + 1)]
        for s, g in enumerate(self.node_gpus):
            self.by_idle[len(g)].append(s)
        self.open_servers = [s for s in range(N) if self.idle[s]]
        self.idle_total = G
        self.node_size: list[float] = c.node_gpu_count.astype(float).tolist()
        self.version = 0  # of the loads, for the snapshot arrays' cache
        self._arrays: tuple[int, dict[str, Any]] | None = None
        self._touched: set[int] = set()  # GPUs whose loads changed since the arrays were built
        self._touched_nodes: set[int] = set()  # servers with CPU/RAM outside their GPUs' shares
        self._dirty: set[int] = set()  # servers whose GPU ends changed since the last sample
        self.frag = FragmentationLog(N)
        self.record_events = record_events
        self.events: list[tuple[float, str, str]] = []
        self.busy_t: list[float] = []
        self.busy_n: list[int] = []
        self.done = 0
        self.requeues = 0
        # GPUs whose memory in use changed, logged once a FreeMemoryOrder asks for them
        self.mem_log: list[int] | None = None
        self.free_order: Any = None
        self._gpu_index = c.gpu_index
        # each server's GPUs are one range of indices (Cluster.gpus_of_node builds them so)
        self._node_span = [(g[0], g[-1] + 1) if g else (0, 0) for g in self.node_gpus]
        self._interference = speed.interference

    # ------------------------------------------------------------------ events
    def next_time(self) -> float | None:
        """Time of the next event, or None when none is left."""
        a, heap = self._a, self._heap
        if a < self._n:
            t_arr = self._arrival_t[a]
            return min(t_arr, heap[0][0]) if heap else t_arr
        return heap[0][0] if heap else None

    def step(self, t: float) -> tuple[int, list[int], int]:
        """Apply every event at ``t`` (the next event time): completions, then arrivals.

        Returns (jobs completed, tags of the wake-ups at ``t`` in order, jobs arrived).
        """
        records, running = self.records, self.running
        finished = 0
        wakes: list[int] = []
        heap = self._heap
        while heap and heap[0][0] == t:  # a completion pushed at t meanwhile comes up too
            _, kind, _, idx, version = heapq.heappop(heap)
            if kind == COMPLETE:
                if idx in running and records[idx].version == version:
                    self._finish(idx, t)
                    finished += 1
            else:
                wakes.append(idx)
        a = a0 = self._a
        times, n = self._arrival_t, self._n
        while a < n and times[a] == t:
            idx = self._arrivals[a]
            self.queue.add(idx)
            if self.record_events:
                self.events.append((t, "arrive", records[idx].job.id))
            a += 1
        self._a = a
        return finished, wakes, a - a0

    def _push(self, t: float, kind: int, idx: int, version: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, idx, version))

    def wake(self, t: float, tag: int) -> None:
        """Wake the policy at ``t`` (``tag``: ``WAKE_POLICY``, ``_PERIOD`` or ``_WATCH``)."""
        self._push(t, WAKE, tag, 0)

    @property
    def arrivals_left(self) -> bool:
        """Some job has not arrived yet."""
        return self._a < self._n

    @property
    def first_arrival(self) -> float:
        """Submit time of the first job (0 without jobs)."""
        return self._arrival_t[0] if self._arrival_t else 0.0

    def wake_pending(self, tags: tuple[int, ...]) -> bool:
        """A wake-up with one of ``tags`` is still to come."""
        return any(kind == WAKE and idx in tags for _, kind, _, idx, _ in self._heap)

    def note(self, t: float, fragmentation: bool) -> None:
        """Record the busy-GPU count (and, if ``fragmentation``, a sample) after a batch."""
        n = self.num_gpus - self.idle_total
        if self.busy_t and self.busy_t[-1] == t:
            self.busy_n[-1] = n
        elif not self.busy_n or self.busy_n[-1] != n:
            self.busy_t.append(t)
            self.busy_n.append(n)
        if fragmentation:
            dirty = self._dirty
            at = self.frag.sample_time(t)
            if dirty:
                self._log_servers(at, dirty, self.frag.log)
                dirty.clear()

    def _log_servers(self, at: int, servers: Iterable[int],
                     log: list[tuple[int, int, float, float, float]]) -> None:
        """Append (sample ``at``, server, k/n, mean predicted end, variance of the ends) of
        the busy GPUs of each of ``servers`` to the fragmentation ``log`` (one loop: it runs
        for every server a job touches)."""
        gpu_end, jobs_on, span, size = self.gpu_end, self.jobs_on, self._node_span, \
            self.node_size
        append = log.append
        for s in servers:
            a, b = span[s]
            ends = list(compress(gpu_end[a:b], jobs_on[a:b]))  # the busy GPUs' ends
            k = len(ends)
            if k == 1:
                m = ends[0]
                d = m - m  # 0.0 (as the sum below gives it, NaN included)
                append((at, s, 1 / size[s], m, d * d))
            elif k:
                m = sum(ends) / k
                append((at, s, k / size[s], m, sum([(e - m) * (e - m) for e in ends]) / k))
            else:
                append((at, s, 0.0, 0.0, 1.0))

    # ------------------------------------------------------------------ jobs
    def start(self, idx: int, gpu_ids: Sequence[str], t: float,
              tasks: tuple[TaskPlacement, ...] = ()) -> None:
        """Job ``idx`` leaves the queue and starts on ``gpu_ids`` (its containers on
        ``tasks``' servers) at ``t``."""
        rec = self.records[idx]
        job = rec.job
        self.queue.remove(idx)
        gpus = tuple(map(self._gpu_index.__getitem__, gpu_ids))
        rec.gpu_list = gpus
        rec.start = rec.last_t = t
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
            rec.nodes = 1 if len(gpus) == 1 else len(set(map(self.gpu_node.__getitem__, gpus)))
        rec.rate, rec.locality_slowdown = self.speed.base_rate(job, gpus, task_nodes)
        rec.base_rate = rec.rate
        self.running[idx] = rec
        on_gpu = self.on_gpu
        for g in gpus:
            on_gpu[g].append(idx)
        u = job.gpu_util or 0.0
        self._hold(gpus, u, job.gpu_mem_gb or 0.0, job.cpu_per_gpu, job.ram_gb_per_gpu,
                   node_extra)
        if self._interference:
            cum = self.cum_util
            for g in gpus:
                cum[g] += u
            jobs_on = self.jobs_on
            if (jobs_on[gpus[0]] > 1 if len(gpus) == 1 else
                    any([jobs_on[g] > 1 for g in gpus])):
                rec.rate = rec.base_rate * self.speed.interference_factor(u, gpus, cum)
                self._rerate(self._neighbours(gpus, idx), t)
            # alone on all its GPUs: U_g = u_j exactly, the factor is exactly 1.0
        self._schedule_completion(idx, rec, t)
        if self.record_events:
            self.events.append((t, "start", job.id))

    def requeue(self, idx: int, t: float) -> None:
        """Move running job ``idx`` back to the queue: its GPUs freed, its progress lost."""
        rec = self.records[idx]
        self._release(idx, t)
        rec.attempts.append((float(rec.start), t, rec.gpu_list))
        rec.start = None
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
        on_gpu = self.on_gpu
        for g in gpus:
            on_gpu[g].remove(idx)
        self._unhold(gpus, job.gpu_util or 0.0, job.gpu_mem_gb or 0.0, job.cpu_per_gpu,
                     job.ram_gb_per_gpu, rec.node_extra)
        if self.exclusive:
            self._set_ends(gpus, 0.0)
        if self._interference:
            u = job.gpu_util or 0.0
            cum = self.cum_util
            jobs_on = self.jobs_on
            for g in gpus:
                cum[g] -= u
                if not jobs_on[g]:
                    cum[g] = 0.0  # no float residue
            neighbours = self._neighbours(gpus, idx)
            if neighbours:
                self._rerate(neighbours, t)
        if not self.exclusive:
            self._latest_ends(gpus)

    # ------------------------------------------------------------------ rates
    def _schedule_completion(self, idx: int, rec: JobRecord, t: float) -> None:
        rec.version += 1
        end = t + max(rec.work_left, 0.0) / rec.rate
        rec.pred_end = end
        self._seq += 1
        heapq.heappush(self._heap, (end, COMPLETE, self._seq, idx, rec.version))
        if self.exclusive:
            self._set_ends(rec.gpu_list, end)
        else:
            self._later_end(rec.gpu_list, end)

    def _later_end(self, gpus: Sequence[int], end: float) -> None:
        """:meth:`_latest_ends` after the end of one job on ``gpus`` became ``end``.

        At every call each GPU's recorded end is at least the predicted end of every
        other job on it (it is exact after each start, re-rate and finish; within one,
        a leaving job's end or a starting job's stale one can only leave it higher), so
        an ``end`` at least the recorded one is the latest; otherwise the jobs on the GPU
        are read. Each start and finish ends exact, as with :meth:`_latest_ends` alone."""
        gpu_end, node_of, dirty = self.gpu_end, self.gpu_node, self._dirty
        for g in gpus:
            if end >= gpu_end[g]:
                gpu_end[g] = end
                dirty.add(node_of[g])
            else:
                self._latest_ends((g,))

    def _latest_ends(self, gpus: Sequence[int]) -> None:
        """Each of ``gpus``' predicted end: the latest of the jobs on it (0 when idle)."""
        records, on_gpu, gpu_end, node_of = self.records, self.on_gpu, self.gpu_end, \
            self.gpu_node
        dirty = self._dirty
        for g in gpus:
            held = on_gpu[g]
            if len(held) == 1:
                end = records[held[0]].pred_end
            elif held:
                end = max([records[i].pred_end for i in held])
            else:
                end = 0.0
            gpu_end[g] = end
            dirty.add(node_of[g])

    def _rerate(self, idxs: Iterable[int], t: float) -> None:
        """Recompute the interference factor of running jobs ``idxs`` at time ``t``."""
        for idx in idxs:
            rec = self.running[idx]
            rec.work_left -= rec.rate * (t - rec.last_t)
            rec.last_t = t
            factor = self.speed.interference_factor(rec.job.gpu_util or 0.0, rec.gpu_list,
                                                    self.cum_util)
            new = rec.base_rate * factor
            if new != rec.rate:
                rec.rate = new
                self._schedule_completion(idx, rec, t)

    def _neighbours(self, gpus: Iterable[int], skip: int) -> set[int]:
        out: set[int] = set()
        for g in gpus:
            out.update(self.on_gpu[g])
        out.discard(skip)
        return out

    # ------------------------------------------------------------------ loads
    def arrays(self, copy: bool = True) -> dict[str, Any]:
        """numpy copies of the loads for an Instance snapshot (``copy=False``: the kept
        arrays themselves, valid until the next event; never to be changed).

        Built once, then patched where :meth:`_hold` / :meth:`_unhold` touched a GPU (its
        loads and its server's CPU, RAM and idle GPUs): the values are copied from the
        lists, never recomputed, so they equal a fresh build exactly.
        """
        if self._arrays is None:
            self._arrays = (self.version, {
                "gpu_busy": np.array(self.jobs_on) > 0,
                "gpu_usage": (np.array(self.util), np.array(self.mem)),
                "node_usage": (np.array(self.node_cpu), np.array(self.node_ram)),
                "idle_by_server": list(map(tuple, self.idle))})
            self._touched.clear()
            self._touched_nodes.clear()
        elif self._arrays[0] != self.version:
            a = self._arrays[1]
            busy, (util, mem) = a["gpu_busy"], a["gpu_usage"]
            cpu, ram = a["node_usage"]
            idle = a["idle_by_server"]
            nodes = self._touched_nodes
            for g in self._touched:
                busy[g] = self.jobs_on[g] > 0
                util[g] = self.util[g]
                mem[g] = self.mem[g]
                nodes.add(self.gpu_node[g])
            for n in nodes:
                cpu[n] = self.node_cpu[n]
                ram[n] = self.node_ram[n]
                idle[n] = tuple(self.idle[n])
            self._touched.clear()
            nodes.clear()
            self._arrays = (self.version, a)
        a = self._arrays[1]
        if not copy:
            return a
        return {"gpu_busy": a["gpu_busy"].copy(), "idle_by_server": tuple(a["idle_by_server"]),
                "gpu_usage": (a["gpu_usage"][0].copy(), a["gpu_usage"][1].copy()),
                "node_usage": (a["node_usage"][0].copy(), a["node_usage"][1].copy())}
