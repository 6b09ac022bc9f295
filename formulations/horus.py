"""Exact Horus models: the paper's ILP (Eqs. 3-10), written once for every backend.

Variables: x[j,g] = job j gets GPU g (the certified candidate pairs of
:mod:`dlsched.formulations.horus_data`); y[j] = job j is placed this round.
Constraints, in order:
  1. demand       sum_g x[j,g] = RQ_j * y[j]                          (Eq. 4, relaxed by y)
  2. gpu memory   sum_j GMem_j x[j,g] <= CP_mem[g] - UR_mem[g]          (Eq. 5, GMem)
  3. node cpu/ram sum_j sum_{g in n} RQ^r_j x[j,g] <= CP^r_n - UR^r_n   (Eq. 5, CPU and RAM)
  4. symmetry     interchangeable GPUs (same server, same state, same candidate jobs):
                  sum_j x[j,g] >= sum_j x[j,g'] for consecutive g < g'
Objective: sum Cost[j,g] x[j,g] + penalty * sum_j RQ_j (1 - y[j])    (Eq. 3 + unplaced)

The "colocation" cost model adds, per GPU that can receive two jobs, t[g] >= w (f(U_g) -
f(UR_g)) on the final cumulative utilization U_g = UR_g + sum_j GUtil_j x[j,g]. f is convex,
so t[g] >= w sum_j x[j,g] (f(UR_g + GUtil_j) - f(UR_g)) is valid (convex increments are
superadditive) and exact when at most one job lands on g. Where a solution stacks two or
more jobs on a GPU and t[g] under-prices it, that GPU (and every GPU of its class) gets
the secants of f between consecutive whole percents, and the model is solved again (a
cutting-plane loop, warm-started from the previous incumbent); with whole-percent
utilizations the loop ends with t[g] = f(U_g) at the incumbent, which is then optimal.
Every round's bound is valid (each round solves a relaxation). On CP-SAT the t
constraints are rounded towards the relaxation, so the bound stays valid, and the solver
is asked for ``linearization_level`` 2 (its LP then carries the t-rows; 3× faster at
busy 0.97) unless ``solver_options`` says otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.method_support import decision_from_indices
from dlsched.problems.horus import HorusCosts
from dlsched.registry import BOOL, MethodSpec, check_options, register_method
from dlsched.result import MethodOutput, ModelSize, Status
from dlsched.state import EPS

from .backend import (
    BACKENDS,
    Deadline,
    LinearModel,
    SolveRun,
    TimeUp,
    check_exact_options,
    solver_params,
)
from .backends import new_model
from .horus_data import HorusData, horus_data
from .horus_patterns import MAX_PATTERNS, run_patterns
from .symmetry_hints import chained_runs, relabel_in_runs

FORMS = ("pairs", "patterns", "auto")

CutPoints = dict[int, set[int]]
"""GPU index → whole percents at which the colocation model must equal f exactly."""


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
        if count[g] >= 2 and t_value(g) < costs.f(g, k) - 1e-6:
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


# --------------------------------------------------------------------------- the model
@dataclass
class HorusModel:
    """The model on one backend, with its variables."""

    model: LinearModel
    x: dict[tuple[int, int], Any]
    y: list[Any]
    t: dict[int, Any]


def build_model(data: HorusData, backend: str, cuts: CutPoints | None = None,
                deadline: Deadline | None = None) -> HorusModel:
    """The ILP on ``backend`` (constraint families in the module docstring's order)."""
    inst, costs = data.instance, data.costs
    deadline = deadline or Deadline(None)
    cuts = cuts or {}
    m = new_model(backend, "horus", deadline)
    x = {(j, g): m.binary(f"x_{j}_{g}") for j, g in data.pairs}
    y = [m.binary(f"y_{j}") for j in range(len(inst.jobs))]
    by_job: dict[int, list] = {j: [] for j in range(len(inst.jobs))}
    by_gpu: dict[int, list] = {}
    for (j, g), var in x.items():
        by_job[j].append(var)
        by_gpu.setdefault(g, []).append((j, var))
    # 1. demand
    for j, job in enumerate(inst.jobs):
        m.add([(1, v) for v in by_job[j]] + [(-job.num_gpus, y[j])], "==", 0, f"demand_{j}")
    deadline.check("building the Horus model")
    # 2. GPU memory (only where two or more jobs compete and could overflow)
    for g, items in by_gpu.items():
        need = [(inst.jobs[j].gpu_mem_gb, v) for j, v in items]
        if len(items) > 1 and sum(a for a, _ in need) > data.free_mem[g] + EPS:
            m.add(need, "<=", data.free_mem[g] + EPS, f"gmem_{g}")
    # 3. server CPU and RAM
    node_of = inst.cluster.gpu_node
    for attr, free, tag in (("cpu_per_gpu", data.free_cpu, "cpu"),
                            ("ram_gb_per_gpu", data.free_ram, "ram")):
        per_node: dict[int, list] = {}
        for (j, g), var in x.items():
            need = getattr(inst.jobs[j], attr)
            if need > 0:
                per_node.setdefault(int(node_of[g]), []).append((need, var))
        for n, terms in per_node.items():
            if len(terms) > 1 and sum(a for a, _ in terms) > free[n] + EPS:
                m.add(terms, "<=", free[n] + EPS, f"{tag}_{n}")
    deadline.check("building the Horus model")
    # 4. symmetry between interchangeable GPUs
    for a, b in data.symmetric:
        m.add([(1, v) for _, v in by_gpu[a]] + [(-1, v) for _, v in by_gpu[b]], ">=", 0,
              f"sym_{a}_{b}")
    # objective: placement cost + penalty per GPU request left waiting
    requests = int(sum(job.num_gpus for job in inst.jobs))
    penalty_const = costs.penalty * requests
    penalty = [(-costs.penalty * job.num_gpus, y[j]) for j, job in enumerate(inst.jobs)]
    slack = 0.5 * (requests + len(inst.jobs))  # CP-SAT: half a unit per active term
    t: dict[int, Any] = {}
    if not data.colocation:
        terms = [(float(costs.cost[j, g]), v) for (j, g), v in x.items()]
        m.minimize(terms + penalty, penalty_const, rounding_slack=slack)
        return HorusModel(m, x, y, t)
    # colocation: t[g] >= w (f(U_g) - f(UR_g)), by the increment bound and the secants
    w = costs.params.w_util
    terms = [(_mem_part(costs, j, g) + costs.base_interference[g], v) for (j, g), v in x.items()]
    for g, items in by_gpu.items():
        if len(items) < 2 or w == 0:  # one job at most: the paper's cost is exact
            terms.extend((w * _increment(costs, j, g), v) for j, v in items)
            continue
        t[g] = m.continuous(f"t_{g}", lb=0.0)
        m.add([(1, t[g])] + [(-w * _increment(costs, j, g), v) for j, v in items], ">=", 0.0,
              f"finc_{g}", relax=True)
        base = costs.f(g, costs.base_util[g])
        for k in sorted(cuts.get(g, ())):
            slope, intercept = _secant(costs, g, k)
            rhs = w * (slope * costs.base_util[g] + intercept - base)
            m.add([(1, t[g])] + [(-w * slope * costs.job_util[j], v) for j, v in items], ">=",
                  rhs, f"fsec_{g}_{k}", relax=True)
        terms.append((1, t[g]))
    # CP-SAT rounds the t constraints towards the relaxation (below), so only the
    # objective's own rounding needs the slack
    m.minimize(terms + penalty, penalty_const, rounding_slack=slack + 0.5 * len(t))
    return HorusModel(m, x, y, t)


@dataclass(frozen=True)
class RoundOutcome:
    """One solve of the cutting-plane loop."""

    run: SolveRun
    size: ModelSize
    build_time: float
    chosen: dict[int, list[int]] | None
    new_points: CutPoints


def solve_round(data: HorusData, backend: str, cuts: CutPoints, deadline: Deadline,
                seed: int, hint: dict[int, list[int]] | None, num_workers: int = 1,
                solver_options: dict | None = None) -> RoundOutcome:
    """Build, warm-start from ``hint``, solve, and list the points the incumbent violates."""
    t0 = time.perf_counter()
    hm = build_model(data, backend, cuts, deadline)
    if hint is not None:
        hm.model.hint(_hint_values(hm, hint, data.symmetric))
    build = time.perf_counter() - t0
    run = hm.model.solve(solver_params(deadline, seed, num_workers, solver_options))
    chosen = None
    new: CutPoints = {}
    if run.status.has_solution:
        chosen = {j: [] for j, yj in enumerate(hm.y) if hm.model.is_one(yj)}
        for (j, g), var in hm.x.items():
            if j in chosen and hm.model.is_one(var):
                chosen[j].append(g)
        if data.colocation:
            w = data.costs.params.w_util

            def t_real(g: int) -> float:
                base = data.costs.f(g, data.costs.base_util[g])
                return base + hm.model.value(hm.t[g]) / w if g in hm.t else float("inf")

            new = _violated_points(data, chosen, t_real, cuts)
    return RoundOutcome(run, hm.model.size(), build, chosen, new)


def _hint_values(hm: HorusModel, chosen: dict[int, list[int]],
                 symmetric: list[tuple[int, int]] = ()) -> dict[Any, float]:
    """Hint values; within each run of twin GPUs the jobs are relabelled busiest GPU first,
    as the symmetry rows demand (else the solvers would discard the hint)."""
    count: dict[int, int] = {}
    for gpus in chosen.values():
        for g in gpus:
            count[g] = count.get(g, 0) + 1
    relabel = relabel_in_runs(chained_runs(symmetric), lambda g: count.get(g, 0))
    on = {(j, relabel.get(g, g)) for j, gpus in chosen.items() for g in gpus}
    values: dict[Any, float] = {var: float(key in on) for key, var in hm.x.items()}
    values.update({var: float(j in chosen) for j, var in enumerate(hm.y)})
    return values


def _chosen_from(instance: Instance, decision: Decision) -> dict[int, list[int]]:
    """A warm start in model indices (jobs and GPUs the instance knows)."""
    if not isinstance(decision, Decision):
        raise InputError("initial_solution is not a Decision", field="initial_solution",
                         fix="pass a dlsched.Decision, e.g. the greedy's result.decision")
    out: dict[int, list[int]] = {}
    for pl in decision.placements:
        j = instance.job_index.get(pl.job)
        if j is None:
            continue
        out[j] = [instance.cluster.gpu_index[g] for g in pl.gpus
                  if g in instance.cluster.gpu_index]
    return out


def _decision_from(inst: Instance, chosen: dict[int, list[int]]) -> Decision:
    return decision_from_indices(inst, sorted(chosen.items()))


AUTO_PATTERNS_PER_PAIR = 12
"""``form="auto"``: the pattern form only while its columns are at most this many times
the pair model's variables (measured: docs/horus.md, "Hard instances")."""


AUTO_PATTERN_BACKENDS = ("cbc",)
"""``form="auto"``: the backends that get the pattern form (on HiGHS, SCIP and CP-SAT the
pair form was faster on the hard snapshots: docs/horus.md, "Hard instances")."""


def auto_form(data: HorusData, backend: str = "cbc") -> str:
    """``"patterns"`` on :data:`AUTO_PATTERN_BACKENDS` when the round's requests outnumber
    the idle GPUs they may take (some shares must stack on used GPUs: the pair model's LP
    is weak there), else ``"pairs"``. Both forms are exact; this only picks the faster
    one (``run_exact`` also goes back to pairs when the patterns exceed
    :data:`AUTO_PATTERNS_PER_PAIR` per pair; docs/horus.md, "Hard instances")."""
    if backend not in AUTO_PATTERN_BACKENDS:
        return "pairs"
    busy = data.instance.gpu_busy
    idle = len({g for _, g in data.pairs if not busy[g]})
    demand = sum(job.num_gpus for job in data.instance.jobs)
    return "patterns" if idle < demand else "pairs"


def run_exact(instance: Instance, *, backend: str, time_limit: float | None, seed: int = 0,
              num_workers: int = 1, solver_options: dict | None = None,
              initial_solution: Decision | None = None, reduce: bool = True,
              symmetry: bool = True, form: str = "pairs", max_patterns: int = MAX_PATTERNS,
              **options) -> MethodOutput:
    """Solve the Horus model; for the colocation cost model, a cutting-plane loop.

    Options: ``reduce`` (exact candidate reduction) and ``symmetry`` (GPU twins), both on;
    ``form``: ``"pairs"`` (default, the paper's x[j,g] model) or ``"patterns"`` (one count
    per GPU class and job set, :mod:`dlsched.formulations.horus_patterns`; one solve in
    both cost models; ``max_patterns`` caps its columns, ``symmetry`` also groups its
    classes);
    ``"auto"``: :func:`auto_form` picks one (``extra["form"]`` says which);
    ``num_workers``, ``solver_options`` and ``initial_solution`` (a Decision used as a
    warm start) as for every exact method.
    """
    check_options(options)
    check_exact_options({"reduce": reduce, "symmetry": symmetry, "num_workers": num_workers,
                         "solver_options": solver_options,
                         "initial_solution": initial_solution, "form": form,
                         "max_patterns": max_patterns},
                        {"reduce": BOOL, "symmetry": BOOL, "form": ("str", None, None),
                         "max_patterns": ("int", 1, None)})
    if form not in FORMS:
        raise InputError(f"form = {form!r}", field="options.form",
                         fix=f"one of {', '.join(FORMS)}")
    deadline = Deadline(time_limit)
    hint = None if initial_solution is None else _chosen_from(instance, initial_solution)
    data = horus_data(instance, reduce=bool(reduce), symmetry=bool(symmetry),
                      extra_pairs=[(j, g) for j, gpus in (hint or {}).items() for g in gpus])
    auto = form == "auto"
    if auto:
        form = auto_form(data, backend)
    if form == "patterns":
        options_p = solver_options
        if backend == "cpsat":  # without its LP, CP-SAT's bound stays far off
            options_p = {"linearization_level": 2, **(solver_options or {})}
        cap = min(max_patterns, AUTO_PATTERNS_PER_PAIR * len(data.pairs)) if auto \
            else max_patterns
        try:
            return run_patterns(data, backend, deadline, seed, hint, num_workers, options_p,
                                cap)
        except InputError:
            if not auto:
                raise
            form = "pairs"  # too many columns (auto_form): extra["form"] says pairs
    if backend == "cpsat" and data.colocation:  # its LP carries the t-rows' bound
        solver_options = {"linearization_level": 2, **(solver_options or {})}
    cuts: CutPoints = initial_cut_points(data) if data.colocation else {}
    rounds = 0
    build_time = solve_time = 0.0
    last: RoundOutcome | None = None  # the latest round that found a solution
    status, message = Status.NO_SOLUTION, ""
    try:
        while True:
            rounds += 1
            outcome = solve_round(data, backend, cuts, deadline, seed, hint, num_workers,
                                  solver_options)
            build_time += outcome.build_time
            solve_time += outcome.run.solve_time
            status = outcome.run.status
            if outcome.chosen is None:
                message = outcome.run.message
                break
            last, hint = outcome, outcome.chosen
            if not outcome.new_points or deadline.expired():
                break
            for g, points in outcome.new_points.items():
                cuts.setdefault(g, set()).update(points)
    except TimeUp as exc:
        status, message = Status.NO_SOLUTION, str(exc)
    if last is not None and (last.new_points or status is not Status.OPTIMAL):
        # the incumbent is feasible but unproven (under-priced, or the time ran out)
        status = Status.FEASIBLE
    if not data.certificate.holds:  # never: the enlargement makes it hold; kept as a guard
        raise RuntimeError("Horus candidate certificate does not hold")
    extra = {"solve_time": solve_time, "rounds": rounds, "form": "pairs",
             "cut_points": sum(len(v) for v in cuts.values()),
             "hint_pairs": len(data.pairs) - data.certificate.candidate_pairs,
             "certificate": data.certificate.to_dict()}
    if last is None:
        return MethodOutput(None, status, None, None, build_time, message=message, extra=extra)
    return MethodOutput(_decision_from(instance, last.chosen), status, last.run.bound,
                        last.size, build_time, last.run.log, message, extra)


def export_model(instance: Instance, path: str | Path, fmt: str) -> None:
    """Write the model: ``mps``/``lp`` (PuLP) or ``proto`` (CP-SAT text); colocation: its
    first round."""
    data = horus_data(instance)
    cuts = initial_cut_points(data) if data.colocation else {}
    backend = "cpsat" if fmt == "proto" else "cbc"
    build_model(data, backend, cuts).model.write(path, fmt)


register_method(MethodSpec(
    problem="horus", name="exact", kind="exact", run=run_exact,
    backends=BACKENDS, default_backend="cbc",
    summary="the paper's ILP (Eqs. 3-10) with a penalty per unplaced GPU request",
    export=export_model,
))

__all__ = ["HorusModel", "build_model", "run_exact"]
