"""PAB's fast form for the simulator: the round of :func:`~.horus_pab.pab` on the live view.

It reads what the snapshot method reads, off the simulator's live view instead of a rebuilt
snapshot (``dlsched.state.ViewPolicy``): the loads (``SimView.loads``, the arrays a
snapshot is seeded with), the pending jobs in queue order and their columns, and the
running jobs' rate factors and GPUs (``SimView.running``). Its state (the open probes, the
requeued jobs that wait) is kept in place between calls, and it returns the simulator's
requeue hook (``requeue``, ``watch_at``) as the snapshot method does, so the simulator
calls it exactly when it would call the method and gets the same decisions
(``tests/test_pab_live.py`` compares the two, call by call and whole runs).

The default round (``serial``: at most one placement) on a queue without CPU or RAM
shares is made in a few numpy steps: the first job in queue order whose share fits the
free memory of ``num_gpus`` usable GPUs (idle GPUs only for a requeued job; never the GPUs
of a job requeued in this round) is the one the snapshot's walk places, on the usable GPUs
with the most free memory (ties: lower index). Other rounds run the snapshot's walk
(:func:`~.horus_pab.place`) on the same loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.jobs import Job
from dlsched.state import ClusterState, ViewPolicy, register_view_policy

from .horus import _plan, _top_k
from .horus_pab import blocked_gpus, check_settings, judge, place, speeds_before


class _Memory:
    """What the fast form keeps between calls: the open probes (as the snapshot method's
    ``policy_state``) and the requeued jobs that wait, as ids and as a mask over the
    workload's records (``flags``)."""

    __slots__ = ("probes", "requeued", "flags", "record_of")

    def __init__(self, n_jobs: int) -> None:
        self.probes: dict[str, list] = {}
        self.requeued: set[str] = set()
        self.flags = np.zeros(n_jobs, dtype=bool)
        self.record_of: dict[str, int] = {}  # job id -> record, filled at the first requeue


class _Pending(Sequence[Job]):
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


def pab_live(view: Any, *, warmup_s: float = 60.0, threshold: float = 0.5,
             serial: bool = True, policy_state: _Memory | None = None
             ) -> tuple[Decision, _Memory, dict[str, Any]]:
    """``pab`` on the live view: ``(decision, state for the next call, extra)`` with
    ``extra`` the requeue hook (``requeue``, ``watch_at``); module docstring."""
    check_settings(warmup_s, threshold)
    memory = _Memory(len(view.workload_jobs)) if policy_state is None else policy_state
    running = view.running()
    t = view.time
    requeue = judge(memory.probes, t, running.rate_factor, threshold)
    if requeue:
        if not memory.record_of:
            memory.record_of = {job.id: r for r, job in enumerate(view.workload_jobs)}
        memory.requeued.update(requeue)
        memory.flags[[memory.record_of[job_id] for job_id in requeue]] = True
    decision = Decision()
    if not (serial and memory.probes):
        records = view.queue_records()
        jobs = _Pending(records, view.workload_jobs)
        placed, opened = _round(view, jobs, records, memory, requeue, serial, running)
        for job_id, before in opened.items():
            memory.probes[job_id] = [t + warmup_s, before]
        if placed:
            ids = view.cluster.gpu_ids  # GPU ids in ascending index order, as a snapshot's
            decision = Decision.of(Placement(jobs[j].id, tuple(ids[g] for g in sorted(gpus)))
                                   for j, gpus in placed)
            memory.requeued.difference_update(p.job for p in decision.placements)
            memory.flags[records[[j for j, _ in placed]]] = False
    extra: dict[str, Any] = {"requeue": requeue}
    if memory.probes:
        extra["watch_at"] = min(p[0] for p in memory.probes.values())
    return decision, memory, extra


def _round(view: Any, jobs: _Pending, records: np.ndarray, memory: _Memory,
           requeue: list[str], serial: bool, running: Any
           ) -> tuple[list[tuple[int, list[int]]], dict[str, dict[str, float]]]:
    """The placements of one round and the probes they open (``pab``'s ``place``)."""
    if not len(records):
        return [], {}
    columns = view.queue_columns()
    waiting = memory.flags[records] if memory.requeued else None
    c = view.cluster
    blocked = blocked_gpus(c.num_gpus, requeue, running, {}) if requeue else None
    a = view.loads()
    busy = a["gpu_busy"]
    free = c.gpu_mem_gb - a["gpu_usage"][1]
    mem, need, _, shares = _plan(columns)
    if not serial or shares:
        util = a["gpu_usage"][0]
        cpu, ram = a["node_usage"]
        state = ClusterState(cluster=c, free_mem=free, util=util, free_cpu=c.node_cpu - cpu,
                             free_ram=c.node_ram_gb - ram, busy=busy)

        def holders() -> Any:
            return lambda g: list(running.jobs_on(g))

        return place(state, jobs, columns, waiting, serial, running.rate_factor, holders,
                     blocked)
    found = _first_fit(free, busy, mem, need, waiting, blocked)
    if found is None:
        return [], {}
    j, chosen = found
    others = {o for g in chosen for o in running.jobs_on(g)}
    return [found], {jobs[j].id: speeds_before(others, running.rate_factor)}


def _first_fit(free: np.ndarray, busy: np.ndarray, mem: np.ndarray, need: np.ndarray,
               waiting: np.ndarray | None, blocked: np.ndarray | None
               ) -> tuple[int, list[int]] | None:
    """The serial round without CPU or RAM shares: ``(queue position, GPU indices)`` of
    the first job that finds GPUs, or None.

    ``free``: free memory per GPU; ``mem``: each job's share minus EPS, ``need``: its GPU
    count (``horus._plan``); ``waiting``: the requeued jobs (idle GPUs only);
    ``blocked``: GPUs nobody may take. Without server room to respect, the walk finds GPUs
    for a job exactly when ``need`` usable GPUs have ``free >= mem``, and takes the usable
    ones with the most free memory (ties: lower index).
    """
    usable = free if blocked is None else free[~blocked]
    top = np.sort(usable)
    ok = len(top) - top.searchsorted(mem) >= need
    idle = None
    if waiting is not None:
        idle = ~busy if blocked is None else ~busy & ~blocked
        top = np.sort(free[idle])
        ok = np.where(waiting, len(top) - top.searchsorted(mem) >= need, ok)
    ok &= need >= 1  # a job asking no GPUs is never placed (as the walk)
    j = int(ok.argmax())
    if not ok[j]:
        return None
    k = int(need[j])
    if blocked is None and (idle is None or not waiting[j]):
        return j, _top_k(-free, None, k)
    fits = free >= mem[j]
    fits &= idle if idle is not None and waiting[j] else ~blocked
    candidates = np.flatnonzero(fits)
    return j, _top_k(-free[candidates], candidates, k)


def _always(view: Any, **options: Any) -> bool:
    """PAB's start guard: none (a call with nothing to place may judge a probe)."""
    return True


register_view_policy(ViewPolicy("horus", "pab", pab_live, _always,
                                frozenset({"warmup_s", "threshold", "serial"}),
                                stateful=True, hooks=True))
