"""The shortcuts of the Horus simulator fast forms against the steps they replace, on
random loads (old semantics vs new, same answers):

* PAB's serial round on the view's orders (``horus_pab_live._first_fit_live``) against
  its numpy form (``_first_fit``): free memory with ties, busy GPUs holding no memory,
  requeued jobs that wait, GPUs blocked by this round's requeues, queues longer than the
  entries tried one by one;
* greedy's choice on idle GPUs (``horus_idle``, inside ``CheapestLive.take``) against the
  same calls with the shortcut off, and against Eq. 7 priced on every fitting GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from dlsched import Job, homogeneous_cluster
from dlsched.heuristics.horus_idle import idle_first
from dlsched.heuristics.horus_live import CheapestLive, top_k
from dlsched.heuristics.horus_pab_live import _first_fit, _first_fit_live, _Memory
from dlsched.jobs import JobColumns
from dlsched.problems.horus import job_share_costs, parse_horus_params
from dlsched.state import EPS


class _View:
    """What the fast forms read of ``SimView``, over given loads (idle GPUs hold 0.0)."""

    def __init__(self, cluster, jobs, records, util, mem, busy):
        self.cluster = cluster
        self.workload_jobs = jobs
        self.workload_columns = JobColumns(jobs)
        self._records = np.asarray(records, dtype=np.int64)
        self._util, self._mem, self._busy = util, mem, busy
        free = cluster.gpu_mem_gb - mem
        self._keys = sorted((-float(f), g) for g, f in enumerate(free))
        node = cluster.gpu_node
        self._idle = [[g for g in np.flatnonzero(node == s).tolist() if not busy[g]]
                      for s in range(cluster.num_nodes)]
        self.idle_count = int(np.count_nonzero(~busy))

    def queue_records(self):
        return self._records

    def head(self):
        return self.workload_jobs[self._records[0]] if len(self._records) else None

    def free_memory_order(self):
        return self._keys

    def busy_at_full_memory(self):
        cap = self.cluster.gpu_mem_gb
        return int(np.count_nonzero(self._busy & (cap - self._mem >= cap)))

    def idle_lists(self):
        return self._idle

    def open_servers(self):
        return iter([s for s, idle in enumerate(self._idle) if idle])

    def loads(self, copy=True):
        return {"gpu_usage": (self._util, self._mem), "gpu_busy": self._busy}


def _random_cluster(rng):
    """1-5 servers of 1, 2, 4 or 8 GPUs of 8 GB, and the GPUs per server."""
    nodes, per = int(rng.integers(1, 6)), int(rng.choice([1, 2, 4, 8]))
    return homogeneous_cluster(nodes, per, gpu_mem_gb=8.0), per


def _loads(rng, g, cap):
    """Random loads: idle GPUs (0.0, 0.0), busy ones with ties, some holding no memory
    or a sliver of it, some past 100 % utilization."""
    busy = rng.random(g) < rng.choice([0.2, 0.5, 0.9])
    mem = np.where(busy, rng.choice([0.0, 1e-9, 1.0, 2.0, 2.5, 4.0, cap], g), 0.0)
    util = np.where(busy, rng.choice([0.0, 30.0, 60.0, 95.0, 140.0], g), 0.0)
    return util, mem, busy


@pytest.mark.parametrize("seed", range(60))
def test_pab_round_on_the_view_equals_the_numpy_round(seed):
    rng = np.random.default_rng(seed)
    cluster, per = _random_cluster(rng)
    g = cluster.num_gpus
    util, mem, busy = _loads(rng, g, 8.0)
    # every other seed: a queue past the 32 entries tried one by one
    n = int(rng.integers(1, 40)) if seed % 2 else int(rng.integers(40, 90))
    sizes = [0.0, 1.0, 3.0, 7.5, 8.0, 9.0]
    # every other seed: mostly jobs that never fit, so the walk often goes past them
    weights = [1, 1, 1, 1, 1, 1] if seed % 2 else [1, 1, 1, 1, 1, 400]
    jobs = [Job(id=f"j{i}", submit_time=0.0, num_gpus=int(rng.integers(1, per + 3)),
                duration=10.0, gpu_util=10.0,
                gpu_mem_gb=float(rng.choice(sizes, p=np.array(weights) / sum(weights))))
            for i in range(n)]
    records = rng.permutation(n)[:int(rng.integers(1, n + 1)) if seed % 2 else n]
    view = _View(cluster, jobs, records, util, mem, busy)
    memory = _Memory(view)
    assert memory.plain
    if seed % 3:
        rows = rng.choice(n, int(rng.integers(0, n + 1)), replace=False).tolist()
        memory.flags[rows] = True
        memory.waiting.update(rows)
        memory.requeued.update(jobs[r].id for r in rows)
    blocked = None
    held = np.flatnonzero(busy)
    if seed % 4 == 0 and len(held):
        blocked = set(rng.choice(held, int(rng.integers(1, len(held) + 1)),
                                 replace=False).tolist())
    mask = None
    if blocked:
        mask = np.zeros(g, dtype=bool)
        mask[list(blocked)] = True
    waiting = memory.flags[records] if memory.waiting else None
    want = _first_fit(cluster.gpu_mem_gb - mem, busy, memory.mem[records],
                      memory.need[records], waiting, mask)
    got = _first_fit_live(view, memory, blocked)
    if want is None:
        assert got is None
    else:
        assert got == (int(records[want[0]]), want[1])


def _priced(p, cluster, util, free, job):
    """Eq. 7 on every GPU whose free memory takes the share; the num_gpus cheapest."""
    low = job.gpu_mem_gb - EPS
    candidates = np.flatnonzero(free >= low)
    costs = job_share_costs(p, cluster.gpu_type, cluster.gpu_mem_gb, util, free,
                            job.gpu_util, job.gpu_mem_gb, candidates)
    return top_k(costs, candidates, job.num_gpus)


@pytest.mark.parametrize("seed", range(60))
def test_greedy_on_idle_gpus_equals_pricing_every_gpu(seed):
    rng = np.random.default_rng(seed)
    cluster, per = _random_cluster(rng)
    g = cluster.num_gpus
    params = {} if seed % 2 else {"w_mem": float(rng.choice([0.5, 2.0])),
                                  "w_util": float(rng.choice([0.0, 3.0]))}
    p = parse_horus_params(params)
    assert idle_first(p, cluster) is not None
    util, mem, busy = _loads(rng, g, 8.0)
    jobs = [Job(id=f"j{i}", submit_time=0.0, num_gpus=int(rng.integers(1, per + 1)),
                duration=10.0, gpu_util=float(rng.choice([0.0, 20.0, 80.0, 150.0])),
                gpu_mem_gb=float(rng.choice([0.0, 1e-9, 1.0, 4.0, 8.0])))
            for i in range(int(rng.integers(1, 8)))]
    view = _View(cluster, jobs, range(len(jobs)), util, mem, busy)
    fast, slow = CheapestLive(view, p), CheapestLive(view, p)
    slow._fast = None
    keys_f = keys_s = view.free_memory_order()
    free, u = cluster.gpu_mem_gb - mem, util.copy()
    for job in jobs:  # one call placing them in turn, while they fit
        if np.count_nonzero(free >= job.gpu_mem_gb - EPS) < job.num_gpus:
            break
        want = _priced(p, cluster, u, free, job)
        keys_f, got = fast.take(job, keys_f)
        keys_s, old = slow.take(job, keys_s)
        assert got == old == want
        assert keys_f == keys_s
        free[want] -= job.gpu_mem_gb
        u[want] += job.gpu_util


def test_the_shortcuts_are_taken_on_loads_that_allow_them():
    """Idle GPUs and busy ones holding memory: greedy's shortcut answers (no loads read);
    a queue of 40 jobs whose fitting job is past the 32 tried one by one: the numpy tail
    finds it."""
    cluster = homogeneous_cluster(2, 4, gpu_mem_gb=8.0)
    util = np.array([90.0, 0, 40.0, 0, 0, 120.0, 0, 0])
    mem = np.array([3.0, 0, 1.0, 0, 0, 5.0, 0, 0])
    busy = mem > 0
    job = Job(id="a", submit_time=0.0, num_gpus=2, duration=1.0, gpu_util=50.0,
              gpu_mem_gb=2.0)
    view = _View(cluster, [job], [0], util, mem, busy)
    p = parse_horus_params({})
    cheap = CheapestLive(view, p)
    _, got = cheap.take(job, view.free_memory_order())
    assert got == [1, 3] == _priced(p, cluster, util, cluster.gpu_mem_gb - mem, job)
    assert cheap._free is None  # never priced

    jobs = [Job(id=f"q{i}", submit_time=0.0, num_gpus=1, duration=1.0, gpu_util=1.0,
                gpu_mem_gb=9.0 if i < 35 else 2.0) for i in range(40)]
    view = _View(cluster, jobs, range(40), util, mem, busy)
    memory = _Memory(view)
    assert _first_fit_live(view, memory) == (35, [1])
    memory.flags[35] = True
    memory.waiting.add(35)
    memory.requeued.add("q35")
    assert _first_fit_live(view, memory) == (35, [1])  # waiting: the lowest idle GPU
    assert _first_fit_live(view, memory, {0, 2, 5}) == (35, [1])
