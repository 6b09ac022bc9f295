"""The simulator's persistent state: the live cluster, the pending queue, the policy view.

Everything here is updated incrementally by the engine when a job starts or finishes, so
the cost of an event does not grow with the cluster or the queue:

* :class:`LiveCluster` — per GPU the number of jobs, utilization (percent), memory (GB)
  and predicted end of its latest job; per server the CPU and RAM in use, its idle GPUs
  (sorted, cluster order), an index of servers by idle-GPU count, and the running moments
  of its GPUs' end times that give its fragmentation (SCHED² Eq. 1) at any time.
* :class:`PendingQueue` — the pending jobs in arrival order with O(1) head, removal and
  membership, and a count of pending GPU demands.
* :class:`SimView` — what a *view policy* (``dlsched.state.register_view_policy``) reads:
  the queue head and order, idle GPUs by server and by count, per-GPU and per-server loads.
  It is read-only: a policy returns a :class:`~dlsched.decision.Decision` and the engine
  checks it before anything changes.

Fragmentation per server from moments: with k busy GPUs whose latest jobs end at e_i
(mean m, centred sum of squares V), at time t the remaining times x_i = e_i - t give
Σx = k (m - t) and Σx² = V + k (m - t)², so a server's value needs only (k, m, V), which
change only when one of its GPUs does (recomputed exactly from its GPUs then); the mean
over servers at any t is one vector expression.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..jobs import Job, RunningJob
from ..topology import Cluster


class PendingQueue:
    """Pending jobs (workload record indices) in arrival order.

    Removal anywhere is O(1) (a tombstone); the head pointer skips tombstones, and the
    order list is compacted when tombstones outnumber live entries.
    """

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._jobs = jobs
        self._order: list[int] = []
        self._alive: list[bool] = []
        self._pos: dict[int, int] = {}
        self._head = 0
        self._dead = 0
        self.demand: Counter[int] = Counter()
        self.version = 0
        self._cache: tuple[int, tuple[Job, ...]] | None = None

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, idx: object) -> bool:
        return idx in self._pos

    def add(self, idx: int) -> None:
        """Append job ``idx`` (arrivals come in order)."""
        self._pos[idx] = len(self._order)
        self._order.append(idx)
        self._alive.append(True)
        n = self._jobs[idx].num_gpus
        if n is not None:
            self.demand[n] += 1
        self.version += 1

    def remove(self, idx: int) -> None:
        """Take job ``idx`` out of the queue (it started)."""
        p = self._pos.pop(idx)
        self._alive[p] = False
        self._dead += 1
        n = self._jobs[idx].num_gpus
        if n is not None:
            self.demand[n] -= 1
            if not self.demand[n]:
                del self.demand[n]
        while self._head < len(self._order) and not self._alive[self._head]:
            self._head += 1
            self._dead -= 1
        if self._dead > 64 and self._dead > len(self._pos):
            self._compact()
        self.version += 1

    def _compact(self) -> None:
        keep = [i for p, i in enumerate(self._order[self._head:], self._head) if self._alive[p]]
        self._order = keep
        self._alive = [True] * len(keep)
        self._pos = {i: p for p, i in enumerate(keep)}
        self._head = self._dead = 0

    def head(self) -> int | None:
        """Index of the oldest pending job, or None."""
        return self._order[self._head] if self._head < len(self._order) else None

    def __iter__(self) -> Iterator[int]:
        order, alive = self._order, self._alive
        for p in range(self._head, len(order)):
            if alive[p]:
                yield order[p]

    def jobs(self) -> tuple[Job, ...]:
        """The pending jobs in arrival order (cached until the queue changes)."""
        if self._cache is None or self._cache[0] != self.version:
            self._cache = (self.version, tuple(self._jobs[i] for i in self))
        return self._cache[1]

    def min_demand(self) -> int | None:
        """Smallest GPU count among pending jobs with a fixed demand (None if none)."""
        return min(self.demand) if self.demand else None

    def all_fixed(self) -> bool:
        """Every pending job has a fixed GPU count."""
        return sum(self.demand.values()) == len(self._pos)


class LiveCluster:
    """Loads of the cluster, updated per started/finished job (see the module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.G = cluster.num_gpus
        self.N = cluster.num_nodes
        self.gpu_node: list[int] = cluster.gpu_node.tolist()
        self.node_gpus: list[list[int]] = [g.tolist() for g in cluster.gpus_of_node]
        self.mem_cap: list[float] = cluster.gpu_mem_gb.tolist()
        self.cpu_cap: list[float] = cluster.node_cpu.tolist()
        self.ram_cap: list[float] = cluster.node_ram_gb.tolist()
        self.jobs_on = [0] * self.G
        self.util = [0.0] * self.G
        self.mem = [0.0] * self.G
        self.node_cpu = [0.0] * self.N
        self.node_ram = [0.0] * self.N
        self.gpu_end = [0.0] * self.G
        self.idle: list[list[int]] = [list(g) for g in self.node_gpus]
        self.max_idle = max((len(g) for g in self.node_gpus), default=0)
        self.by_idle: list[list[int]] = [[] for _ in range(self.max_idle + 1)]
        for s, g in enumerate(self.node_gpus):
            self.by_idle[len(g)].append(s)
        self.open_servers = [s for s in range(self.N) if self.idle[s]]
        self.idle_total = self.G
        self.node_size = cluster.node_gpu_count.astype(float)
        self._fw = np.zeros(self.N)  # k / n: busy share of each server's GPUs (0: idle)
        self._fm = np.zeros(self.N)  # mean predicted end of its busy GPUs
        self._fq = np.ones(self.N)  # their variance (1 on idle servers, any value works)
        self._dirty: set[int] = set()
        self._sample_t: list[float] = []
        self._log: list[tuple[int, int, float, float, float]] | None = None
        self.version = 0
        self._arrays: tuple[int, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ updates
    def _set_idle(self, s: int, before: int, after: int) -> None:
        level = self.by_idle[before]
        del level[bisect.bisect_left(level, s)]
        bisect.insort(self.by_idle[after], s)
        if before == 0:
            bisect.insort(self.open_servers, s)
        elif after == 0:
            del self.open_servers[bisect.bisect_left(self.open_servers, s)]

    def hold(self, gpus: Sequence[int], util: float, mem: float, cpu_per_gpu: float,
             ram_per_gpu: float, node_extra: Mapping[int, tuple[float, float]] | None) -> None:
        """A job starts on GPU indices ``gpus`` with these per-GPU loads."""
        node_of = self.gpu_node
        for g in gpus:
            if self.jobs_on[g] == 0:
                s = node_of[g]
                idle = self.idle[s]
                n = len(idle)
                del idle[bisect.bisect_left(idle, g)]
                self._set_idle(s, n, n - 1)
                self.idle_total -= 1
            self.jobs_on[g] += 1
            self.util[g] += util
            self.mem[g] += mem
        for g in gpus:
            n = node_of[g]
            self.node_cpu[n] += cpu_per_gpu
            self.node_ram[n] += ram_per_gpu
        if node_extra:
            for n, (cpu, ram) in node_extra.items():
                self.node_cpu[n] += cpu
                self.node_ram[n] += ram
        self.version += 1

    def release(self, gpus: Sequence[int], util: float, mem: float, cpu_per_gpu: float,
                ram_per_gpu: float, node_extra: Mapping[int, tuple[float, float]] | None) -> None:
        """A job on ``gpus`` finishes: the reverse of :meth:`hold`."""
        node_of = self.gpu_node
        for g in gpus:
            self.jobs_on[g] -= 1
            self.util[g] -= util
            self.mem[g] -= mem
        for g in gpus:
            n = node_of[g]
            self.node_cpu[n] -= cpu_per_gpu
            self.node_ram[n] -= ram_per_gpu
        if node_extra:
            for n, (cpu, ram) in node_extra.items():
                self.node_cpu[n] -= cpu
                self.node_ram[n] -= ram
        for g in gpus:
            if self.jobs_on[g] == 0:
                self.util[g] = self.mem[g] = 0.0  # no float residue on idle GPUs
                s = node_of[g]
                idle = self.idle[s]
                n = len(idle)
                bisect.insort(idle, g)
                self._set_idle(s, n, n + 1)
                self.idle_total += 1
        self.version += 1

    def set_end(self, g: int, end: float) -> None:
        """Predicted end of the latest job on GPU ``g`` (0 when idle)."""
        self.gpu_end[g] = end
        self._dirty.add(self.gpu_node[g])

    # ------------------------------------------------------------------ metrics
    @property
    def busy_count(self) -> int:
        """GPUs holding at least one job."""
        return self.G - self.idle_total

    def _server_stats(self, s: int) -> tuple[float, float, float]:
        """(k/n, mean predicted end, variance of the ends) of server ``s``'s busy GPUs."""
        ends = [self.gpu_end[g] for g in self.node_gpus[s] if self.jobs_on[g]]
        k = len(ends)
        if not k:
            return 0.0, 0.0, 1.0
        m = sum(ends) / k
        return k / self.node_size[s], m, sum((e - m) * (e - m) for e in ends) / k

    def _refresh(self, sample: int) -> None:
        """Recompute the servers whose GPUs changed; logged as the values from sample
        index ``sample`` on."""
        log = self._log
        for s in self._dirty:
            w, m, q = self._server_stats(s)
            self._fw[s], self._fm[s], self._fq[s] = w, m, q
            if log is not None:
                log.append((sample, s, w, m, q))
        self._dirty.clear()

    def fragmentation(self, t: float) -> float:
        """Mean server fragmentation at ``t`` (SCHED² Eq. 1; module docstring).

        Per busy server 1 - s1² / (n s2) = 1 - (k / n) d² / (V / k + d²) with d = m - t;
        idle servers (k = 0) count 0. Reads the current state without touching the
        sample log.
        """
        w, m, q = self._fw.copy(), self._fm.copy(), self._fq.copy()
        for s in self._dirty:
            w[s], m[s], q[s] = self._server_stats(s)
        return float(_mean_fragmentation(w[None, :], m[None, :], q[None, :],
                                         np.array([t]))[0])

    def sample_fragmentation(self, t: float) -> None:
        """Log the servers changed since the last sample; the values come from
        :meth:`fragmentation_series` once the run is over (one vector pass)."""
        if self._log is None:
            self._log = []
        if not self._sample_t or self._sample_t[-1] != t:
            self._sample_t.append(t)
        if self._dirty:
            self._refresh(len(self._sample_t) - 1)

    def fragmentation_series(self, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
        """(sample times, mean server fragmentation at each) of :meth:`sample_fragmentation`.

        Rebuilds each server's (k/n, mean end, variance) at every sample from the log of
        changes (forward fill, ``chunk`` samples at a time) and evaluates the same formula
        as :meth:`fragmentation`.
        """
        times = np.array(self._sample_t, dtype=float)
        if not len(times):
            return times, np.zeros(0)
        log = self._log or []
        idx = np.array([e[0] for e in log], dtype=np.int64)
        srv = np.array([e[1] for e in log], dtype=np.int64)
        vals = np.array([e[2:] for e in log], dtype=float).reshape(-1, 3)
        n = self.N
        state = np.zeros((3, n))
        state[2] = 1.0  # (w, m, q) of an idle server
        out = np.empty(len(times))
        lo = 0
        for a in range(0, len(times), chunk):
            b = min(a + chunk, len(times))
            hi = int(np.searchsorted(idx, b, side="left"))
            rows = b - a + 1  # row 0: the state before this chunk
            have = np.zeros((rows, n), dtype=bool)
            have[0] = True
            block = np.empty((3, rows, n))
            block[:, 0, :] = state
            r, c = idx[lo:hi] - a + 1, srv[lo:hi]
            for f in range(3):  # later log entries of one (sample, server) win
                block[f, r, c] = vals[lo:hi, f]
            have[r, c] = True
            pick = np.where(have, np.arange(rows)[:, None], 0)
            np.maximum.accumulate(pick, axis=0, out=pick)
            cols = np.arange(n)[None, :]
            w, m, q = (block[f][pick, cols][1:] for f in range(3))
            out[a:b] = _mean_fragmentation(w, m, q, times[a:b])
            state = np.stack([w[-1], m[-1], q[-1]])
            lo = hi
        return times, out

    # ------------------------------------------------------------------ snapshots
    def arrays(self) -> dict[str, Any]:
        """numpy copies of the loads for an Instance snapshot (cached per version)."""
        if self._arrays is None or self._arrays[0] != self.version:
            self._arrays = (self.version, {
                "gpu_busy": np.array(self.jobs_on) > 0,
                "gpu_usage": (np.array(self.util), np.array(self.mem)),
                "node_usage": (np.array(self.node_cpu), np.array(self.node_ram))})
        a = self._arrays[1]
        return {"gpu_busy": a["gpu_busy"].copy(),
                "gpu_usage": (a["gpu_usage"][0].copy(), a["gpu_usage"][1].copy()),
                "node_usage": (a["node_usage"][0].copy(), a["node_usage"][1].copy())}


class LazyRunning(Sequence[RunningJob]):
    """The running jobs of a snapshot, built only when a policy or check reads them."""

    def __init__(self, make: Any, count: int) -> None:
        self._make = make
        self._count = count
        self._items: tuple[RunningJob, ...] | None = None

    def _all(self) -> tuple[RunningJob, ...]:
        if self._items is None:
            self._items = tuple(self._make())
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


class SimView:
    """Read-only view of the live state for view policies (``dlsched.state``).

    Attributes ``time``, ``cluster``, ``problem`` and ``params`` are plain values; the
    methods read the engine's live structures without copying them.
    """

    __slots__ = ("_live", "_queue", "_jobs", "_make_running", "_running", "time", "cluster",
                 "problem", "params")

    def __init__(self, live: LiveCluster, queue: PendingQueue, jobs: Sequence[Job],
                 running: Any, time: float, problem: str, params: Mapping[str, Any]) -> None:
        self._live = live
        self._queue = queue
        self._jobs = jobs
        self._make_running = running
        self._running: Any = None
        self.time = time
        self.cluster = live.cluster
        self.problem = problem
        self.params = params

    # queue
    def head(self) -> Job | None:
        """The oldest pending job."""
        i = self._queue.head()
        return None if i is None else self._jobs[i]

    def queue(self) -> Iterator[Job]:
        """Pending jobs in arrival order (lazily)."""
        jobs = self._jobs
        return (jobs[i] for i in self._queue)

    @property
    def queue_length(self) -> int:
        return len(self._queue)

    def min_demand(self) -> int | None:
        """Smallest GPU demand among pending jobs with a fixed demand."""
        return self._queue.min_demand()

    # cluster
    @property
    def idle_count(self) -> int:
        """GPUs holding no job."""
        return self._live.idle_total

    def idle_gpus(self, server: int) -> tuple[int, ...]:
        """Idle GPU indices of ``server`` in cluster order."""
        return tuple(self._live.idle[server])

    def servers_with_idle(self, count: int) -> tuple[int, ...]:
        """Servers with exactly ``count`` idle GPUs, by index."""
        by = self._live.by_idle
        return tuple(by[count]) if 0 <= count < len(by) else ()

    def first_server_with_idle(self, count: int, skip: Mapping[int, Any] | set[int] = ()
                               ) -> int | None:
        """Lowest-index server with exactly ``count`` idle GPUs that is not in ``skip``."""
        by = self._live.by_idle
        if not 0 <= count < len(by):
            return None
        for s in by[count]:
            if s not in skip:
                return s
        return None

    @property
    def max_idle(self) -> int:
        """Largest possible idle count of a server."""
        return self._live.max_idle

    def idle_on(self, server: int) -> int:
        """Number of idle GPUs of ``server``."""
        return len(self._live.idle[server])

    def open_servers(self) -> Iterator[int]:
        """Servers with at least one idle GPU, by index (lazily; do not hold across calls)."""
        return iter(self._live.open_servers)

    def gpu_mem_free(self, g: int) -> float:
        """Capacity minus memory in use on GPU ``g`` (GB)."""
        return self._live.mem_cap[g] - self._live.mem[g]

    def node_free(self, n: int) -> tuple[float, float]:
        """(CPU, RAM in GB) free on server ``n``."""
        live = self._live
        return live.cpu_cap[n] - live.node_cpu[n], live.ram_cap[n] - live.node_ram[n]

    def gpu_mem_used(self, g: int) -> float:
        return self._live.mem[g]

    def gpu_util(self, g: int) -> float:
        return self._live.util[g]

    def gpu_jobs(self, g: int) -> int:
        return self._live.jobs_on[g]

    def node_cpu_used(self, n: int) -> float:
        return self._live.node_cpu[n]

    def node_ram_used(self, n: int) -> float:
        return self._live.node_ram[n]

    @property
    def running(self) -> Sequence[RunningJob]:
        """Running jobs with their remaining time (built on first access)."""
        if self._running is None:
            self._running = self._make_running()
        return self._running


def _mean_fragmentation(w: np.ndarray, m: np.ndarray, q: np.ndarray,
                        t: np.ndarray) -> np.ndarray:
    """Per row: mean over servers of [w > 0] (1 - w d² / (q + d²)), d = m - t.

    ``w`` = k / n (busy share), ``m`` mean predicted end, ``q`` variance of the ends; a
    busy server whose GPUs all end exactly at ``t`` (0/0) counts 0, like an idle one.
    """
    d = m - t[:, None]
    d *= d
    den = q + d
    with np.errstate(invalid="ignore", divide="ignore"):
        frag = np.where((w > 0) & (den > 0), 1.0 - w * (d / den), 0.0)
    return frag.mean(axis=1) if frag.shape[1] else np.zeros(len(t))
