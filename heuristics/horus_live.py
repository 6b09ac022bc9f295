"""What the simulator fast forms of Horus OBP and greedy share: the start guard and the
walk over the pending queue, on orders the live view keeps instead of arrays rebuilt per
call.

A job without CPU or RAM shares gets its GPUs in a round exactly when ``num_gpus`` GPUs
have the free memory for its share (``horus.may_fit``), that is when the ``num_gpus``-th
largest free memory is at least its share minus EPS. The view keeps the GPUs ordered by
free memory (``SimView.free_memory_order``) and the pending jobs grouped by GPU count,
each group ordered by memory (``SimView.queue_groups``), so whether some job fits is one
comparison per group: its smallest job against the group's threshold (a job needing more
memory than one that does not fit does not fit either). :func:`pack_live` tries the jobs
in queue order as ``horus.pack_in_order`` does (the first that fits, then the next one
after it, on the loads the placements left), with the thresholds read off the order.
``tests/test_fast_paths_equivalence.py`` compares it with ``pack_in_order`` and the
simulator's fast mode with its full mode.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.jobs import Job, JobColumns
from dlsched.problems.horus import (
    HorusParams,
    job_share_costs,
    single_function,
    weighted_interference,
)
from dlsched.state import EPS, ClusterState

from .horus_idle import fits_idle, idle_cost_ok, idle_first, lowest_idle

SHARES = "shares"
"""The group of the jobs with CPU or RAM shares (they always pass the guard)."""
GROUPS = ("horus", "pending by GPU count, then memory")
"""Name of the view's queue index the fast forms read."""

Keys = Sequence[tuple[float, int]]
Take = Callable[[Job, Keys], tuple[Keys, list[int]]]


def _group(job: Job) -> Any:
    if (job.cpu_per_gpu or 0.0) > 0 or (job.ram_gb_per_gpu or 0.0) > 0:
        return SHARES
    return job.num_gpus


def _key(job: Job) -> tuple[float]:
    return (job.gpu_mem_gb or 0.0,)


def pending_groups(view: Any) -> Mapping[Any, Any]:
    """The pending jobs by GPU count (``SHARES``: those with CPU or RAM shares), each
    group's entries ``(GPU memory, queue number)`` ascending."""
    return view.queue_groups(GROUPS, _group, _key)


def _some_fit(keys: Keys, groups: Mapping[Any, Any], skip: set[int]) -> bool:
    """Whether a pending job not in ``skip`` (record indices) passes ``may_fit`` with the
    free memory ``keys``."""
    gpus = len(keys)
    for n, index in groups.items():
        if n == SHARES:
            return True
        if n is None or n > gpus:
            continue  # never fits (may_fit: a NaN or too large GPU count)
        if n < 1:
            return True
        free = -keys[n - 1][0]
        for (mem, _), rec in zip(index.keys, index.order, strict=True):
            if rec not in skip:
                if free >= mem - EPS:
                    return True
                break
    return False


def may_start(view: Any, **options: Any) -> bool:
    """Start guard of OBP and greedy (``dlsched.state.StartGuard``): a pending job passes
    ``horus.may_fit`` on the live state (both try only such jobs; β and the queues only
    choose among them)."""
    return _some_fit(view.free_memory_order(), pending_groups(view), set())


_ARRAYS: tuple = (None, 0, None)  # the last workload columns, GPU count, and their arrays
_SCAN = 24  # queue entries tried one by one before the rest is tested in numpy


def _workload_arrays(columns: JobColumns, gpus: int) -> tuple[np.ndarray, np.ndarray,
                                                              list[int], list[float]]:
    """Per workload job: its GPU count as an index into :func:`_thresholds` (0 for none,
    ``gpus + 1`` for more than the cluster or unknown) and its share's memory minus EPS
    (``horus._plan``'s numbers), as arrays and as lists."""
    global _ARRAYS
    last = _ARRAYS  # read once: another thread may replace it
    if last[0] is columns and last[1] == gpus:
        return last[2]
    need = columns("num_gpus")
    index = np.where(np.isnan(need), gpus + 1, np.clip(need, 0, gpus + 1)).astype(np.int64)
    low = columns("gpu_mem_gb", 0.0) - EPS
    arrays = (index, low, index.tolist(), low.tolist())
    _ARRAYS = (columns, gpus, arrays)
    return arrays


def _thresholds(keys: Keys, groups: Mapping[Any, Any]) -> list[float]:
    """Entry n: the n-th largest free memory for the GPU counts n of ``groups``; -inf for
    0 (a job asking no GPUs is never placed) and past the cluster."""
    gpus = len(keys)
    out = [-np.inf] * (gpus + 2)
    for n in groups:
        if n != SHARES and n is not None and 1 <= n <= gpus:
            out[n] = -keys[n - 1][0]
    return out


def _first_fit(keys: Keys, groups: Mapping[Any, Any], records: np.ndarray, pos: int,
               arrays: tuple[np.ndarray, np.ndarray, list[int], list[float]]) -> int | None:
    """Queue position of the first job from ``pos`` on that fits and asks for GPUs."""
    need, low, need_l, low_l = arrays
    lut = _thresholds(keys, groups)
    for k, r in enumerate(records[pos:pos + _SCAN].tolist()):
        if lut[need_l[r]] >= low_l[r]:
            return pos + k
    start = pos + _SCAN
    if start >= len(records):
        return None
    rest = records[start:]
    ok = np.array(lut)[need[rest]] >= low[rest]
    h = int(ok.argmax())
    return start + h if ok[h] else None


def pack_live(view: Any, take: Take) -> list[tuple[int, list[int]]] | None:
    """``horus.pack_in_order`` over the pending queue in queue order, on the live view.

    ``take(job, keys)`` gets a job that fits and the free-memory entries now, and returns
    the entries after it is placed (a new list) and its GPUs. Returns ``(queue position,
    GPU indices)`` in placement order, or None when a pending job has CPU or RAM shares
    (the caller runs its round on the loads instead).
    """
    groups = pending_groups(view)
    if SHARES in groups:
        return None
    keys: Keys = view.free_memory_order()
    records = view.queue_records()
    arrays = _workload_arrays(view.workload_columns, len(keys))
    jobs = view.workload_jobs
    placed: list[tuple[int, list[int]]] = []
    done: set[int] = set()
    pos = 0
    # jobs before pos that were not placed did not fit on more free memory than now. No
    # _some_fit before the first search: the start guard asked it (when it says no job
    # fits, _first_fit finds none either), and it only spares a search of the queue.
    while True:
        i = _first_fit(keys, groups, records, pos, arrays)
        if i is None:
            break
        r = int(records[i])
        keys, gpus = take(jobs[r], keys)
        placed.append((i, gpus))
        done.add(r)
        pos = i + 1
        if not _some_fit(keys, groups, done):
            break
    return placed


def moved(keys: Keys, gpus: Sequence[int], old: Sequence[float], new: Sequence[float]
          ) -> list[tuple[float, int]]:
    """``keys`` (a new list) after GPUs ``gpus`` went from free memory ``old`` to ``new``."""
    out = list(keys)
    for g, a, b in zip(gpus, old, new, strict=True):
        del out[bisect_left(out, (-a, g))]
        insort(out, (-b, g))
    return out


def most_free(job: Job, keys: Keys) -> tuple[Keys, list[int]]:
    """OBP's choice (a :data:`Take`): the ``num_gpus`` GPUs with the most free memory,
    ties by index (``horus._top_k`` on minus the free memory)."""
    n = job.num_gpus
    head = keys[:n]
    gpus = [g for _, g in head]
    mem = job.gpu_mem_gb or 0.0
    old = [-f for f, _ in head]
    return moved(keys, gpus, old, [f - mem for f in old]), gpus


class Pending(Sequence[Job]):
    """The pending jobs in queue order, read from the workload's when asked."""

    __slots__ = ("_records", "_jobs")

    def __init__(self, records: np.ndarray, jobs: Sequence[Job]) -> None:
        self._records = records
        self._jobs = jobs

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._jobs[r] for r in self._records[i].tolist()]
        return self._jobs[int(self._records[i])]


def live_state(view: Any) -> tuple[ClusterState, Pending]:
    """The loads as a :class:`ClusterState` (fresh copies) and the pending jobs."""
    a = view.loads(copy=False)  # read only: what the state changes is a new array
    c = view.cluster
    util, mem = a["gpu_usage"]
    cpu, ram = a["node_usage"]
    state = ClusterState(cluster=c, free_mem=c.gpu_mem_gb - mem, util=util.copy(),
                         free_cpu=c.node_cpu - cpu, free_ram=c.node_ram_gb - ram,
                         busy=a["gpu_busy"].copy())
    return state, Pending(view.queue_records(), view.workload_jobs)


def decision_of(view: Any, jobs: Sequence[Job], placed: list[tuple[int, list[int]]]
              ) -> Decision:
    """As ``decision_from_indices`` on the snapshot: GPU ids in ascending index order."""
    ids = view.cluster.gpu_ids
    return Decision(tuple([
        Placement(jobs[j].id, (ids[gpus[0]],) if len(gpus) == 1 else
                  tuple([ids[g] for g in sorted(gpus)])) for j, gpus in placed]))


def top_k(costs: np.ndarray, candidates: np.ndarray | None, k: int) -> list[int]:
    """The ``k`` cheapest of ``candidates`` (ascending GPU indices; all GPUs when None;
    ``costs`` at them), by (cost, index): ``horus._cheapest_gpus`` on a server room that
    never binds."""
    if k == 1 and len(costs):
        h = int(costs.argmin())  # the first smallest: the lowest index among ties
        if costs[h] == costs[h]:  # (a NaN, which argmin would return, sorts last)
            return [h if candidates is None else int(candidates[h])]
    if candidates is None:
        if len(costs) <= 512:  # one stable sort: ties stay in index order
            return np.argsort(costs, kind="stable")[:k].tolist()
        candidates = np.arange(len(costs))
    if len(candidates) > 2 * k + 16:
        # only the costs up to the k-th smallest (all of them: ties at the cut are
        # ordered by index among themselves)
        cut = np.partition(costs, k - 1)[k - 1]
        first = np.flatnonzero(costs <= cut)
        return candidates[first[np.lexsort((candidates[first], costs[first]))][:k]].tolist()
    return candidates[np.lexsort((candidates, costs))][:k].tolist()


_FEW = 16  # at most this many fitting GPUs: priced one by one (fewer steps than arrays)


class CheapestLive:
    """Greedy's choice for a job without CPU or RAM shares as a :data:`Take` on the live
    view's loads: ``horus._greedy_pickers``' ``plain`` then ``ClusterState.place``, that
    is the λ GPUs whose share fits with the smallest Eq. 7 cost on the loads left by the
    jobs placed earlier in the call (ties: lower index).

    On a cluster of one GPU type with memory on every GPU (``single_function``) the costs
    are :func:`~dlsched.problems.horus.job_share_costs`' operations on every GPU at once
    (the formula is elementwise: the same numbers at the fitting GPUs), the others priced
    +inf; a choice that is not among the fitting GPUs (a NaN or infinite cost) is made
    again exactly as ``plain`` makes it. The loads are read at the first job taken (a
    call that places nothing reads nothing), and a placement patches only its GPUs, when
    the next job is taken.
    """

    __slots__ = ("_view", "_p", "_f", "_cap", "_free", "_used", "_util", "_own", "_due",
                 "_busy", "_fast", "_taken", "_idle")

    def __init__(self, view: Any, p: HorusParams) -> None:
        self._view = view
        self._p = p
        self._free: np.ndarray | None = None
        self._due: list[tuple[list[int], float, float]] = []  # placements not in the arrays
        # enough idle GPUs: their lowest indices, unpriced (horus_idle)
        self._fast = idle_first(p, view.cluster)
        self._taken: set[int] = set()  # GPUs placed on in this call
        self._idle = view.idle_count  # idle GPUs not in _taken

    def _load(self) -> None:
        c = self._view.cluster
        loads = self._view.loads(copy=False)
        util, mem = loads["gpu_usage"]  # read only: copied to change
        self._busy = loads["gpu_busy"]
        self._cap = cap = c.gpu_mem_gb
        self._free = cap - mem  # a new array: live_state's free memory
        self._util = util
        self._own = False
        self._f = single_function(self._p, c.gpu_type, cap)
        # the memory in use as job_share_costs computes it (cap - free), kept per GPU
        self._used = cap - self._free if self._f is not None else None

    def _settle(self) -> None:
        """Apply the placements made since to the arrays (``ClusterState.place``'s
        updates), in placement order."""
        if not self._own:
            self._util = self._util.copy()
            self._own = True
        free, used = self._free, self._used
        for gpus, mem, util in self._due:
            if len(gpus) == 1:
                g = gpus[0]
                free[g] -= mem
                self._util[g] += util
                if used is not None:
                    used[g] = self._cap[g] - free[g]
                continue
            at = np.asarray(gpus, dtype=np.int64)
            free[at] -= mem
            self._util[at] += util
            if used is not None:
                used[at] = self._cap[at] - free[at]
        self._due.clear()

    def take(self, job: Job, keys: Keys) -> tuple[Keys, list[int]]:
        """:data:`Take`: ``job``'s GPUs and the free-memory entries after it is placed."""
        fast, mem = self._fast, job.gpu_mem_gb or 0.0
        if fast is not None and fits_idle(job, keys, self._idle, fast[0], fast[1]) \
                and idle_cost_ok(self._p, fast[2], fast[0], mem, job.gpu_util or 0.0):
            n = job.num_gpus
            chosen = lowest_idle(self._view, n, self._taken)
            self._taken.update(chosen)
            self._idle -= n
            self._due.append((chosen, mem, job.gpu_util or 0.0))
            c = fast[0]  # an idle GPU's free memory (its memory in use is 0.0)
            return moved(keys, chosen, [c] * n, [c - mem] * n), chosen
        if self._free is None:
            self._load()
        if self._due:
            self._settle()
        low = mem - EPS
        # keys hold the same floats as the free memory: the GPUs that fit open them
        fit = bisect_right(keys, (-low, len(keys)))
        chosen = None
        if fit <= _FEW:
            chosen = self._few(job, keys[:fit])
        if chosen is None:
            chosen = self._cheapest(job, low, fit == len(keys))
        item = self._free.item
        old = [item(g) for g in chosen]
        if not all(f >= low for f in old):
            chosen = self._exact(job, low)
            old = [item(g) for g in chosen]
        busy, taken = self._busy, self._taken
        for g in chosen:
            if g not in taken and not busy[g]:
                self._idle -= 1
        taken.update(chosen)
        self._due.append((chosen, mem, job.gpu_util or 0.0))
        return moved(keys, chosen, old, [f - mem for f in old]), chosen

    def _few(self, job: Job, head: Keys) -> list[int] | None:
        """The choice among the GPUs of ``head`` (the fitting ones, few) priced one by one
        in Python floats (the same IEEE operations as the arrays'); None when the costs
        cannot be ranked so (no single function, or a NaN)."""
        f = self._f
        if f is None or len(head) < job.num_gpus:
            return None
        p = self._p
        cap, used, util = self._cap, self._used, self._util
        a2, a1, a0 = f.quadratic
        slope, intercept = f.line
        jm, ju, w_mem, w_util = job.gpu_mem_gb, job.gpu_util, p.w_mem, p.w_util
        ranked = []
        for _, g in head:
            x = (float(util[g]) + ju) / 100.0
            inter = (a2 * x + a1) * x + a0 if x > 1.0 else slope * x + intercept
            cost = w_mem * ((float(used[g]) + jm) / float(cap[g])) + w_util * inter
            if cost != cost:
                return None
            ranked.append((cost, g))
        ranked.sort()
        return [g for _, g in ranked[:job.num_gpus]]

    def _cheapest(self, job: Job, low: float, everywhere: bool) -> list[int]:
        f = self._f
        if f is None:
            return self._exact(job, low)
        p = self._p
        # job_share_costs' operations in place (the same IEEE results); both branches of
        # f are taken on every GPU, as there (almost every call has a GPU past 100 %)
        x = np.add(self._util, job.gpu_util, dtype=np.float64)
        x /= 100.0
        interference = weighted_interference(f, x, p.w_util)
        cost = np.add(self._used, job.gpu_mem_gb, dtype=np.float64)
        cost /= self._cap
        if p.w_mem != 1.0:
            cost *= p.w_mem
        cost += interference
        if not everywhere:
            cost[self._free < low] = np.inf
        return top_k(cost, None, job.num_gpus)

    def _exact(self, job: Job, low: float) -> list[int]:
        """``plain``'s own steps: the costs at the fitting GPUs only."""
        free = self._free
        candidates = np.flatnonzero(free >= low)
        c = self._view.cluster
        costs = job_share_costs(self._p, c.gpu_type, self._cap, self._util, free,
                                job.gpu_util, job.gpu_mem_gb, candidates)
        return top_k(costs, candidates, job.num_gpus)
