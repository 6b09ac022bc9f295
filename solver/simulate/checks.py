"""Independent checks of the simulator: each decision against the live state, and the
whole schedule from the records once a run ends.

:func:`check_live` is the fast form of ``dlsched.validate.validate`` for one decision: the
same generic rules (placed jobs are pending, once each; GPU and server ids exist; exact
demands; per-GPU memory and per-server CPU/RAM including running jobs; exclusive GPUs),
evaluated only on the GPUs and servers the decision touches, against the loads the engine
keeps. The problem's own rules (``Problem.check_decision``) run on the instance the policy
saw. It shares no code with the policies.

:func:`check_schedule` re-derives, from the per-job records alone, that every job ran
exactly once, started no earlier than it arrived and ended after it started, and that no
GPU or server was ever over its capacity (exclusive GPUs: one job at a time).
A job a policy requeued (``JobRecord.attempts``) held its GPUs, memory, CPU and RAM
during each earlier attempt too; those intervals are checked with the final run.

:func:`check_requeue` checks a policy's request to move running jobs back to the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..decision import Decision
from ..instance import Instance
from ..jobs import Job
from ..problems import Problem, Violation
from ..topology import Cluster
from ..validate import TOL, _container_loads
from .live import LiveState


def check_live(live: LiveState, decision: Decision, is_pending: Callable[[str], bool],
               job_of: Mapping[str, Job], problem: Problem,
               problem_instance: Callable[[], Instance]) -> list[Violation]:
    """Violations of ``decision`` against the live loads (empty when it is valid).

    ``is_pending(job_id)``: whether the policy was shown that job; ``problem_instance()``
    builds the instance the problem's own rules are checked on.
    """
    cluster = live.cluster
    gpu_index, node_of = cluster.gpu_index, live.gpu_node
    out: list[Violation] = []
    # loads the decision adds, built only when a placed job has one (most add none)
    add_mem: dict[int, float] | None = None
    add_cpu: dict[int, float] | None = None
    add_ram: dict[int, float] | None = None
    placed: list[tuple[str, set[int]]] = []  # (job, its distinct GPUs) past the structure checks
    seen: set[str] = set()
    ok_structure = True
    single = len(decision.placements) == 1
    for p in decision.placements:
        job_id, ids = p.job, p.gpus
        if not is_pending(job_id):
            out.append(Violation("unknown_job", job_id, "not a pending job of this instance"))
            ok_structure = False
            continue
        if job_id in seen:
            out.append(Violation("duplicate", job_id, "placed more than once"))
            ok_structure = False
            continue
        seen.add(job_id)
        job = job_of[job_id]
        gpus = list(map(gpu_index.get, ids))
        if None in gpus:
            unknown = [g for g in ids if g not in gpu_index]
            out.append(Violation("unknown_gpu", job_id, f"unknown GPU ids {unknown}"))
            ok_structure = False
            continue
        distinct = set(gpus)
        if len(distinct) != len(ids):
            out.append(Violation("demand", job_id, "a GPU is listed twice"))
        if job.containers:
            loads = _container_loads(SimpleNamespace(cluster=cluster), job, p, out)
            if loads is None:
                ok_structure = False
                continue
            if add_mem is None:
                add_mem, add_cpu, add_ram = {}, {}, {}
            for n, (c_cpu, c_ram) in loads[1].items():
                add_cpu[n] = add_cpu.get(n, 0.0) + c_cpu
                add_ram[n] = add_ram.get(n, 0.0) + c_ram
            for g, m in loads[0].items():
                add_mem[g] = add_mem.get(g, 0.0) + m
        else:
            if job.num_gpus is not None and len(ids) != job.num_gpus:
                out.append(Violation("demand", job_id,
                                     f"gets {len(ids)} GPUs, needs {job.num_gpus}"))
            if not ids:
                out.append(Violation("demand", job_id, "placed on no GPU"))
            m = job.gpu_mem_gb
            cpu, ram = job.cpu_per_gpu, job.ram_gb_per_gpu
            if m and single and not (cpu or ram) and len(distinct) == len(gpus):
                # the decision's one job, on distinct GPUs: each gets exactly m (the
                # summed load 0.0 + m), checked here as _over_loads would
                used, cap = live.mem, live.mem_cap
                for g in gpus:
                    if used[g] + m > cap[g] + TOL:
                        out.append(Violation("gpu_memory", job_id,
                                             f"GPU {cluster.gpu_ids[g]} holds "
                                             f"{used[g] + m:g} GB of {cap[g]:g} GB"))
            elif m or cpu or ram:  # a zero load cannot exceed a capacity
                if add_mem is None:
                    add_mem, add_cpu, add_ram = {}, {}, {}
                if m:
                    for g in gpus:
                        add_mem[g] = add_mem.get(g, 0.0) + m
                if cpu or ram:
                    for g in gpus:
                        n = node_of[g]
                        add_cpu[n] = add_cpu.get(n, 0.0) + cpu
                        add_ram[n] = add_ram.get(n, 0.0) + ram
        placed.append((job_id, distinct))
    if add_mem is not None:
        out.extend(_over_loads(live, placed, add_mem, add_cpu, add_ram))
    if problem.exclusive_gpus and (len(placed) != 1
                                   or any(map(live.jobs_on.__getitem__, placed[0][1]))):
        # (one placement on idle GPUs shares none: _shared would find nothing)
        out.extend(_shared(placed, live.jobs_on, cluster.gpu_ids))
    if ok_structure and type(problem).check_decision is not Problem.check_decision:
        # (the base rule set is empty: no instance built for it)
        out.extend(problem.check_decision(problem_instance(), decision))
    return out


def _over_loads(live: LiveState, placed: list[tuple[str, set[int]]],
                add_mem: dict[int, float], add_cpu: dict[int, float],
                add_ram: dict[int, float]) -> list[Violation]:
    """``gpu_memory``, ``node_cpu`` and ``node_ram`` violations of the added loads."""
    cluster = live.cluster
    out: list[Violation] = []
    for g, m in add_mem.items():
        if live.mem[g] + m > live.mem_cap[g] + TOL:
            holder = next((j for j, gs in placed if g in gs), None)
            out.append(Violation("gpu_memory", holder,
                                 f"GPU {cluster.gpu_ids[g]} holds {live.mem[g] + m:g} GB of "
                                 f"{live.mem_cap[g]:g} GB"))
    for add, used, cap, kind in ((add_cpu, live.node_cpu, live.cpu_cap, "node_cpu"),
                                 (add_ram, live.node_ram, live.ram_cap, "node_ram")):
        for n, a in add.items():
            if used[n] + a > cap[n] + TOL:
                out.append(Violation(kind, None, f"node {cluster.node_ids[n]} uses "
                                                 f"{used[n] + a:g} of {cap[n]:g}"))
    return out


def _shared(placed: list[tuple[str, set[int]]], jobs_on: list[int], gpu_ids: Any
            ) -> list[Violation]:
    """``exclusive`` violations: a GPU that two placements list, or that a running job
    holds; per GPU in the order the placements first list it, named by its first job."""
    claimed: set[int] = set()
    for _, gpus in placed:  # set operations: no Python step per GPU when all is well
        if not claimed.isdisjoint(gpus) or any(map(jobs_on.__getitem__, gpus)):
            break
        claimed |= gpus
    else:
        return []
    holders: dict[int, list[str]] = {}
    for job_id, gpus in placed:
        for g in gpus:
            holders.setdefault(g, []).append(job_id)
    return [Violation("exclusive", jobs[0], f"GPU {gpu_ids[g]} is shared")
            for g, jobs in holders.items() if len(jobs) > 1 or jobs_on[g] > 0]


def check_requeue(job_ids: tuple[str, ...], by_id: Mapping[str, int],
                  running: Mapping[int, Any], records: list[Any],
                  placed: set[str]) -> list[str]:
    """Problems of requeueing ``job_ids`` now (empty when every one may be requeued).

    Each must be a known job, running now, listed once, a plain GPU job (container jobs
    cannot be requeued), and not placed again in the same decision.
    """
    out: list[str] = []
    seen: set[str] = set()
    for job_id in job_ids:
        if job_id in seen:
            out.append(f"job {job_id!r} requeued twice")
            continue
        seen.add(job_id)
        idx = by_id.get(job_id)
        if idx is None:
            out.append(f"job {job_id!r} does not exist")
        elif idx not in running:
            out.append(f"job {job_id!r} is not running")
        elif records[idx].job.containers:
            out.append(f"job {job_id!r} has containers (only plain GPU jobs can be requeued)")
        elif job_id in placed:
            out.append(f"job {job_id!r} is requeued and placed in the same decision")
    return out


def _over_capacity(key: np.ndarray, start: np.ndarray, end: np.ndarray,
                   loads: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """Per (load, cap) of ``loads``: the keys whose summed load over overlapping
    [start, end) intervals exceeds ``cap``.

    A sweep per key: +load at start, -load at end, ends before starts at equal times; one
    order of the events serves every load. A load that is zero everywhere is over only
    where a capacity is below zero (no sweep).
    """
    if len(key) == 0:
        return [np.zeros(0, dtype=np.int64) for _ in loads]
    n = len(key)
    k = np.concatenate([key, key])
    # events by key, then time, then ends (listed first) before starts, then job: two
    # stable sorts, the one on the key a radix sort on small integers
    order = np.argsort(np.concatenate([end, start]), kind="stable")
    small = k.astype(np.int32 if k.max() >= 2**15 else np.int16)
    order = order[np.argsort(small[order], kind="stable")]
    del small
    k = k[order]
    first = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    seg = np.diff(np.r_[first, 2 * n])
    out = []
    for load, cap in loads:
        if not load.any():
            neg = np.flatnonzero(cap + TOL < 0)
            out.append(neg[np.isin(neg, key)])
            continue
        total = np.cumsum(np.concatenate([-load, load])[order])
        # cumulative sum before each key's first event, over that key's events
        before = np.repeat(np.r_[0.0, total][first], seg)
        total -= before
        del before
        out.append(np.unique(k[total > cap[k] + TOL]))
    return out


def _held_twice(keys: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Indices of the segments (``lens[j]`` keys each, in turn) listing a key twice."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    low = int(keys.min())
    pair = np.repeat(np.arange(len(lens)), lens) * (int(keys.max()) - low + 1) + (keys - low)
    pair.sort()
    return np.unique(pair[1:][pair[1:] == pair[:-1]] // (int(keys.max()) - low + 1))


def check_schedule(records: list[Any], cluster: Cluster, exclusive: bool) -> list[str]:
    """Problems found in a finished run's records (empty when the schedule is sound).

    Every job started once (a GPU list, a start, an end), start ≥ submit, end ≥ start; per
    GPU, jobs never overlap on an exclusive GPU and their memory never exceeds the GPU's;
    per server, CPU and RAM never exceed it.
    """
    out: list[str] = []
    ran = []
    for rec in records:
        if rec.start is None or rec.end is None or rec.gpus is None:
            out.append(f"job {rec.job.id}: never ran to completion")
        else:
            ran.append(rec)
    submit = np.array([r.job.submit_time for r in ran], dtype=float)
    start = np.array([r.start for r in ran], dtype=float)
    end = np.array([r.end for r in ran], dtype=float)
    for i in np.flatnonzero(start < submit - 1e-9):
        out.append(f"job {ran[i].job.id}: starts at {start[i]} before its arrival {submit[i]}")
    for i in np.flatnonzero(end < start):
        out.append(f"job {ran[i].job.id}: ends at {end[i]} before its start {start[i]}")
    # earlier attempts of requeued jobs: in order, after the arrival, before the final run;
    # they are checked for capacity below as extra (pseudo-job) entries
    tried = []
    for i, r in [(i, r) for i, r in enumerate(ran) if getattr(r, "attempts", ())]:
        last = r.job.submit_time - 1e-9
        for a_start, a_end, a_gpus in r.attempts:
            if a_start < last or a_end < a_start:
                out.append(f"job {r.job.id}: attempt [{a_start}, {a_end}] out of order")
            last = a_end
            tried.append((i, a_start, a_end, np.asarray(a_gpus, dtype=np.int64)))
        if start[i] < last - 1e-9:
            out.append(f"job {r.job.id}: final run starts before its last attempt ended")
    # per-GPU entries: (gpu, start, end, memory); per-server entries: (server, ..., cpu, ram)
    g_key, g_s, g_e, g_mem = [], [], [], []
    n_key, n_s, n_e, n_cpu, n_ram = [], [], [], [], []
    plain = [i for i, r in enumerate(ran) if not r.job.containers]
    if plain:
        lens = np.array([len(ran[i].gpus) for i in plain])
        keys = np.concatenate([ran[i].gpus for i in plain]).astype(np.int64, copy=False)
        for j in _held_twice(keys, lens):
            out.append(f"job {ran[plain[j]].job.id}: a GPU is held twice")
        s_rep, e_rep = np.repeat(start[plain], lens), np.repeat(end[plain], lens)
        g_key.append(keys)
        g_s.append(s_rep)
        g_e.append(e_rep)
        g_mem.append(np.repeat([ran[i].job.gpu_mem_gb or 0.0 for i in plain], lens))
        cpu = np.repeat([ran[i].job.cpu_per_gpu for i in plain], lens)
        ram = np.repeat([ran[i].job.ram_gb_per_gpu for i in plain], lens)
        if tried:  # the attempts as further entries, in turn (one concatenation)
            t_lens = np.array([len(a_gpus) for _, _, _, a_gpus in tried])
            t_jobs = [ran[i].job for i, _, _, _ in tried]
            t_keys = np.concatenate([a_gpus for _, _, _, a_gpus in tried])
            t_s = np.repeat(np.array([a_start for _, a_start, _, _ in tried], dtype=float),
                            t_lens)
            t_e = np.repeat(np.array([a_end for _, _, a_end, _ in tried], dtype=float),
                            t_lens)
            keys = np.concatenate([keys, t_keys])
            s_rep = np.concatenate([s_rep, t_s])
            e_rep = np.concatenate([e_rep, t_e])
            g_key.append(t_keys)
            g_s.append(t_s)
            g_e.append(t_e)
            g_mem.append(np.repeat([job.gpu_mem_gb or 0.0 for job in t_jobs], t_lens))
            cpu = np.concatenate([cpu, np.repeat([job.cpu_per_gpu for job in t_jobs], t_lens)])
            ram = np.concatenate([ram, np.repeat([job.ram_gb_per_gpu for job in t_jobs],
                                                 t_lens)])
        if cpu.any() or ram.any():
            n_key.append(cluster.gpu_node[keys])
            n_s.append(s_rep)
            n_e.append(e_rep)
            n_cpu.append(cpu)
            n_ram.append(ram)
    node_index, gpu_index = cluster.node_index, cluster.gpu_index
    for i, r in enumerate(ran):
        if not r.job.containers:
            continue
        tasks = {tp.task: tp for tp in r.tasks}
        for c in r.job.containers:
            tp = tasks[c.id]
            gs = np.array([gpu_index[g] for g in tp.gpus], dtype=np.int64)
            g_key.append(gs)
            g_s.append(np.full(len(gs), start[i]))
            g_e.append(np.full(len(gs), end[i]))
            g_mem.append(np.full(len(gs), c.gpu_mem_gb))
            n_key.append(np.array([node_index[tp.node]], dtype=np.int64))
            n_s.append(start[i:i + 1])
            n_e.append(end[i:i + 1])
            n_cpu.append(np.array([c.cpu]))
            n_ram.append(np.array([c.ram_gb]))

    def cat(parts: list[np.ndarray], dtype: Any = float) -> np.ndarray:
        return (np.concatenate(parts).astype(dtype, copy=False) if parts
                else np.zeros(0, dtype=dtype))

    kg, sg, eg = cat(g_key, np.int64), cat(g_s), cat(g_e)
    loads = [(cat(g_mem), cluster.gpu_mem_gb)]
    if exclusive:
        loads.append((np.ones(len(kg)), np.ones(cluster.num_gpus)))
    over = _over_capacity(kg, sg, eg, loads)
    for g in over[0]:
        out.append(f"GPU {cluster.gpu_ids[g]}: memory over capacity at some time")
    for g in over[1] if exclusive else ():
        out.append(f"GPU {cluster.gpu_ids[g]}: two jobs at once on an exclusive GPU")
    kn, sn, en = cat(n_key, np.int64), cat(n_s), cat(n_e)
    for n_over, what in zip(_over_capacity(kn, sn, en, [(cat(n_cpu), cluster.node_cpu),
                                                        (cat(n_ram), cluster.node_ram_gb)]),
                            ("CPU", "RAM"), strict=True):
        for n in n_over:
            out.append(f"server {cluster.node_ids[n]}: {what} over capacity at some time")
    return out
