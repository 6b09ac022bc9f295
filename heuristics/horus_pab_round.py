"""The parts of a PAB round that the snapshot method (``horus_pab.pab``) and its simulator
fast form (``horus_pab_live``) share: judging the probes, the walk that places, the GPUs
of the jobs requeued in the round, a probe's record (module docstring of ``horus_pab``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dlsched.jobs import Job, JobColumns
from dlsched.state import ClusterState

from .horus import Misfits, _cheapest_gpus, _top_k, may_fit

EPS = 1e-9


def check_settings(warmup_s: float, threshold: float) -> None:
    """Refuse a negative warm-up or a threshold outside (0, 1]."""
    if warmup_s < 0 or not 0 < threshold <= 1:
        raise ValueError("warmup_s must be >= 0 and threshold in (0, 1]")


def judge(probes: dict[str, list], t: float, factor: Callable[[str], float | None],
          threshold: float) -> list[str]:
    """Close the probes whose warm-up is over at ``t`` (``probes``: job id -> [check time,
    the speeds before its placement], changed in place); the jobs to requeue, by id.
    ``factor(job id)``: a running job's rate factor (None: not running)."""
    requeue: list[str] = []
    for job_id in sorted(probes):
        check_at, before = probes[job_id]
        if check_at > t + EPS:
            continue
        del probes[job_id]
        mine = factor(job_id)
        if mine is None:
            continue  # finished during its warm-up
        if mine <= threshold * 1.0 + EPS:
            requeue.append(job_id)
            continue
        for other, was in before.items():
            f = factor(other)
            if f is not None and f <= threshold * was + EPS:
                requeue.append(job_id)
                break
    return requeue


def blocked_gpus(n_gpus: int, leaving: list[str], running: Any,
                 gpu_index: Mapping[str, int]) -> np.ndarray:
    """GPUs of the jobs being requeued this round (a snapshot still shows them held)."""
    blocked = np.zeros(n_gpus, dtype=bool)
    gpus_of = getattr(running, "gpus_of", None)
    if gpus_of is not None:  # the simulator answers per job
        for job_id in leaving:
            blocked[list(gpus_of(job_id) or ())] = True
    else:
        for r in running:
            if r.job in leaving:
                blocked[[gpu_index[g] for g in r.gpus]] = True
    return blocked


def place(state: ClusterState, jobs: Sequence[Job], columns: JobColumns,
           requeued: np.ndarray | None, serial: bool, factor: Callable[[str], float | None],
           holders_of: Callable[[], Callable[[int], list[str]]], blocked: np.ndarray | None
           ) -> tuple[list[tuple[int, list[int]]], dict[str, dict[str, float]]]:
    """OBP's bin packing (idle GPUs only for the ``requeued`` jobs, a mask over ``jobs``;
    never a ``blocked`` GPU); the placements and the probes of what it placed."""
    holders: dict[int, list[str]] = {}  # per GPU, read at the first placement that uses it
    read_holders: Callable[[int], list[str]] | None = None
    placed: list[tuple[int, list[int]]] = []
    probes: dict[str, dict[str, float]] = {}
    misfits = Misfits()  # per kind (idle GPUs only or not): a failed shape fails all round
    tried = may_fit(state, jobs, columns)
    open_gpus = 0  # what a requeued job may take
    if requeued is not None:
        free = ~state.busy if blocked is None else ~state.busy & ~blocked
        open_gpus = int(np.count_nonzero(free))
        # a placement only takes idle GPUs: a requeued job asking more than are open now
        # is skipped all round (the test below, made for all of them at once)
        tried &= ~(requeued & (columns("num_gpus") > open_gpus))
    for j in np.flatnonzero(tried).tolist():
        job = jobs[j]
        idle_only = requeued is not None and bool(requeued[j])
        if (idle_only and open_gpus < job.num_gpus) or misfits.excludes(job, idle_only):
            continue
        ok = state.gpu_fits(job)
        if (blocked is None and not idle_only and (job.num_gpus or 0) >= 1
                and not (job.cpu_per_gpu > 0 or job.ram_gb_per_gpu > 0)):
            # no CPU/RAM room to respect: when num_gpus GPUs take the share, the ones with
            # the most free memory do (what the walk below would take)
            chosen = (_top_k(-state.free_mem, None, job.num_gpus)
                      if np.count_nonzero(ok) >= job.num_gpus else None)
        else:
            if blocked is not None:
                ok &= ~blocked
            if idle_only:
                ok &= ~state.busy
            chosen = _cheapest_gpus(state, job, -state.free_mem, np.flatnonzero(ok))
        if chosen is None:
            misfits.add(job, idle_only)
            continue
        if read_holders is None:
            read_holders = holders_of()
        for g in chosen:
            if g not in holders:
                holders[g] = read_holders(g)
        others = {o for g in chosen for o in holders[g]}
        probes[job.id] = speeds_before(others, factor)
        for g in chosen:
            holders[g].append(job.id)
        if requeued is not None:
            open_gpus -= int(np.count_nonzero(~state.busy[chosen]))
        state.place(job, chosen)
        placed.append((j, chosen))
        if serial:
            break
    return placed, probes


def speeds_before(others: set[str], factor: Callable[[str], float | None]
                  ) -> dict[str, float]:
    """A probe's record: the speed of each job a placement joins (1.0: not running yet)."""
    out = {}
    for other in sorted(others):
        f = factor(other)
        out[other] = 1.0 if f is None else f
    return out
