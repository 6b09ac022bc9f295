"""Horus heuristics: Algorithm 1 (weighted-fair-queuing greedy) and the paper's baselines.

- ``greedy`` (Alg. 1): cluster the pending jobs into k queues by k-means (L1) on four
  normalized features, pick buffers of β jobs by weighted fairness until the queues are
  empty (``refill``; the first buffer only with ``refill=False``), and for each job, in
  order of waiting time within its buffer, filter the servers that pass the capacity
  check, give up when fewer than ceil(λ / GPUs per server) pass, else take the λ cheapest
  GPUs by Eq. 7 evaluated on the live state (jobs placed earlier in the call count).
- ``fifo``: jobs in queue order on idle GPUs only (no co-location), first GPUs in cluster
  order; stops at the first job that does not fit (strict FIFO) unless ``backfill=True``.
- ``obp`` (opportunistic bin packing): jobs in queue order; any GPU whose free memory takes
  the job's estimate qualifies; the λ least-loaded (most free memory) are taken.

Our readings where the paper is silent: a job is one task asking for λ GPUs (features:
tasks = 1, GPU utilization, GPUs per task = λ, GPU memory); a server passes the capacity
check when it can host at least one share of the job; the chosen λ GPUs respect each
server's remaining CPU/RAM; the buffer is ordered by waiting time, longest first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.instance import Instance
from dlsched.jobs import Job, JobColumns
from dlsched.method_support import decision_from_indices, fifo_can_start, heuristic_method
from dlsched.problems.horus import HorusParams, job_share_costs, parse_horus_params
from dlsched.registry import BOOL, MethodSpec, register_method
from dlsched.state import (
    EPS,
    ClusterState,
    StartGuard,
    ViewPolicy,
    register_start_guard,
    register_view_policy,
)

from .horus_live import (
    CheapestLive,
    Pending,
    decision_of,
    live_state,
    may_start,
    most_free,
    pack_live,
)
from .horus_live import top_k as _top_k
from .horus_queues import buffer_order, job_features, weighted_fair_pick  # noqa: F401
from .kmeans import kmeans_l1, normalize_columns


def _walk(order: np.ndarray, node_of: np.ndarray, room: np.ndarray, want: int,
          chosen: list[int]) -> bool:
    """Take GPUs of ``order`` whose server has room left until ``chosen`` holds ``want``."""
    for g in order:
        n = node_of[g]
        if room[n] >= 1:
            chosen.append(int(g))
            room[n] -= 1
            if len(chosen) == want:
                return True
    return False


def _cheapest_gpus(state: ClusterState, job: Job, cost_row: np.ndarray,
                   candidates: np.ndarray, room: np.ndarray | None = None) -> list[int] | None:
    """λ GPUs from ``candidates`` in ascending cost (ties: lower index), within each
    server's CPU/RAM room (``room``: ``state.node_room(job)`` when the caller has it; it is
    not modified)."""
    if len(candidates) < job.num_gpus:
        return None
    return _cheapest_of(state, job, cost_row[candidates], candidates, room)


def _cheapest_of(state: ClusterState, job: Job, costs: np.ndarray, candidates: np.ndarray,
                 room: np.ndarray | None = None) -> list[int] | None:
    """:func:`_cheapest_gpus` given the costs at the candidates (``costs[i]``: of
    ``candidates[i]``; ascending GPU indices)."""
    if len(candidates) < job.num_gpus:
        return None
    node_of = state.cluster.gpu_node
    room = state.node_room(job) if room is None else room
    if job.num_gpus == 1:  # the walk takes the cheapest candidate on a server with room
        ok = room[node_of[candidates]] >= 1
        return _top_k(costs[ok], candidates[ok], 1) if ok.any() else None
    room = room.copy()
    chosen: list[int] = []
    done = 0
    head = 4 * job.num_gpus + 16
    if len(candidates) > 2 * head:
        # The walk usually ends within the first few GPUs: sort only those with a cost up
        # to the head-th smallest (all of them: they open the full order), then the rest.
        cut = np.partition(costs, head - 1)[head - 1]
        first = np.flatnonzero(costs <= cut)
        first = first[np.lexsort((candidates[first], costs[first]))]
        if _walk(candidates[first], node_of, room, job.num_gpus, chosen):
            return chosen
        done = len(first)
        if done == len(candidates):
            return None
    order = candidates[np.lexsort((candidates, costs))]
    if _walk(order[done:], node_of, room, job.num_gpus, chosen):
        return chosen
    return None


_PLAN: tuple = (None, None)  # the last queue's columns and what _plan made of them


def _plan(columns: JobColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Per job (``columns``' order): GPU memory per share minus EPS, GPU count, whether it
    has CPU or RAM shares, and whether any job has. Kept for the last columns seen: the
    simulator hands the same columns object until its queue changes, and a greedy call
    and its start guard read them in turn."""
    global _PLAN
    last = _PLAN  # read once: another thread may replace it
    if last[0] is columns:
        return last[1]
    shares = (columns("cpu_per_gpu", 0.0) > 0) | (columns("ram_gb_per_gpu", 0.0) > 0)
    plan = (columns("gpu_mem_gb", 0.0) - EPS, columns("num_gpus"), shares, bool(shares.any()))
    _PLAN = (columns, plan)
    return plan


def pack_in_order(state: ClusterState, jobs: Sequence[Job], columns: JobColumns,
                  order: np.ndarray | None, plain: Callable[[Job], list[int]],
                  shared: Callable[[Job], list[int] | None]) -> list[tuple[int, list[int]]]:
    """Try ``jobs[order]`` (``order`` None: ``jobs``) one by one on ``state`` and place
    those that get GPUs.

    A job without CPU or RAM shares gets its GPUs exactly when ``num_gpus`` GPUs have the
    free memory for its share (the test of :func:`may_fit`, on the live state): only such
    jobs are tried, the next one found among all the jobs left in one numpy step after
    each placement (nothing changes in between), and ``plain(job)`` returns its GPUs. A
    job with shares is tried by ``shared(job)`` (None: no GPUs), unless :class:`Misfits`
    rules it out. ``columns`` are those of ``jobs``. Returns ``(job index, GPU indices)``
    in placement order.
    """
    mem, need, shares, any_shares = _plan(columns)
    if order is not None:
        mem, need, shares = mem[order], need[order], shares[order]
    placed: list[tuple[int, list[int]]] = []
    misfits = Misfits()
    pos, n_jobs, n_gpus = 0, len(mem), len(state.free_mem)
    all_shares = any_shares and bool(shares.all())
    while pos < n_jobs:
        if all_shares:  # no job for the memory test: each is tried
            ok = np.ones(n_jobs - pos, dtype=bool)
        else:
            free = np.sort(state.free_mem)
            ok = n_gpus - free.searchsorted(mem[pos:]) >= need[pos:]
            if any_shares:
                ok |= shares[pos:]
        while True:  # the first job of ok that gets GPUs
            h = int(ok.argmax())
            if not ok[h]:
                return placed
            i = pos + h
            j = i if order is None else int(order[i])
            job = jobs[j]
            if any_shares and shares[i]:
                chosen = None if misfits.excludes(job) else shared(job)
                if chosen is None:
                    misfits.add(job)
                    ok[h] = False
                    continue
            elif job.num_gpus < 1:  # no GPUs asked: never placed (as _cheapest_gpus)
                ok[h] = False
                continue
            else:
                chosen = plain(job)
            break
        state.place(job, chosen)
        placed.append((j, chosen))
        pos = i + 1
    return placed


def greedy(instance: Instance, *, seed: int = 0, queues: int | None = None,
           beta: int | None = None, refill: bool = True) -> Decision:
    """Algorithm 1 of the Horus paper for one call: every buffer of β jobs until the
    queues are empty (``refill``, the paper's loop) or the first buffer only."""
    if not instance.jobs:
        return Decision()
    placed = greedy_round(ClusterState.of(instance), instance.jobs, instance.job_columns,
                          instance.time, parse_horus_params(instance.params), seed=seed,
                          queues=queues, beta=beta, refill=refill)
    return decision_from_indices(instance, placed)


def greedy_round(state: ClusterState, jobs: Sequence[Job], columns: JobColumns, time: float,
                 p: HorusParams, *, seed: int = 0, queues: int | None = None,
                 beta: int | None = None, refill: bool = True) -> list[tuple[int, list[int]]]:
    """:func:`greedy` on ``state`` (changed: the placements are made on it) for the pending
    ``jobs`` (``columns``: theirs) at ``time``; ``(job index, GPU indices)`` placed."""
    k = queues or p.queues
    beta = beta or p.beta or len(jobs)
    waits = np.maximum(0.0, time - columns("submit_time"))
    if beta >= len(jobs) or (refill and k == 1):
        # every job is picked whatever the queues (with one queue, the buffers are
        # consecutive slices of it), so the clustering cannot change the call: longest
        # waiting first (ties: queue order), as below
        picked = np.argsort(-waits, kind="stable")
    else:
        labels = kmeans_l1(normalize_columns(job_features(jobs)), k, seed)
        queue_lists = [np.flatnonzero(labels == q).tolist() for q in range(labels.max() + 1)]
        picked = np.array(buffer_order(queue_lists, waits, beta, refill), dtype=np.int64)
    plain, shared = _greedy_pickers(state, p)
    # jobs that cannot find GPUs are not tried (they change nothing; the Eq. 7 rows of
    # the others do not depend on them)
    return pack_in_order(state, jobs, columns, picked, plain, shared)


def _greedy_pickers(state: ClusterState, p: HorusParams
                    ) -> tuple[Callable[[Job], list[int]], Callable[[Job], list[int] | None]]:
    """Greedy's choice of GPUs on ``state`` for a job without and with CPU/RAM shares
    (``pack_in_order``'s ``plain`` and ``shared``)."""
    cluster = state.cluster
    per_node = int(cluster.node_gpu_count.max())
    cap = cluster.gpu_mem_gb

    def costs_at(job: Job, candidates: np.ndarray) -> np.ndarray:
        # Eq. 7 of a job on its candidate GPUs, on the live state of the round, when the
        # job is tried (the formula is elementwise: the same numbers as a table updated
        # after each placement)
        return job_share_costs(p, cluster.gpu_type, cap, state.util, state.free_mem,
                               job.gpu_util, job.gpu_mem_gb, candidates)

    def plain(job: Job) -> list[int]:
        candidates = np.flatnonzero(state.gpu_fits(job))
        return _top_k(costs_at(job, candidates), candidates, job.num_gpus)

    def shared(job: Job) -> list[int] | None:
        room = state.node_room(job)
        # the GPUs whose share fits, on servers with room for one share; the job waits
        # when they span fewer than ceil(λ / GPUs per server) servers
        candidates = np.flatnonzero(state.gpu_fits(job) & (room >= 1)[cluster.gpu_node])
        want = math.ceil(job.num_gpus / per_node)
        if len(candidates) == 0 or (
                want > 1 and len(np.unique(cluster.gpu_node[candidates])) < want):
            return None
        if job.num_gpus == 1:  # every candidate's server has room for it: the cheapest
            return _top_k(costs_at(job, candidates), candidates, 1)
        return _cheapest_of(state, job, costs_at(job, candidates), candidates, room)

    return plain, shared


def fifo(instance: Instance, *, backfill: bool = False) -> Decision:
    """Exclusive GPUs, jobs in queue order, first idle GPUs in cluster order."""
    state = ClusterState.of(instance)
    placed = []
    for j, job in enumerate(instance.jobs):
        candidates = np.flatnonzero(state.gpu_fits(job) & ~state.busy)
        chosen = _cheapest_gpus(state, job, np.zeros(len(state.busy)), candidates)
        if chosen is None:
            if backfill:
                continue
            break
        state.place(job, chosen)
        placed.append((j, chosen))
    return decision_from_indices(instance, placed)


def may_fit(state: ClusterState, jobs: Sequence[Job], columns: JobColumns | None = None
            ) -> np.ndarray:
    """Per job, a necessary condition for finding its GPUs in this round: a job without
    CPU or RAM shares needs ``num_gpus`` GPUs whose free memory takes its share (as
    :meth:`ClusterState.gpu_fits`); a placement only takes memory, so a job that fails this
    at the round's start fails it all round. Jobs with CPU or RAM shares always pass.
    ``columns``: those of ``jobs`` when the caller has them (a snapshot's are ready)."""
    if not jobs:
        return np.zeros(0, dtype=bool)
    return _may_fit(state.free_mem, JobColumns(jobs) if columns is None else columns)


def _may_fit(free_mem: np.ndarray, columns: JobColumns) -> np.ndarray:
    """:func:`may_fit` on the GPUs' free memory and the jobs' columns."""
    mem, need, shares, any_shares = _plan(columns)
    free = np.sort(free_mem)
    # GPUs with free memory >= mem - EPS, the test of gpu_fits
    ok = len(free) - free.searchsorted(mem) >= need
    return ok | shares if any_shares else ok


class Misfits:
    """Job shapes that found no GPUs in this round.

    A placement only takes memory, CPU and RAM, so a job that asks at least as much GPU
    memory and as many GPUs as one that failed, with the same CPU and RAM per GPU (and the
    same ``kind``, e.g. idle GPUs only), cannot fit later in the round either
    (:func:`_cheapest_gpus` fails exactly when the servers' room over the GPUs with enough
    memory is under the GPU count).
    """

    def __init__(self) -> None:
        # per (CPU, RAM per GPU, kind): the minimal failed (GPU memory, GPU count) pairs
        self._least: dict[tuple, list[tuple[float, int]]] = {}

    def excludes(self, job: Job, kind: object = None) -> bool:
        """Whether ``job`` asks at least as much as a failed shape of its kind."""
        least = self._least.get((job.cpu_per_gpu, job.ram_gb_per_gpu, kind))
        if not least:
            return False
        mem, n = job.gpu_mem_gb or 0.0, job.num_gpus
        return any(m <= mem and k <= n for m, k in least)

    def add(self, job: Job, kind: object = None) -> None:
        """Record that ``job`` found no GPUs."""
        key = (job.cpu_per_gpu, job.ram_gb_per_gpu, kind)
        mem, n = job.gpu_mem_gb or 0.0, job.num_gpus
        least = [(m, k) for m, k in self._least.get(key, ()) if not (mem <= m and n <= k)]
        least.append((mem, n))
        self._least[key] = least


def obp(instance: Instance) -> Decision:
    """Opportunistic bin packing: any GPU with enough free memory, least loaded first."""
    if not instance.jobs:
        return Decision()
    placed = obp_round(ClusterState.of(instance), instance.jobs, instance.job_columns)
    return decision_from_indices(instance, placed)


def obp_round(state: ClusterState, jobs: Sequence[Job], columns: JobColumns
              ) -> list[tuple[int, list[int]]]:
    """:func:`obp` on ``state`` (changed) for the pending ``jobs`` (``columns``: theirs)."""

    def plain(job: Job) -> list[int]:
        # every GPU among the λ with the most free memory takes the job (pack_in_order
        # tries a job without shares only when λ GPUs do)
        return _top_k(-state.free_mem, None, job.num_gpus)

    def shared(job: Job) -> list[int] | None:
        candidates = np.flatnonzero(state.gpu_fits(job))
        return _cheapest_gpus(state, job, -state.free_mem, candidates)

    return pack_in_order(state, jobs, columns, None, plain, shared)


for _name, _fn, _kind, _allowed, _summary in (
    ("greedy", greedy, "heuristic", ("queues", "beta", "refill"),
     "Alg. 1: k-means queues, weighted-fair picking, top-λ cheapest GPUs"),
    ("fifo", fifo, "baseline", ("backfill",), "exclusive idle GPUs in queue order"),
    ("obp", obp, "baseline", (), "opportunistic bin packing by free GPU memory"),
):
    register_method(MethodSpec("horus", _name, _kind, heuristic_method(
        _fn, _allowed, {"queues": ("int", 1, 1000), "beta": ("int", 1, 1_000_000),
                        "backfill": BOOL, "refill": BOOL}, ("queues", "beta")),
        summary=_summary))


# ---------------------------------------------------------------------- simulator fast form
def fifo_live(view, *, backfill: bool = False) -> Decision:
    """``fifo`` on the simulator's live view (the same decision as on a snapshot).

    Walks the servers with idle GPUs in index order and takes the first idle GPUs whose
    free memory holds the job, within each server's CPU/RAM room (as :func:`fifo`).
    """

    big = int(np.iinfo(np.int64).max)
    used: set[int] = set()
    free_node: dict[int, list[float]] = {}
    placed: list[tuple[Job, list[int]]] = []
    idle_left = view.idle_count
    node_of = view.cluster.gpu_node
    mem_free = view.gpu_mem_free
    for job in view.queue():
        need = job.num_gpus
        chosen: list[int] = []
        if need <= idle_left:
            low = (job.gpu_mem_gb or 0.0) - 1e-9
            cpu, ram = job.cpu_per_gpu, job.ram_gb_per_gpu
            for s in view.open_servers():
                room = big
                if cpu > 0 or ram > 0:
                    free = free_node.get(s) or list(view.node_free(s))
                    for have, per in ((free[0], cpu), (free[1], ram)):
                        if per > 0:
                            room = min(room, int(math.floor((have + 1e-9) / per)))
                    if room < 1:
                        continue
                for g in view.idle_gpus(s):
                    if g in used or mem_free(g) < low:
                        continue
                    chosen.append(g)
                    room -= 1
                    if len(chosen) == need or room < 1:
                        break
                if len(chosen) == need:
                    break
        if len(chosen) < need or not chosen:
            if backfill:
                continue
            break
        for g in chosen:
            used.add(g)
            if job.cpu_per_gpu or job.ram_gb_per_gpu:
                s = int(node_of[g])
                free = free_node.setdefault(s, list(view.node_free(s)))
                free[0] -= job.cpu_per_gpu
                free[1] -= job.ram_gb_per_gpu
        idle_left -= len(chosen)
        placed.append((job, chosen))
    ids = view.cluster.gpu_ids
    return Decision.of(Placement(job.id, tuple(ids[g] for g in sorted(gpus)))
                       for job, gpus in placed)


register_view_policy(ViewPolicy("horus", "fifo", fifo_live, fifo_can_start,
                                frozenset({"backfill"})))
for _name in ("greedy", "obp"):
    register_start_guard(StartGuard("horus", _name, may_start))


# ------------------------------------------------- simulator fast forms of greedy and OBP
# The snapshot methods' rounds on the live view: ``horus_live.pack_live`` walks the queue
# on the view's free-memory order and pending groups (the same jobs as pack_in_order tries,
# in the same order), and each placement is the method's own choice on the same numbers:
# OBP the GPUs with the most free memory, greedy its picker on the loads read off the view
# (SimView.loads, what a snapshot is seeded with). With a pending job with CPU or RAM
# shares, the rounds themselves run on those loads. greedy's form takes workloads without
# β (params.beta unset) and no beta option: its rounds never cluster, so the solve's seed
# cannot matter, and they try the jobs longest waiting first, the queue order when the
# queue is in arrival order (else the round runs on the loads); with β the simulator calls
# the snapshot method. tests/test_sim_fastpath.py compares both modes.
def obp_live(view: Any) -> Decision:
    """``obp`` on the live view."""
    placed = pack_live(view, most_free)
    if placed is None:
        state, jobs = live_state(view)
        return decision_of(view, jobs, obp_round(state, jobs, view.queue_columns()))
    return decision_of(view, Pending(view.queue_records(), view.workload_jobs), placed)


def greedy_live(view: Any, *, queues: int | None = None, refill: bool = True) -> Decision:
    """``greedy`` on the live view (β unset: one buffer of the whole queue)."""
    p = parse_horus_params(view.params)
    if view.queue_in_arrival_order:
        placed = pack_live(view, CheapestLive(view, p).take)
        if placed is not None:
            return decision_of(view, Pending(view.queue_records(), view.workload_jobs),
                               placed)
    state, jobs = live_state(view)
    placed = greedy_round(state, jobs, view.queue_columns(), view.time, p,
                          queues=queues, refill=refill)
    return decision_of(view, jobs, placed)


def _without_beta(workload: Instance) -> bool:
    return parse_horus_params(workload.params).beta is None


register_view_policy(ViewPolicy("horus", "obp", obp_live, may_start))
register_view_policy(ViewPolicy("horus", "greedy", greedy_live, may_start,
                                frozenset({"queues", "refill"}), applies=_without_beta))
