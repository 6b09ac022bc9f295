"""Offline exact schedules of small workloads (CP-SAT, optional-mode intervals).

Given a whole workload (release times, fixed GPU demands or GENIE elastic shapes), choose
for every job one *mode* — how many of its GPUs sit on each server, with the duration the
simulator's speed model gives that placement (locality slowdown, GPU speed, GENIE latency) —
and a start time, so that on every server the GPUs in use never exceed its GPUs
(cumulative constraint; servers' GPUs are identical and exclusive, so a cumulative
profile always maps onto concrete GPUs: assign free GPUs greedily in start order).
Non-preemptive, no co-location (the offline bound of the exclusive-GPU problems).

Objectives: ``makespan`` (last end − first release), ``weighted_jct`` (Σ w_j (C_j − r_j)),
``qos`` (GENIE: maximize the share of jobs finishing by their deadline, Eq. 14; then
minimize makespan).

Time is discretized in units of ``time_unit`` seconds. The *primal* model rounds every
duration and release **up** (its schedule is feasible with the real durations, whose
objective we then evaluate); when some duration or release is not a whole number of
units, a second *relaxation* rounds them **down** — every real schedule with its starts
floored is feasible there — and its CP-SAT bound is the reported bound, in real units.
When everything is whole, the primal bound is exact and one solve suffices.

Modes: every split of the job's GPUs over the servers (each part at most the server's
GPUs) for fixed demands; for elastic GENIE jobs the symmetric shapes ⟨a, g⟩ on every
set of a servers with a·g ≤ batch. Keep workloads small (≈ 10-30 jobs, ≤ 16 GPUs).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from dlsched.instance import Instance
from dlsched.result import Status, relative_gap
from dlsched.simulate.speed import SpeedModel

from .cpsat_backend import run_cpsat

OBJECTIVES = ("makespan", "weighted_jct", "qos")
WEIGHT_SCALE = 1000
"""Job weights are multiplied by this and rounded for CP-SAT (3 decimals)."""


@dataclass(frozen=True)
class Mode:
    """One placement shape of a job: GPUs per server, and its real duration in seconds."""

    counts: tuple[int, ...]
    duration: float


@dataclass(frozen=True)
class ScheduledJob:
    job: str
    start: float
    end: float
    counts: tuple[int, ...]
    gpus: tuple[str, ...]


@dataclass
class OfflineResult:
    """An offline schedule with its objective and the proven bound (real units)."""

    objective_name: str
    status: Status
    objective: float | None
    bound: float | None
    schedule: list[ScheduledJob] = field(default_factory=list)
    qos_pct: float | None = None
    makespan: float | None = None
    wall_time: float = 0.0

    @property
    def gap(self) -> float | None:
        return relative_gap(self.objective, self.bound)


def _compositions(n: int, caps: list[int]) -> list[tuple[int, ...]]:
    """All ways to put n GPUs on servers with the given capacities."""
    out: list[tuple[int, ...]] = []

    def rec(i: int, left: int, acc: list[int]) -> None:
        if i == len(caps):
            if left == 0:
                out.append(tuple(acc))
            return
        for k in range(min(left, caps[i]) + 1):
            rec(i + 1, left - k, [*acc, k])

    rec(0, n, [])
    return out


def job_modes(workload: Instance, speed: SpeedModel | None = None) -> list[list[Mode]]:
    """The modes of every job, with durations from the speed model (default: the problem's)."""
    speed = speed or SpeedModel.default_for(workload.problem)
    bound = speed.bind(workload)
    cluster = workload.cluster
    caps = cluster.node_gpu_count.tolist()
    out = []
    for job in workload.jobs:
        if job.num_gpus is not None:
            shapes = _compositions(job.num_gpus, caps)
        else:
            limit = job.batch_size or cluster.num_gpus
            shapes = []
            for a in range(1, cluster.num_nodes + 1):
                for g in range(1, max(caps) + 1):
                    if a * g > limit:
                        continue
                    for servers in itertools.combinations(range(cluster.num_nodes), a):
                        if all(caps[s] >= g for s in servers):
                            counts = [0] * cluster.num_nodes
                            for s in servers:
                                counts[s] = g
                            shapes.append(tuple(counts))
        modes = []
        work = bound.work(job)
        for counts in shapes:
            gpus = np.concatenate([cluster.gpus_of_node[s][:k] for s, k in enumerate(counts) if k])
            rate, _ = bound.base_rate(job, gpus)
            modes.append(Mode(counts, work / rate))
        if not modes:
            raise ValueError(f"job {job.id!r} fits no server combination of this cluster")
        out.append(modes)
    return out


def _build(workload: Instance, modes: list[list[Mode]], objective: str, unit: float,
           round_up: bool):
    def rnd(x: float) -> int:
        return math.ceil(x - 1e-9) if round_up else math.floor(x + 1e-9)

    jobs = workload.jobs
    n_servers = workload.cluster.num_nodes
    caps = workload.cluster.node_gpu_count.tolist()
    release = [rnd(j.submit_time / unit) for j in jobs]
    dur = [[max(0, rnd(m.duration / unit)) for m in ms] for ms in modes]
    horizon = max(release) + sum(max(d) for d in dur) + 1
    model = cp_model.CpModel()
    starts, ends, chosen = [], [], []
    per_server: list[tuple[list, list]] = [([], []) for _ in range(n_servers)]
    for j, job in enumerate(jobs):
        s = model.NewIntVar(release[j], horizon, f"s_{job.id}")
        e = model.NewIntVar(release[j], horizon, f"e_{job.id}")
        lits = []
        for m, mode in enumerate(modes[j]):
            x = model.NewBoolVar(f"x_{job.id}_{m}")
            iv = model.NewOptionalFixedSizeIntervalVar(s, dur[j][m], x, f"i_{job.id}_{m}")
            model.Add(e == s + dur[j][m]).OnlyEnforceIf(x)
            for srv, k in enumerate(mode.counts):
                if k:
                    per_server[srv][0].append(iv)
                    per_server[srv][1].append(k)
            lits.append(x)
        model.AddExactlyOne(lits)
        starts.append(s)
        ends.append(e)
        chosen.append(lits)
    for srv in range(n_servers):
        if per_server[srv][0]:
            model.AddCumulative(per_server[srv][0], per_server[srv][1], caps[srv])
    cmax = model.NewIntVar(0, horizon, "cmax")
    model.AddMaxEquality(cmax, ends)
    met = []
    if objective == "makespan":
        model.Minimize(cmax)
    elif objective == "weighted_jct":
        w = [round(j.weight * WEIGHT_SCALE) for j in jobs]
        model.Minimize(sum(wj * e for wj, e in zip(w, ends, strict=True)))
    else:
        for j, job in enumerate(jobs):
            b = model.NewBoolVar(f"met_{job.id}")
            if job.deadline is None or job.deadline <= job.submit_time:
                model.Add(b == 0)  # urgent (e = 0) or no deadline: never counted as met
            else:
                # primal: ceil-rounded end within the deadline => real end is too;
                # relaxation: a real on-time job, starts floored, also ends by floor(deadline)
                model.Add(ends[j] <= math.floor(job.deadline / unit + 1e-9)).OnlyEnforceIf(b)
            met.append(b)
        model.Maximize((horizon + 1) * sum(met) - cmax)
    return model, starts, chosen, horizon


def _whole(workload: Instance, modes: list[list[Mode]], unit: float) -> bool:
    vals = [j.submit_time for j in workload.jobs] + [m.duration for ms in modes for m in ms]
    vals += [j.deadline for j in workload.jobs if j.deadline is not None]
    return all(abs(v / unit - round(v / unit)) <= 1e-9 for v in vals)


def solve_offline(workload: Instance, objective: str = "makespan", *,
                  speed: SpeedModel | None = None, time_limit: float | None = 30.0,
                  time_unit: float = 1.0, seed: int = 0, workers: int = 1) -> OfflineResult:
    """Optimal offline schedule of a small workload (see the module docstring).

    Parameters
    ----------
    workload
        Jobs with ``submit_time`` and ``duration`` (or GENIE fields); exclusive GPUs.
    objective
        ``makespan``, ``weighted_jct`` or ``qos``.
    speed
        Speed model that sets each mode's duration (default: the problem's).
    time_limit
        CP-SAT seconds (shared between the primal and the relaxation when both run).
    time_unit
        Seconds per CP time unit.

    Returns
    -------
    OfflineResult
        Status, objective (evaluated on real durations), bound (real units), schedule.
        For ``qos`` the objective and bound are QoS-guarantee percentages (maximize).
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}")
    for job in workload.jobs:
        if abs(job.weight * WEIGHT_SCALE - round(job.weight * WEIGHT_SCALE)) > 1e-9:
            raise ValueError(f"job {job.id!r}: weight {job.weight} has more than 3 decimals "
                             f"(CP-SAT weights are scaled by {WEIGHT_SCALE})")
    modes = job_modes(workload, speed)
    whole = _whole(workload, modes, time_unit)
    limit = None if time_limit is None else (time_limit if whole else time_limit / 2)
    model, starts, chosen, horizon = _build(workload, modes, objective, time_unit, True)
    run = run_cpsat(model, limit, seed, workers)
    wall = run.solve_time
    if not run.status.has_solution:
        return OfflineResult(objective, run.status, None, None, wall_time=wall)
    sched = _schedule(workload, modes, run.solver, starts, chosen, time_unit)
    real = _objective(workload, sched, objective)
    if whole:
        bound_raw, relax_status = run.bound, run.status
    else:
        rmodel, *_ = _build(workload, modes, objective, time_unit, False)
        rrun = run_cpsat(rmodel, limit, seed, workers)
        wall += rrun.solve_time
        bound_raw = rrun.bound if rrun.status.has_solution else None
        relax_status = rrun.status
        if relax_status is Status.INFEASIBLE:
            raise RuntimeError("the relaxation is infeasible while the primal is not (a bug)")
    bound = _bound(workload, objective, bound_raw, time_unit, horizon)
    status = Status.FEASIBLE
    if bound is not None and real[0] is not None:
        tol = 1e-6 * max(1.0, abs(real[0]))
        if (objective == "qos" and real[0] >= bound - tol) or \
                (objective != "qos" and real[0] <= bound + tol):
            status = Status.OPTIMAL
    return OfflineResult(objective, status, real[0], bound, sched, qos_pct=real[1],
                         makespan=real[2], wall_time=wall)


def _schedule(workload, modes, solver, starts, chosen, unit) -> list[ScheduledJob]:
    cluster = workload.cluster
    out = []
    picks = []
    for j, _job in enumerate(workload.jobs):
        m = next(k for k, x in enumerate(chosen[j]) if solver.Value(x))
        s = solver.Value(starts[j]) * unit
        picks.append((s, j, m))
    busy_until = np.zeros(cluster.num_gpus)
    for s, j, m in sorted(picks):
        mode = modes[j][m]
        end = s + mode.duration
        gpus: list[int] = []
        for srv, k in enumerate(mode.counts):
            if k:
                free = [g for g in cluster.gpus_of_node[srv] if busy_until[g] <= s + 1e-9]
                gpus += free[:k]
        busy_until[gpus] = end
        out.append(ScheduledJob(workload.jobs[j].id, s, end, mode.counts,
                                tuple(cluster.gpu_ids[g] for g in gpus)))
    return out


def _objective(workload, sched, objective) -> tuple[float, float | None, float]:
    by = {s.job: s for s in sched}
    first = min(j.submit_time for j in workload.jobs)
    makespan = max(s.end for s in sched) - first
    met = [j.deadline is not None and j.deadline > j.submit_time
           and by[j.id].end <= j.deadline + 1e-9 for j in workload.jobs]
    qos = 100.0 * sum(met) / len(met)
    if objective == "makespan":
        return makespan, qos, makespan
    if objective == "weighted_jct":
        return (sum(j.weight * (by[j.id].end - j.submit_time) for j in workload.jobs), qos,
                makespan)
    return qos, qos, makespan


def _bound(workload, objective, raw, unit, horizon) -> float | None:
    if raw is None:
        return None
    first = min(j.submit_time for j in workload.jobs)
    if objective == "makespan":
        return math.ceil(raw - 1e-9) * unit - first
    if objective == "weighted_jct":
        # CP minimizes sum round(w * 1000) * end_units; weights are exact to 3 decimals
        return raw / WEIGHT_SCALE * unit - sum(j.weight * j.submit_time for j in workload.jobs)
    met = math.floor((raw + horizon) / (horizon + 1) + 1e-9)
    return 100.0 * min(met, len(workload.jobs)) / len(workload.jobs)


def check_schedule(workload: Instance, result: OfflineResult,
                   modes: list[list[Mode]] | None = None) -> list[str]:
    """Independent check of an offline schedule: releases, mode durations, GPU exclusivity."""
    modes = modes or job_modes(workload)
    problems = []
    cluster = workload.cluster
    idx = {j.id: i for i, j in enumerate(workload.jobs)}
    per_gpu: dict[str, list[tuple[float, float]]] = {}
    if sorted(s.job for s in result.schedule) != sorted(idx):
        problems.append("not every job is scheduled exactly once")
    for s in result.schedule:
        j = idx[s.job]
        job = workload.jobs[j]
        if s.start < job.submit_time - 1e-9:
            problems.append(f"{s.job} starts before its release")
        durations = {m.counts: m.duration for m in modes[j]}
        counts = tuple(np.bincount(cluster.gpu_node[[cluster.gpu_index[g] for g in s.gpus]],
                                   minlength=cluster.num_nodes).tolist())
        if counts != s.counts or abs(s.end - s.start - durations.get(counts, -1)) > 1e-6:
            problems.append(f"{s.job}: GPUs or duration do not match a mode")
        for g in s.gpus:
            per_gpu.setdefault(g, []).append((s.start, s.end))
    for g, spans in per_gpu.items():
        spans.sort()
        for (_a0, a1), (b0, _) in zip(spans, spans[1:], strict=False):
            if b0 < a1 - 1e-9:
                problems.append(f"GPU {g} holds two jobs at {b0}")
    return problems
