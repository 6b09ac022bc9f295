"""Exact GENIE snapshot model on PuLP (CBC, HiGHS) and CP-SAT.

Data: waiting tasks j, their allowed shapes k = ⟨a_k, g_k⟩ (``dlsched.problems.genie``),
servers n with f_n idle GPUs. Only shapes that fit now (at least a_k servers with
f_n >= g_k) and are not dominated get variables: shape k' dominates k for task j when
a_k' <= a_k, g_k' <= g_k, k' meets the ECT whenever k does and CER_k' >= CER_k (any
solution using k can use k' on a subset of the same GPUs and be no worse).

Variables: y[j,k] = task j starts now on shape k; z[j,k,n] = it uses server n (f_n >= g_k).
Constraints, in order:
  1. one shape    Σ_k y[j,k] <= 1
  2. servers      Σ_n z[j,k,n] = a_k · y[j,k]         (a_k distinct servers)
  3. capacity     Σ_{j,k} g_k · z[j,k,n] <= f_n
  4. symmetry     for consecutive servers n < n' with f_n = f_n' (interchangeable):
                  used(n) >= used(n'), used(n) = Σ_{j,k} g_k z[j,k,n]
Objective: max Σ (W · ontime[j,k] + CER[j,k]) · y[j,k], the evaluator's F = W·K + C.
PuLP minimizes its negation. CP-SAT maximizes W·S·ontime + floor(S·CER) with
S = ``SCALE`` = 10^6: Σ floor(S·CER) <= S·C_max < S·W keeps the lexicographic order, and a
solution's real objective exceeds its scaled one / S by less than one unit per started
task, so the bound returned is (CP-SAT bound + tasks) / S.

Concrete GPUs are assigned after solving: tasks in queue order take the lowest-indexed idle
GPUs of their chosen servers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import pulp
from ortools.sat.python import cp_model

from dlsched.decision import Decision, Placement
from dlsched.instance import Instance
from dlsched.problems.genie import GenieTable, ShapeOption, free_gpus_by_server, genie_table
from dlsched.registry import MethodSpec, check_options, register_method
from dlsched.solve import MethodOutput

from .cpsat_backend import SCALE, run_cpsat
from .cpsat_backend import model_size as cpsat_size
from .pulp_backend import PULP_BACKENDS, is_one, run_pulp, write_model
from .pulp_backend import model_size as pulp_size


@dataclass(frozen=True)
class GenieData:
    """Model input shared by both backends."""

    instance: Instance
    table: GenieTable
    free: list[list[int]]  # idle GPU indices per server
    options: dict[tuple[int, int], ShapeOption]  # (job, option index) with variables
    servers: dict[tuple[int, int], list[int]]  # (job, option index) -> eligible servers
    symmetric_pairs: list[tuple[int, int]]  # consecutive servers with equal idle GPUs


def dominated(opt: ShapeOption, row: tuple[ShapeOption, ...]) -> bool:
    """True when another shape of the row needs no more servers nor GPUs per server and is
    at least as good on both objective parts."""
    s = opt.shape
    return any(
        o.shape != s and o.shape.nodes <= s.nodes and o.shape.gpus_per_node <= s.gpus_per_node
        and o.on_time >= opt.on_time and o.cer >= opt.cer
        for o in row)


def genie_data(instance: Instance, *, symmetry: bool = True, prune: bool = True) -> GenieData:
    """Candidate (task, shape) pairs that fit now, their servers, and the symmetric pairs."""
    table = genie_table(instance)
    free = free_gpus_by_server(instance)
    counts = [len(f) for f in free]
    options: dict[tuple[int, int], ShapeOption] = {}
    servers: dict[tuple[int, int], list[int]] = {}
    for j, row in enumerate(table.options):
        for k, opt in enumerate(row):
            if prune and dominated(opt, row):
                continue
            eligible = [n for n, c in enumerate(counts) if c >= opt.shape.gpus_per_node]
            if len(eligible) >= opt.shape.nodes:
                options[j, k] = opt
                servers[j, k] = eligible
    pairs = []
    if symmetry:
        by_count: dict[int, list[int]] = {}
        for n, c in enumerate(counts):
            if c > 0:
                by_count.setdefault(c, []).append(n)
        for group in by_count.values():
            pairs.extend(zip(group, group[1:], strict=False))
    return GenieData(instance, table, free, options, servers, pairs)


def _decision(data: GenieData, chosen: dict[int, tuple[int, list[int]]]) -> Decision:
    """GPU ids for the chosen (option, servers) per task, lowest idle GPUs first."""
    ids = data.instance.cluster.gpu_ids
    left = [list(f) for f in data.free]
    placements = []
    for j in sorted(chosen):
        k, nodes = chosen[j]
        g = data.options[j, k].shape.gpus_per_node
        gpus = []
        for n in sorted(nodes):
            gpus.extend(left[n][:g])
            del left[n][:g]
        placements.append(Placement(data.instance.jobs[j].id, tuple(ids[x] for x in sorted(gpus))))
    return Decision.of(placements)


def _value(data: GenieData, key: tuple[int, int]) -> float:
    opt = data.options[key]
    return data.table.weight * opt.on_time + opt.cer


# --------------------------------------------------------------------------- PuLP
@dataclass
class PulpGenie:
    prob: pulp.LpProblem
    y: dict[tuple[int, int], pulp.LpVariable]
    z: dict[tuple[int, int, int], pulp.LpVariable]


def build_pulp(data: GenieData) -> PulpGenie:
    """The model as a PuLP minimization of −F (constraint families as in the docstring)."""
    prob = pulp.LpProblem("genie", pulp.LpMinimize)
    y = {key: prob.add_variable(f"y_{key[0]}_{key[1]}", cat=pulp.LpBinary)
         for key in data.options}
    z = {(j, k, n): prob.add_variable(f"z_{j}_{k}_{n}", cat=pulp.LpBinary)
         for (j, k), nodes in data.servers.items() for n in nodes}
    per_job: dict[int, list] = {}
    for (j, _k), var in y.items():
        per_job.setdefault(j, []).append(var)
    for j, vars_ in per_job.items():  # 1. one shape
        if len(vars_) > 1:
            prob += pulp.lpSum(vars_) <= 1, f"one_{j}"
    used: dict[int, list] = {n: [] for n in range(len(data.free))}
    for (j, k), nodes in data.servers.items():  # 2. servers
        shape = data.options[j, k].shape
        prob += (pulp.lpSum(z[j, k, n] for n in nodes) == shape.nodes * y[j, k],
                 f"servers_{j}_{k}")
        for n in nodes:
            used[n].append(shape.gpus_per_node * z[j, k, n])
    for n, terms in used.items():  # 3. capacity
        if terms:
            prob += pulp.lpSum(terms) <= len(data.free[n]), f"cap_{n}"
    for a, b in data.symmetric_pairs:  # 4. symmetry
        if used[a] or used[b]:
            prob += pulp.lpSum(used[a]) - pulp.lpSum(used[b]) >= 0, f"sym_{a}_{b}"
    prob += -pulp.lpSum(_value(data, key) * var for key, var in y.items())
    return PulpGenie(prob, y, z)


def _solve_pulp(data: GenieData, backend: str, time_limit: float | None, seed: int
                ) -> tuple[MethodOutput, dict | None]:
    t0 = time.perf_counter()
    model = build_pulp(data)
    build = time.perf_counter() - t0
    run = run_pulp(model.prob, backend, time_limit, seed)
    chosen = None
    if run.status.has_solution:
        chosen = {}
        for (j, k), var in model.y.items():
            if is_one(var):
                chosen[j] = (k, [n for n in data.servers[j, k] if is_one(model.z[j, k, n])])
    bound = None if run.bound is None else -run.bound
    out = MethodOutput(None, run.status, bound, pulp_size(model.prob), build, run.log,
                       extra={"solve_time": run.solve_time})
    return out, chosen


# --------------------------------------------------------------------------- CP-SAT
def build_cpsat(data: GenieData):
    """The same model for CP-SAT, maximized, coefficients scaled by ``SCALE`` (module doc).

    Returns (model, y, z).
    """
    m = cp_model.CpModel()
    y = {key: m.NewBoolVar(f"y_{key[0]}_{key[1]}") for key in data.options}
    z = {(j, k, n): m.NewBoolVar(f"z_{j}_{k}_{n}")
         for (j, k), nodes in data.servers.items() for n in nodes}
    per_job: dict[int, list] = {}
    for (j, _k), var in y.items():
        per_job.setdefault(j, []).append(var)
    for vars_ in per_job.values():
        if len(vars_) > 1:
            m.AddAtMostOne(vars_)
    used: dict[int, list] = {n: [] for n in range(len(data.free))}
    for (j, k), nodes in data.servers.items():
        shape = data.options[j, k].shape
        m.Add(sum(z[j, k, n] for n in nodes) == shape.nodes * y[j, k])
        for n in nodes:
            used[n].append(shape.gpus_per_node * z[j, k, n])
    for n, terms in used.items():
        if terms:
            m.Add(sum(terms) <= len(data.free[n]))
    for a, b in data.symmetric_pairs:
        if used[a] or used[b]:
            m.Add(sum(used[a]) >= sum(used[b]))
    w_int = round(data.table.weight * SCALE)
    m.Maximize(sum((w_int * opt.on_time + math.floor(opt.cer * SCALE)) * y[key]
                   for key, opt in data.options.items()))
    return m, y, z


def _solve_cpsat(data: GenieData, time_limit: float | None, seed: int
                 ) -> tuple[MethodOutput, dict | None]:
    t0 = time.perf_counter()
    model, y, z = build_cpsat(data)
    build = time.perf_counter() - t0
    run = run_cpsat(model, time_limit, seed)
    chosen = None
    bound = None
    if run.status.has_solution:
        chosen = {}
        for (j, k), var in y.items():
            if run.solver.Value(var):
                chosen[j] = (k, [n for n in data.servers[j, k] if run.solver.Value(z[j, k, n])])
        tasks = len({j for j, _k in data.options})
        bound = (run.bound + tasks) / SCALE
    out = MethodOutput(None, run.status, bound, cpsat_size(model), build, run.log,
                       extra={"solve_time": run.solve_time, "scale": SCALE})
    return out, chosen


def run_exact(instance: Instance, *, backend: str, time_limit: float | None, seed: int = 0,
              symmetry: bool = True, prune: bool = True, **options) -> MethodOutput:
    """Solve the GENIE snapshot model (options: ``symmetry``, ``prune``, both on)."""
    check_options(options, ("symmetry", "prune"))
    data = genie_data(instance, symmetry=bool(symmetry), prune=bool(prune))
    if backend == "cpsat":
        out, chosen = _solve_cpsat(data, time_limit, seed)
    else:
        out, chosen = _solve_pulp(data, backend, time_limit, seed)
    out.decision = None if chosen is None else _decision(data, chosen)
    out.extra.update(candidates=len(data.options), symmetric_pairs=len(data.symmetric_pairs),
                     weight=data.table.weight)
    return out


def export_model(instance: Instance, path: str | Path, fmt: str) -> None:
    """Write the PuLP model (a minimization of −F) as an MPS or LP file."""
    prob = build_pulp(genie_data(instance)).prob
    write_model(prob, path, fmt)


register_method(MethodSpec(
    problem="genie", name="exact", kind="exact", run=run_exact,
    backends=(*PULP_BACKENDS, "cpsat"), default_backend="cbc",
    summary="snapshot model: which tasks start, shapes, servers; max on-time then CER",
    export=export_model,
))
