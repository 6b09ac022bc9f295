"""Exact GENIE snapshot model, written once for every backend (CBC, HiGHS, SCIP, CP-SAT).

This module's per-server model is ``form="servers"``; the default, ``form="classes"``
(:mod:`dlsched.formulations.genie_classes`), counts interchangeable servers instead and
proves the same optima much faster at scale (docs/genie.md, "Hard instances").

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
Every backend minimizes its negation −F. CP-SAT (through the backend layer) rounds each
value W·ontime + CER to 10^-6, half a unit at most per started task, which the returned
bound absorbs (``rounding_slack``); the objective reported is always the evaluator's.

Concrete GPUs are assigned after solving: tasks in queue order take the lowest-indexed idle
GPUs of their chosen servers.
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
from dlsched.method_support import decision_from_indices, free_gpus_by_server
from dlsched.problems.genie import GenieTable, ShapeOption, genie_table
from dlsched.registry import BOOL, MethodSpec, check_options, register_method
from dlsched.result import MethodOutput, Status

from .backend import (
    BACKENDS,
    Deadline,
    LinearModel,
    TimeUp,
    check_exact_options,
    solver_params,
)
from .backends import new_model
from .genie_classes import run_classes
from .symmetry_hints import chained_runs, relabel_in_runs

FORMS = ("servers", "classes")


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


def dominated_mask(row: tuple[ShapeOption, ...]) -> np.ndarray:
    """:func:`dominated` for every shape of a row at once (numpy)."""
    nodes = np.array([o.shape.nodes for o in row])
    gpn = np.array([o.shape.gpus_per_node for o in row])
    ontime = np.array([o.on_time for o in row], dtype=float)
    cer = np.array([o.cer for o in row], dtype=float)
    other = (nodes[None, :] != nodes[:, None]) | (gpn[None, :] != gpn[:, None])
    dom = (other & (nodes[None, :] <= nodes[:, None]) & (gpn[None, :] <= gpn[:, None])
           & (ontime[None, :] >= ontime[:, None]) & (cer[None, :] >= cer[:, None]))
    return dom.any(axis=1)


def genie_data(instance: Instance, *, symmetry: bool = True, prune: bool = True) -> GenieData:
    """Candidate (task, shape) pairs that fit now, their servers, and the symmetric pairs."""
    table = genie_table(instance)
    free = free_gpus_by_server(instance)
    counts = [len(f) for f in free]
    options: dict[tuple[int, int], ShapeOption] = {}
    servers: dict[tuple[int, int], list[int]] = {}
    for j, row in enumerate(table.options):
        drop = dominated_mask(row) if prune else np.zeros(len(row), dtype=bool)
        for k, opt in enumerate(row):
            if drop[k]:
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
    left = [list(f) for f in data.free]
    placed = []
    for j in sorted(chosen):
        k, nodes = chosen[j]
        g = data.options[j, k].shape.gpus_per_node
        gpus = []
        for n in sorted(nodes):
            gpus.extend(left[n][:g])
            del left[n][:g]
        placed.append((j, gpus))
    return decision_from_indices(data.instance, placed)


def _value(data: GenieData, key: tuple[int, int]) -> float:
    opt = data.options[key]
    return data.table.weight * opt.on_time + opt.cer


# --------------------------------------------------------------------------- the model
@dataclass
class GenieModel:
    """The model on one backend, with its variables."""

    model: LinearModel
    y: dict[tuple[int, int], Any]
    z: dict[tuple[int, int, int], Any]


def build_model(data: GenieData, backend: str, deadline: Deadline | None = None
                ) -> GenieModel:
    """The model as a minimization of −F (constraint families as in the module docstring)."""
    deadline = deadline or Deadline(None)
    m = new_model(backend, "genie", deadline)
    y = {key: m.binary(f"y_{key[0]}_{key[1]}") for key in data.options}
    z = {(j, k, n): m.binary(f"z_{j}_{k}_{n}")
         for (j, k), nodes in data.servers.items() for n in nodes}
    per_job: dict[int, list] = {}
    for (j, _k), var in y.items():
        per_job.setdefault(j, []).append(var)
    for j, vars_ in per_job.items():  # 1. one shape
        if len(vars_) > 1:
            m.at_most_one(vars_, f"one_{j}")
    used: dict[int, list] = {n: [] for n in range(len(data.free))}
    for (j, k), nodes in data.servers.items():  # 2. servers
        shape = data.options[j, k].shape
        m.add([(1, z[j, k, n]) for n in nodes] + [(-shape.nodes, y[j, k])], "==", 0,
              f"servers_{j}_{k}")
        for n in nodes:
            used[n].append((shape.gpus_per_node, z[j, k, n]))
    deadline.check("building the GENIE model")
    for n, terms in used.items():  # 3. capacity
        if terms and sum(a for a, _ in terms) > len(data.free[n]):
            m.add(terms, "<=", len(data.free[n]), f"cap_{n}")
    for a, b in data.symmetric_pairs:  # 4. symmetry
        if used[a] or used[b]:
            m.add(used[a] + [(-g, v) for g, v in used[b]], ">=", 0, f"sym_{a}_{b}")
    # −F; CP-SAT rounds each task's value to 10^-6: at most half a unit per started task
    tasks = len(per_job)
    m.minimize([(-_value(data, key), var) for key, var in y.items()],
               rounding_slack=0.5 * tasks)
    return GenieModel(m, y, z)


def chosen_from_decision(data: GenieData, decision: Decision
                         ) -> dict[int, tuple[int, list[int]]]:
    """Task -> (option index, servers) of a decision's placements that the model has
    (a started task whose shape has no variable is left out)."""
    if not isinstance(decision, Decision):
        raise InputError("initial_solution is not a Decision", field="initial_solution",
                         fix="pass a dlsched.Decision, e.g. a heuristic's result.decision")
    inst = data.instance
    chosen: dict[int, tuple[int, list[int]]] = {}
    for pl in decision.placements:
        j = inst.job_index.get(pl.job)
        gpus = [inst.cluster.gpu_index[g] for g in pl.gpus if g in inst.cluster.gpu_index]
        if j is None or not gpus:
            continue
        nodes = sorted({int(inst.cluster.gpu_node[g]) for g in gpus})
        per = len(gpus) // len(nodes)
        for k, opt in enumerate(data.table.options[j]):
            shape = opt.shape
            if (j, k) in data.options and shape.nodes == len(nodes) \
                    and shape.gpus_per_node == per:
                chosen[j] = (k, nodes)
                break
    return chosen


def _hint_values(data: GenieData, gm: GenieModel, decision: Decision) -> dict[Any, float]:
    """A warm start from a decision: each started task's shape and servers, where the
    model has them (other variables 0), with interchangeable servers relabelled so the
    hint obeys the symmetry rows (else the solvers would discard it)."""
    chosen = chosen_from_decision(data, decision)
    relabel = _symmetric_relabel(data, chosen)
    values: dict[Any, float] = {var: 0.0 for var in (*gm.y.values(), *gm.z.values())}
    for j, (k, nodes) in chosen.items():
        values[gm.y[j, k]] = 1.0
        for n in nodes:
            if (j, k, relabel.get(n, n)) in gm.z:
                values[gm.z[j, k, relabel.get(n, n)]] = 1.0
    return values


def _symmetric_relabel(data: GenieData, chosen: dict[int, tuple[int, list[int]]]
                       ) -> dict[int, int]:
    """Server -> server: within each run of interchangeable servers (the symmetric pairs,
    chained), the busiest in ``chosen`` first, as the symmetry rows demand."""
    used: dict[int, int] = {}
    for j, (k, nodes) in chosen.items():
        for n in nodes:
            used[n] = used.get(n, 0) + data.options[j, k].shape.gpus_per_node
    return relabel_in_runs(chained_runs(data.symmetric_pairs), lambda n: used.get(n, 0))


def run_exact(instance: Instance, *, backend: str, time_limit: float | None, seed: int = 0,
              symmetry: bool = True, prune: bool = True, num_workers: int = 1,
              solver_options: dict | None = None, initial_solution: Decision | None = None,
              form: str = "classes", **options) -> MethodOutput:
    """Solve the GENIE snapshot model (options: ``symmetry``, ``prune``, both on;
    ``form``: ``"classes"`` (default: counts of servers per idle count and fragment
    pattern, :mod:`dlsched.formulations.genie_classes`; ``symmetry`` does not apply to it)
    or ``"servers"`` (the per-server model of this module); and ``num_workers``,
    ``solver_options``, ``initial_solution`` as for every exact method)."""
    check_options(options)
    check_exact_options({"symmetry": symmetry, "prune": prune, "num_workers": num_workers,
                         "solver_options": solver_options,
                         "initial_solution": initial_solution, "form": form},
                        {"symmetry": BOOL, "prune": BOOL, "form": ("str", None, None)})
    if form not in FORMS:
        raise InputError(f"form = {form!r}", field="options.form",
                         fix=f"one of {', '.join(FORMS)}")
    deadline = Deadline(time_limit)
    data = genie_data(instance, symmetry=bool(symmetry) and form == "servers",
                      prune=bool(prune))
    if not data.options:  # no task fits now: starting nothing (F = 0) is optimal, no model
        # (an empty model is no MILP for every backend: CBC's PuLP read gave a TypeError)
        return MethodOutput(_decision(data, {}), Status.OPTIMAL, 0.0,
                            extra={"candidates": 0, "form": form})
    if form == "classes":
        hint = (None if initial_solution is None
                else chosen_from_decision(data, initial_solution))
        return run_classes(data, backend, deadline, seed, num_workers, solver_options, hint,
                           lambda key: _value(data, key), lambda ch: _decision(data, ch))
    extra: dict[str, Any] = {"candidates": len(data.options),
                             "symmetric_pairs": len(data.symmetric_pairs),
                             "weight": data.table.weight}
    t0 = time.perf_counter()
    try:
        gm = build_model(data, backend, deadline)
    except TimeUp as exc:
        return MethodOutput(None, Status.NO_SOLUTION, message=str(exc), extra=extra)
    if initial_solution is not None:
        gm.model.hint(_hint_values(data, gm, initial_solution))
    build = time.perf_counter() - t0
    run = gm.model.solve(solver_params(deadline, seed, num_workers, solver_options))
    decision = None
    if run.status.has_solution:
        chosen = {}
        for (j, k), var in gm.y.items():
            if gm.model.is_one(var):
                chosen[j] = (k, [n for n in data.servers[j, k]
                                 if gm.model.is_one(gm.z[j, k, n])])
        decision = _decision(data, chosen)
    bound = None if run.bound is None else -run.bound  # an upper bound on F
    extra["solve_time"] = run.solve_time
    return MethodOutput(decision, run.status, bound, gm.model.size(), build, run.log,
                        run.message, extra=extra)


def export_model(instance: Instance, path: str | Path, fmt: str) -> None:
    """Write the model as the maximization of F: ``mps``/``lp`` (PuLP) or ``proto`` (CP-SAT)."""
    backend = "cpsat" if fmt == "proto" else "cbc"
    build_model(genie_data(instance), backend).model.write(path, fmt, maximize=True)


register_method(MethodSpec(
    problem="genie", name="exact", kind="exact", run=run_exact,
    backends=BACKENDS, default_backend="cbc",
    summary="snapshot model: which tasks start, shapes, servers; max on-time then CER",
    export=export_model,
))
