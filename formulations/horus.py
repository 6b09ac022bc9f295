"""Exact Horus models: the paper's ILP (Eqs. 3-10) on PuLP (CBC, HiGHS) and CP-SAT.

Variables: x[j,g] = job j gets GPU g; y[j] = job j is placed this round.
Constraints, in order:
  1. demand       sum_g x[j,g] = RQ_j * y[j]                          (Eq. 4, relaxed by y)
  2. gpu memory   sum_j GMem_j x[j,g] <= CP_mem[g] - UR_mem[g]          (Eq. 5, GMem)
  3. node cpu/ram sum_j sum_{g in n} RQ^r_j x[j,g] <= CP^r_n - UR^r_n   (Eq. 5, CPU and RAM)
Objective: sum Cost[j,g] x[j,g] + penalty * sum_j RQ_j (1 - y[j])    (Eq. 3 + unplaced)

The "colocation" cost model adds, per GPU, t[g] >= f(U_g) on the final cumulative
utilization U_g = UR_g + sum_j GUtil_j x[j,g]. f is convex, so
    t[g] >= f(UR_g) + sum_j x[j,g] (f(UR_g + GUtil_j) - f(UR_g))
is valid (convex increments are superadditive) and exact when at most one job lands on g.
Where a solution stacks two or more jobs on a GPU and t[g] < f(U_g), that GPU gets the
secants of f between every two consecutive whole percents it can reach, and the model is
solved again (a cutting-plane loop, warm-started on CP-SAT); with
whole-percent utilizations the loop ends with t[g] = f(U_g) at the incumbent, which is
then optimal. CP-SAT uses the same secants through the integer-scaled values of f.
Every round's bound is a valid bound (each round solves a relaxation).

Pairs (j, g) that can never hold (the job's share does not fit the GPU's free memory, or
its server lacks CPU/RAM for one share) get no variable.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pulp
from ortools.sat.python import cp_model

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.problems.horus import HorusCosts, horus_costs
from dlsched.registry import MethodSpec, check_options, register_method
from dlsched.result import Status
from dlsched.solve import MethodOutput
from dlsched.state import EPS, ClusterState

from .cpsat_backend import SCALE, run_cpsat
from .cpsat_backend import model_size as cpsat_size
from .pulp_backend import PULP_BACKENDS, is_one, run_pulp, write_model
from .pulp_backend import model_size as pulp_size

CutPoints = dict[int, set[int]]
"""GPU index → whole percents at which the colocation model must equal f exactly."""


@dataclass(frozen=True)
class HorusData:
    """Model input shared by both backends."""

    instance: Instance
    costs: HorusCosts
    pairs: list[tuple[int, int]]  # candidate (job, gpu) pairs
    free_mem: np.ndarray
    free_cpu: np.ndarray
    free_ram: np.ndarray
    colocation: bool
    util_hi: np.ndarray  # [G] largest reachable cumulative utilization (percent)


def horus_data(instance: Instance) -> HorusData:
    """Candidate pairs, free capacities and (for colocation) utilization ranges."""
    costs = horus_costs(instance)
    state = ClusterState.of(instance)
    pairs = []
    for j, job in enumerate(instance.jobs):
        fits = state.gpu_fits(job) & np.isfinite(costs.cost[j])
        room = state.node_room(job)[instance.cluster.gpu_node] >= 1
        pairs.extend((j, int(g)) for g in np.flatnonzero(fits & room))
    colocation = costs.params.cost_model == "colocation"
    util_hi = costs.base_util.copy()
    if colocation:
        _require_whole_percents(costs)
        util_hi = _reachable_util(instance, costs, pairs, state.free_mem)
    return HorusData(instance, costs, pairs, state.free_mem, state.free_cpu, state.free_ram,
                     colocation, util_hi)


def _require_whole_percents(costs: HorusCosts) -> None:
    values = np.concatenate([costs.base_util, costs.job_util])
    if not np.allclose(values, np.round(values)):
        raise InputError(
            "the exact colocation model needs whole-percent GPU utilizations",
            field="jobs[].gpu_util",
            fix="round utilizations to integers (the generator does) or use cost_model paper")


def _reachable_util(instance, costs, pairs, free_mem) -> np.ndarray:
    """Per GPU: UR_util + a fractional-knapsack bound on the utilization new jobs can add."""
    hi = costs.base_util.copy()
    by_gpu: dict[int, list[int]] = {}
    for j, g in pairs:
        by_gpu.setdefault(g, []).append(j)
    for g, jobs in by_gpu.items():
        mem = np.array([instance.jobs[j].gpu_mem_gb for j in jobs])
        util = costs.job_util[jobs]
        order = np.argsort(-(util / np.maximum(mem, 1e-12)), kind="stable")
        room, add = free_mem[g], 0.0
        for k in order:
            if mem[k] <= room:
                room -= mem[k]
                add += util[k]
            else:
                add += util[k] * room / mem[k]
                break
        hi[g] += math.floor(add + 1e-9)
    return hi


def _group(data: HorusData, x: dict) -> tuple[dict[int, list], dict[int, list]]:
    by_job: dict[int, list] = {j: [] for j in range(len(data.instance.jobs))}
    by_gpu: dict[int, list] = {}
    for (j, g), var in x.items():
        by_job[j].append(var)
        by_gpu.setdefault(g, []).append((j, var))
    return by_job, by_gpu


def _mem_part(costs: HorusCosts, j: int, g: int) -> float:
    """w_mem * memory ratio: the paper cost minus its interference part."""
    return float(costs.cost[j, g] - costs.params.w_util * costs.f(
        g, costs.base_util[g] + costs.job_util[j]))


def _increment(costs: HorusCosts, j: int, g: int) -> float:
    """f(UR_g + GUtil_j) - f(UR_g): job j's interference increment alone on GPU g."""
    return costs.f(g, costs.base_util[g] + costs.job_util[j]) - costs.f(g, costs.base_util[g])


def _secant(costs: HorusCosts, g: int, k: int) -> tuple[float, float]:
    """Slope and intercept (per percent) of f's secant through k and k + 1 percent."""
    a, b = costs.f(g, k), costs.f(g, k + 1)
    return b - a, a - (b - a) * k


def _decision_from(inst: Instance, chosen: dict[int, list[int]]) -> Decision:
    ids = inst.cluster.gpu_ids
    return Decision.of(
        Placement(inst.jobs[j].id, tuple(ids[g] for g in sorted(gpus)))
        for j, gpus in sorted(chosen.items()))


def initial_cut_points(data: HorusData) -> CutPoints:
    """A few secants per GPU that can receive two jobs: at its utilization and at
    100, 125, 150, 200 and 300 % where reachable. They tighten the first round."""
    costs = data.costs
    counts = np.bincount([g for _, g in data.pairs], minlength=data.instance.cluster.num_gpus)
    out: CutPoints = {}
    for g in np.flatnonzero(counts >= 2):
        lo = max(100, int(round(costs.base_util[g])))
        points = {k for k in (lo, 125, 150, 200, 300) if lo <= k < data.util_hi[g]}
        if points:
            out[int(g)] = points
    return out


def _violated_points(data: HorusData, chosen: dict[int, list[int]], t_value,
                     cuts: CutPoints) -> CutPoints:
    """Secant points for the GPUs where the incumbent stacks jobs above what t prices.

    A point U found on one GPU is added to every GPU of its class (same type and same
    utilization before the round) that can reach it: those GPUs are interchangeable, and
    the solver would otherwise move the stack to one of them in the next round.
    """
    costs = data.costs
    stacked: dict[int, float] = {}
    count: dict[int, int] = {}
    for j, gpus in chosen.items():
        for g in gpus:
            stacked[g] = stacked.get(g, costs.base_util[g]) + costs.job_util[j]
            count[g] = count.get(g, 0) + 1
    points: set[tuple[str, float, int]] = set()
    for g, util in stacked.items():
        k = int(round(util))
        if count[g] >= 2 and t_value(g) < costs.f(g, k) - 1e-7:
            points.add((data.instance.cluster.gpu_type[g], float(costs.base_util[g]), k))
    new: CutPoints = {}
    if not points:
        return new
    gpu_type = data.instance.cluster.gpu_type
    for g in {g for _, g in data.pairs}:
        for typ, base, k in points:
            if gpu_type[g] == typ and costs.base_util[g] == base and k <= data.util_hi[g] \
                    and k not in cuts.get(g, ()):
                new.setdefault(g, set()).add(k)
    return new


# --------------------------------------------------------------------------- PuLP
@dataclass
class PulpHorus:
    prob: pulp.LpProblem
    x: dict[tuple[int, int], pulp.LpVariable]
    y: list[pulp.LpVariable]
    t: dict[int, pulp.LpVariable]


def build_pulp(data: HorusData, cuts: CutPoints | None = None) -> PulpHorus:
    """The ILP as a PuLP problem (constraint families in the module docstring's order)."""
    inst, costs = data.instance, data.costs
    cuts = cuts or {}
    prob = pulp.LpProblem("horus", pulp.LpMinimize)
    x = {(j, g): prob.add_variable(f"x_{j}_{g}", cat=pulp.LpBinary) for j, g in data.pairs}
    y = [prob.add_variable(f"y_{j}", cat=pulp.LpBinary) for j in range(len(inst.jobs))]
    by_job, by_gpu = _group(data, x)
    # 1. demand
    for j, job in enumerate(inst.jobs):
        prob += pulp.lpSum(by_job[j]) == job.num_gpus * y[j], f"demand_{j}"
    # 2. GPU memory (only where two or more jobs compete)
    for g, items in by_gpu.items():
        if len(items) > 1:
            prob += (pulp.lpSum(inst.jobs[j].gpu_mem_gb * v for j, v in items)
                     <= data.free_mem[g] + EPS, f"gmem_{g}")
    # 3. server CPU and RAM
    node_of = inst.cluster.gpu_node
    for attr, free, tag in (("cpu_per_gpu", data.free_cpu, "cpu"),
                            ("ram_gb_per_gpu", data.free_ram, "ram")):
        per_node: dict[int, list] = {}
        for (j, g), var in x.items():
            need = getattr(inst.jobs[j], attr)
            if need > 0:
                per_node.setdefault(int(node_of[g]), []).append(need * var)
        for n, terms in per_node.items():
            if len(terms) > 1:
                prob += pulp.lpSum(terms) <= free[n] + EPS, f"{tag}_{n}"
    penalty = pulp.lpSum(costs.penalty * job.num_gpus * (1 - y[j])
                         for j, job in enumerate(inst.jobs))
    t: dict[int, pulp.LpVariable] = {}
    if not data.colocation:
        prob += pulp.lpSum(costs.cost[j, g] * v for (j, g), v in x.items()) + penalty
        return PulpHorus(prob, x, y, t)
    # colocation: t[g] >= f(U_g), by the increment bound and the secants found so far
    w = costs.params.w_util
    terms = [(_mem_part(costs, j, g) + costs.base_interference[g]) * v for (j, g), v in x.items()]
    for g, items in by_gpu.items():
        if len(items) < 2:  # one job at most: the paper's cost is exact
            terms.extend(w * _increment(costs, j, g) * v for j, v in items)
            continue
        t[g] = prob.add_variable(f"t_{g}", lowBound=0)
        base = costs.f(g, costs.base_util[g])
        prob += t[g] >= base + pulp.lpSum(_increment(costs, j, g) * v for j, v in items), \
            f"finc_{g}"
        util = costs.base_util[g] + pulp.lpSum(costs.job_util[j] * v for j, v in items)
        for k in sorted(cuts.get(g, ())):
            slope, intercept = _secant(costs, g, k)
            prob += t[g] >= slope * util + intercept, f"fsec_{g}_{k}"
        terms.append(w * (t[g] - base))
    prob += pulp.lpSum(terms) + penalty
    return PulpHorus(prob, x, y, t)


def solve_pulp(data: HorusData, backend: str, deadline: float | None, seed: int,
               cuts: CutPoints) -> tuple[MethodOutput, dict[int, list[int]] | None, CutPoints]:
    """One round: build, solve, and list the colocation points the incumbent violates."""
    t0 = time.perf_counter()
    model = build_pulp(data, cuts)
    build = time.perf_counter() - t0
    run = run_pulp(model.prob, backend, _remaining(deadline), seed)
    chosen = None
    new: CutPoints = {}
    if run.status.has_solution:
        chosen = {j: [] for j, yj in enumerate(model.y) if is_one(yj)}
        for (j, g), var in model.x.items():
            if is_one(var) and j in chosen:
                chosen[j].append(g)
        if data.colocation:
            new = _violated_points(data, chosen, lambda g: model.t[g].value() or 0.0, cuts)
    out = MethodOutput(None, run.status, run.bound, pulp_size(model.prob), build, run.log,
                       extra={"solve_time": run.solve_time})
    return out, chosen, new


# --------------------------------------------------------------------------- CP-SAT
def build_cpsat(data: HorusData, cuts: CutPoints | None = None,
                hint: dict[int, list[int]] | None = None):
    """The same model for CP-SAT, costs scaled by ``SCALE`` and rounded.

    Returns (model, x, y, t, slack) where ``slack`` bounds, in scaled units, how far the
    rounded objective of any solution can sit from its real objective × SCALE.
    """
    inst, costs = data.instance, data.costs
    cuts = cuts or {}
    m = cp_model.CpModel()
    x = {(j, g): m.NewBoolVar(f"x_{j}_{g}") for j, g in data.pairs}
    y = [m.NewBoolVar(f"y_{j}") for j in range(len(inst.jobs))]
    by_job, by_gpu = _group(data, x)
    if hint is not None:  # the previous round's incumbent stays feasible: start from it
        on = {(j, g) for j, gpus in hint.items() for g in gpus}
        for key, var in x.items():
            m.AddHint(var, key in on)
        for j, var in enumerate(y):
            m.AddHint(var, j in hint)
    for j, job in enumerate(inst.jobs):
        m.Add(sum(by_job[j]) == job.num_gpus * y[j])
    # capacities are real numbers: scale both sides, demands rounded up, room rounded down
    for g, items in by_gpu.items():
        if len(items) > 1:
            m.Add(sum(_scaled_up(inst.jobs[j].gpu_mem_gb) * v for j, v in items)
                  <= _scaled_down(data.free_mem[g]))
    node_of = inst.cluster.gpu_node
    for attr, free in (("cpu_per_gpu", data.free_cpu), ("ram_gb_per_gpu", data.free_ram)):
        per_node: dict[int, list] = {}
        for (j, g), var in x.items():
            need = getattr(inst.jobs[j], attr)
            if need > 0:
                per_node.setdefault(int(node_of[g]), []).append(_scaled_up(need) * var)
        for n, terms in per_node.items():
            if len(terms) > 1:
                m.Add(sum(terms) <= _scaled_down(free[n]))
    requests = int(sum(job.num_gpus for job in inst.jobs))
    penalty = [round(SCALE * costs.penalty) * job.num_gpus * (1 - y[j])
               for j, job in enumerate(inst.jobs)]
    t: dict[int, cp_model.IntVar] = {}
    if not data.colocation:
        obj = [round(SCALE * costs.cost[j, g]) * v for (j, g), v in x.items()]
        m.Minimize(sum(obj) + sum(penalty))
        return m, x, y, t, 0.5 * requests
    w = costs.params.w_util
    obj = [round(SCALE * (_mem_part(costs, j, g) + costs.base_interference[g])) * v
           for (j, g), v in x.items()]
    for g, items in by_gpu.items():
        incr = [(round(SCALE * w * _increment(costs, j, g)), v) for j, v in items]
        if len(items) < 2:
            obj.extend(c * v for c, v in incr)
            continue
        lo, hi = int(round(costs.base_util[g])), int(data.util_hi[g])
        top = round(SCALE * w * (costs.f(g, hi + 1) - costs.f(g, lo))) + 1
        t[g] = m.NewIntVar(0, top, f"t_{g}")
        m.Add(t[g] >= sum(c * v for c, v in incr))
        added = sum(int(round(costs.job_util[j])) * v for j, v in items)  # U_g - UR_g
        for k in sorted(cuts.get(g, ())):
            # secant through the rounded values at k and k + 1: integer slope and intercept
            f_k = round(SCALE * w * (costs.f(g, k) - costs.f(g, lo)))
            f_k1 = round(SCALE * w * (costs.f(g, k + 1) - costs.f(g, lo)))
            m.Add(t[g] >= (f_k1 - f_k) * (added + lo - k) + f_k)
        obj.append(t[g])
    m.Minimize(sum(obj) + sum(penalty))
    # rounding: half a unit per cost and per increment of a GPU share, and up to one unit
    # per secant of the rounded (not exactly convex) values on each GPU
    return m, x, y, t, 2.0 * requests


def _scaled_up(value: float) -> int:
    return math.ceil(value * SCALE - 1e-6)


def _scaled_down(value: float) -> int:
    return math.floor(value * SCALE + 1e-6)


def solve_cpsat(data: HorusData, deadline: float | None, seed: int, cuts: CutPoints,
                hint: dict[int, list[int]] | None = None
                ) -> tuple[MethodOutput, dict[int, list[int]] | None, CutPoints]:
    t0 = time.perf_counter()
    model, x, y, t, slack = build_cpsat(data, cuts, hint)
    build = time.perf_counter() - t0
    run = run_cpsat(model, _remaining(deadline), seed)
    chosen = None
    bound = None
    new: CutPoints = {}
    if run.status.has_solution:
        chosen = {j: [] for j, yj in enumerate(y) if run.solver.Value(yj)}
        for (j, g), var in x.items():
            if run.solver.Value(var) and j in chosen:
                chosen[j].append(g)
        bound = (run.bound - slack) / SCALE
        if data.colocation:
            w = data.costs.params.w_util

            def t_real(g: int) -> float:
                base = data.costs.f(g, data.costs.base_util[g])
                return base + run.solver.Value(t[g]) / (SCALE * w) if w else float("inf")

            new = _violated_points(data, chosen, t_real, cuts)
    out = MethodOutput(None, run.status, bound, cpsat_size(model), build, run.log,
                       extra={"solve_time": run.solve_time, "scale": SCALE})
    return out, chosen, new


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.01, deadline - time.perf_counter())


def run_exact(instance: Instance, *, backend: str, time_limit: float | None, seed: int = 0,
              **options) -> MethodOutput:
    """Solve the Horus model; for the colocation cost model, a cutting-plane loop."""
    check_options(options)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    data = horus_data(instance)
    cuts: CutPoints = initial_cut_points(data) if data.colocation else {}
    rounds = build_time = solve_time = 0.0
    chosen = None
    while True:
        rounds += 1
        if backend == "cpsat":
            out, chosen, new = solve_cpsat(data, deadline, seed, cuts, hint=chosen)
        else:
            out, chosen, new = solve_pulp(data, backend, deadline, seed, cuts)
        build_time += out.build_time or 0.0
        solve_time += out.extra["solve_time"]
        out_of_time = deadline is not None and time.perf_counter() >= deadline
        if chosen is None or not new or out_of_time:
            break
        for g, points in new.items():
            cuts.setdefault(g, set()).update(points)
    status = out.status
    if new:  # the incumbent is feasible but the model under-priced it: no proof
        status = Status.FEASIBLE
    out.decision = None if chosen is None else _decision_from(instance, chosen)
    out.status = status
    out.build_time = build_time
    out.extra.update(solve_time=solve_time, rounds=int(rounds),
                     cut_points=sum(len(v) for v in cuts.values()))
    return out


def export_model(instance: Instance, path: str | Path, fmt: str) -> None:
    """Write the PuLP model as an MPS or LP file (colocation: its first round)."""
    prob = build_pulp(horus_data(instance)).prob
    write_model(prob, path, fmt)


register_method(MethodSpec(
    problem="horus", name="exact", kind="exact", run=run_exact,
    backends=(*PULP_BACKENDS, "cpsat"), default_backend="cbc",
    summary="the paper's ILP (Eqs. 3-10) with a penalty per unplaced GPU request",
    export=export_model,
))
