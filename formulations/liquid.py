"""Exact Liquid batch model (Eq. 7, or the implementation's cost), written once for every
backend (CBC, HiGHS, SCIP, CP-SAT) against ``dlsched.formulations.backend``.

Variables: x[c,n] = container c on server n (only where c fits on n alone);
s[k,G] = PS-worker pair k shares group G (a server, rack or domain; continuous in PuLP,
Boolean in CP-SAT); y[j,n] = job j uses server n (only where the objective prices it);
z[n,t] = containers of type <= t on server n (family 6 only).
Constraints, in order:
  1. assignment   Σ_n x[c,n] = 1 (the batch is placed whole; no room → INFEASIBLE)
  2. GPUs         Σ_{c: need_c >= m} gpus_c x[c,n] <= free GPUs of n with memory >= m,
                  for every memory level m (GPUs are exclusive and compatibility nested,
                  so these counts are exactly the condition for a GPU assignment)
  3. CPU, RAM     Σ_c cpu_c x[c,n] <= free CPU of n, and RAM alike
  4. sharing      s[k,G] <= Σ_{n∈G} x[p,n], s[k,G] <= Σ_{n∈G} x[w,n]; Σ_G s[k,G] <= 1 over
                  the groups of one level (implied, stated for CP-SAT); and, per PS p,
                  Σ_k gpus_w s[k,G] <= (free GPUs of G) · Σ_{n∈G} x[p,n] (a valid cut: the
                  workers sharing G with p fit in G)
  5. job-server   y[j,n] >= x[c,n] (cost > 0) or y[j,n] <= Σ_{c∈j} x[c,n] (cost < 0)
  6. symmetry     (optional, off by default: it keeps every backend from proving the
                  Fig. 19 batches, whose LP relaxation is otherwise tight; docs/liquid.md)
                  identical containers of a job take non-decreasing servers; among
                  interchangeable servers of one rack (same capacities, same running load)
                  n_{k+1} may hold a container of type t only if n_k holds one of type <= t
Objective: Σ_k coef_k (D_root - Σ_G saving_G s[k,G]) + Σ lin[c,n] x[c,n] + Σ node_coef[n] y[j,n]
(d(a, b) = D_root minus the savings of the groups holding both; see
``dlsched.problems.liquid.topology_groups``). The savings are >= 0 and minimized with a
minus sign, so s takes its largest value, min(X_p,G, X_w,G), at an optimum.

CP-SAT: costs × ``SCALE`` (10^6) rounded; the bound is reduced by the objective's rounding
error (at most half a unit per term a solution can switch on: one x and one y per
container, three s per pair) and divided back; the solver is asked for
``linearization_level`` 2, since the LP relaxation of family 4 is what proves the batches.
Concrete GPUs are chosen after solving by ``assign_gpus`` (deterministic).
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
from dlsched.problems.liquid import (
    EPS,
    LiquidData,
    assignment_from_decision,
    decision_from_assignment,
    liquid_data,
)
from dlsched.problems.liquid_network import topology_groups
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
from .symmetry_hints import relabel_in_runs


@dataclass(frozen=True)
class ModelData:
    """What both backends build from."""

    data: LiquidData
    root: float
    groups: tuple  # (members, saving) with saving > 0
    kinds: tuple[str, ...]  # "node" | "rack" | "domain" of each group
    pairs: tuple[int, ...]  # pair indices with a positive coefficient
    y_keys: tuple[tuple[int, int], ...]  # (job, server) pairs priced by node_coef
    classes: tuple[tuple[int, ...], ...]  # interchangeable servers (>= 2 each)
    c_type: np.ndarray  # [C] type index (identical containers of one job share it)


def model_data(instance: Instance) -> ModelData:
    data = liquid_data(instance)
    root, groups = topology_groups(instance.cluster, data.params.distance)
    kept = tuple((g.members, g.saving) for g in groups if g.saving > 0)
    kinds = tuple(g.kind for g in groups if g.saving > 0)
    pairs = tuple(int(k) for k in np.flatnonzero(data.pair_coef > 0))
    fits = data.alone_fits
    y_keys = tuple((j, n) for j, sl in enumerate(data.job_slices)
                   for n in range(data.num_nodes)
                   if data.node_coef[n] != 0 and fits[sl, n].any())
    types: dict[tuple, int] = {}
    c_type = np.array([types.setdefault(
        (int(data.c_job[c]), cont.role, cont.gpus, cont.gpu_mem_gb, cont.cpu, cont.ram_gb,
         cont.bandwidth), len(types)) for c, cont in enumerate(data.containers)],
        dtype=np.int64)
    cluster = instance.cluster
    by_key: dict[tuple, list[int]] = {}
    for n in range(data.num_nodes):
        key = (int(cluster.node_rack[n]), int(cluster.node_domain[n]),
               tuple(data.level_cap[n].tolist()), round(data.free_cpu[n], 9),
               round(data.free_ram[n], 9), data.node_coef[n], data.lin[:, n].tobytes(),
               data.used_gpus[n], data.total_gpus[n])
        by_key.setdefault(key, []).append(n)
    classes = tuple(tuple(v) for v in by_key.values() if len(v) >= 2)
    return ModelData(data, root, kept, kinds, pairs, y_keys, classes, c_type)


def _check_fits(md: ModelData) -> str | None:
    fits = md.data.alone_fits
    for c in range(md.data.num_containers):
        if not fits[c].any():
            job = md.data.instance.jobs[md.data.c_job[c]].id
            return f"container {md.data.containers[c].id} of job {job} fits on no server"
    return None


def _structure(md: ModelData):
    """Index lists shared by both builders."""
    d = md.data
    fits = d.alone_fits
    xs = [(c, n) for c in range(d.num_containers) for n in np.flatnonzero(fits[c]).tolist()]
    # a group only matters for a pair when both containers can be in it
    share = []
    for k in md.pairs:
        p, w = int(d.pair_p[k]), int(d.pair_w[k])
        for gi, (members, _) in enumerate(md.groups):
            m = list(members)
            if fits[p, m].any() and fits[w, m].any():
                share.append((k, gi))
    return xs, share


@dataclass
class LiquidModel:
    """The model on one backend, with its variables."""

    model: LinearModel
    x: dict[tuple[int, int], Any]
    s: dict[tuple[int, int], Any]
    y: dict[tuple[int, int], Any]


def build_model(md: ModelData, backend: str, deadline: Deadline | None = None,
                symmetry: bool = False) -> LiquidModel:
    """The model on ``backend`` (constraint families in the module docstring's order)."""
    deadline = deadline or Deadline(None)
    d = md.data
    m = new_model(backend, "liquid", deadline)
    xs, share = _structure(md)
    x = {(c, n): m.binary(f"x_{c}_{n}") for c, n in xs}
    by_c: dict[int, list] = {}
    by_n: dict[int, list] = {}
    for (c, n), v in x.items():
        by_c.setdefault(c, []).append((n, v))
        by_n.setdefault(n, []).append((c, v))
    # 1. assignment
    for c in range(d.num_containers):
        m.add([(1, v) for _, v in by_c[c]], "==", 1, f"assign_{c}")
    # 2. GPUs per memory level, 3. CPU and RAM
    for n, items in by_n.items():
        for lev in range(d.level_cap.shape[1]):
            terms = [(int(d.c_gpus[c]), v) for c, v in items
                     if d.c_gpus[c] > 0 and d.c_level[c] >= lev]
            if sum(g for g, _ in terms) > d.level_cap[n, lev]:
                m.add(terms, "<=", int(d.level_cap[n, lev]), f"gpu_{n}_{lev}")
        for need, room, tag in ((d.c_cpu, d.free_cpu, "cpu"), (d.c_ram, d.free_ram, "ram")):
            terms = [(float(need[c]), v) for c, v in items if need[c] > 0]
            if sum(a for a, _ in terms) > room[n] + EPS:
                m.add(terms, "<=", float(room[n]) + EPS, f"{tag}_{n}")
    deadline.check("building the Liquid model")
    # 4. sharing (s continuous: at an optimum it takes min(X_p,G, X_w,G); CP-SAT: Boolean)
    s = {}
    for k, gi in share:
        s[k, gi] = (m.binary(f"s_{k}_{gi}") if backend == "cpsat"
                    else m.continuous(f"s_{k}_{gi}", 0.0, 1.0))
        members = set(md.groups[gi][0])
        for c in (int(d.pair_p[k]), int(d.pair_w[k])):
            m.add([(1, s[k, gi])] + [(-1, v) for n, v in by_c[c] if n in members], "<=", 0)
    levels: dict[tuple[int, str], list] = {}
    for (k, gi), v in s.items():
        levels.setdefault((k, md.kinds[gi]), []).append(v)
    for group in levels.values():  # one group per tree level holds both ends of a pair
        if len(group) > 1:
            m.at_most_one(group)
    by_ps: dict[tuple[int, int], list[int]] = {}
    for k, gi in share:
        by_ps.setdefault((int(d.pair_p[k]), gi), []).append(k)
    for (p, gi), ks in by_ps.items():
        members = set(md.groups[gi][0])
        room = int(d.level_cap[list(members), 0].sum())
        gpus = [int(d.c_gpus[d.pair_w[k]]) for k in ks]
        if sum(gpus) > room:
            m.add([(g, s[k, gi]) for g, k in zip(gpus, ks, strict=True)]
                  + [(-room, v) for n, v in by_c[p] if n in members], "<=", 0)
    deadline.check("building the Liquid model")
    # 5. job-server
    y = {}
    for j, n in md.y_keys:
        sl = d.job_slices[j]
        own = [x[c, n] for c in range(sl.start, sl.stop) if (c, n) in x]
        y[j, n] = (m.binary(f"y_{j}_{n}") if backend == "cpsat"
                   else m.continuous(f"y_{j}_{n}", 0.0, 1.0))
        if d.node_coef[n] > 0:
            for v in own:
                m.add([(1, y[j, n]), (-1, v)], ">=", 0)
        else:
            m.add([(1, y[j, n])] + [(-1, v) for v in own], "<=", 0)
    # 6. symmetry
    if symmetry:
        _symmetry(m, md, x, by_c, backend)
    const, terms = _objective_terms(md, x, s, y)
    # CP-SAT: half a unit per term a solution can switch on (x and y per container,
    # three s per pair)
    slack = 0.5 * (2 * d.num_containers + 3 * len(md.pairs))
    m.minimize(terms, const, rounding_slack=slack)
    return LiquidModel(m, x, s, y)


def _symmetry(m: LinearModel, md: ModelData, x, by_c, backend: str) -> None:
    d = md.data
    c_type = md.c_type
    for c in range(d.num_containers - 1):
        if c_type[c] == c_type[c + 1]:
            m.add([(n, v) for n, v in by_c[c]] + [(-n, v) for n, v in by_c[c + 1]], "<=", 0)
    n_types = int(c_type.max()) + 1 if len(c_type) else 0
    for cls in md.classes:
        prefix: dict[tuple[int, int], Any] = {}
        for n in cls[:-1]:
            running = None
            for t in range(n_types):
                here = [x[c, n] for c in np.flatnonzero(c_type == t).tolist() if (c, n) in x]
                z = (m.integer(f"z_{n}_{t}", 0, d.num_containers) if backend == "cpsat"
                     else m.continuous(f"z_{n}_{t}", 0.0))
                m.add([(1, z)] + [(-1, v) for v in here]
                      + ([] if running is None else [(-1, running)]), "==", 0)
                prefix[n, t] = running = z
        for a, b in zip(cls[:-1], cls[1:], strict=True):
            for c in range(d.num_containers):
                if (c, b) in x:
                    m.add([(1, x[c, b]), (-1, prefix[a, int(c_type[c])])], "<=", 0)


def _objective_terms(md: ModelData, x, s, y):
    """(constant, [(coefficient, variable)]) of the objective in real units."""
    d = md.data
    const = float(sum(d.pair_coef[k] for k in md.pairs)) * md.root
    terms = [(float(d.lin[c, n]), v) for (c, n), v in x.items()]
    terms += [(-float(d.pair_coef[k]) * md.groups[gi][1], v) for (k, gi), v in s.items()]
    terms += [(float(d.node_coef[n]), v) for (_, n), v in y.items()]
    return const, [(a, v) for a, v in terms if a != 0.0]


# --------------------------------------------------------------------------- method
def run_exact(instance: Instance, *, backend: str, time_limit: float | None, seed: int = 0,
              num_workers: int = 1, solver_options: dict | None = None,
              initial_solution: Decision | None = None, symmetry: bool = False,
              **options) -> MethodOutput:
    """Solve the batch exactly; every container placed, or INFEASIBLE.

    Option ``symmetry`` adds family 6 (off: it slows every backend down, see
    docs/liquid.md). On CP-SAT the model asks for ``linearization_level`` 2 (the LP
    relaxation of the sharing family is what proves the batches), unless
    ``solver_options`` says otherwise.
    """
    check_options(options)
    check_exact_options({"symmetry": symmetry, "num_workers": num_workers,
                         "solver_options": solver_options,
                         "initial_solution": initial_solution}, {"symmetry": BOOL})
    if backend == "cpsat":
        solver_options = {"linearization_level": 2, **(solver_options or {})}
    deadline = Deadline(time_limit)
    md = model_data(instance)
    problem = _check_fits(md)
    if problem:
        return MethodOutput(None, Status.INFEASIBLE, message=problem)
    t0 = time.perf_counter()
    try:
        lm = build_model(md, backend, deadline, bool(symmetry))
    except TimeUp as exc:
        return MethodOutput(None, Status.NO_SOLUTION, message=str(exc))
    if initial_solution is not None:
        lm.model.hint(_hint_values(md, lm, initial_solution))
    build = time.perf_counter() - t0
    run = lm.model.solve(solver_params(deadline, seed, num_workers, solver_options))
    decision = None
    if run.status.has_solution:
        assign = np.empty(md.data.num_containers, dtype=np.int64)
        for (c, n), v in lm.x.items():
            if lm.model.is_one(v):
                assign[c] = n
        decision = decision_from_assignment(md.data, assign)
    return MethodOutput(decision, run.status, run.bound, lm.model.size(), build, run.log,
                        run.message, extra={"solve_time": run.solve_time})


def _hint_values(md: ModelData, lm: LiquidModel, decision: Decision) -> dict[Any, float]:
    """x from a decision's server per container (only x: the solver derives the rest)."""
    if not isinstance(decision, Decision):
        raise InputError("initial_solution is not a Decision", field="initial_solution",
                         fix="pass a dlsched.Decision, e.g. best-fit's result.decision")
    try:
        assign = assignment_from_decision(md.data, decision)
    except Exception as exc:  # a decision for another batch: say so, do not guess
        raise InputError(f"initial_solution does not fit this batch: {exc}",
                         field="initial_solution", fix="pass a decision for this instance"
                         ) from None
    assign = symmetric_assignment(md, np.asarray(assign, dtype=np.int64))
    return {v: float(assign[c] == n) for (c, n), v in lm.x.items()}


def symmetric_assignment(md: ModelData, assign: np.ndarray) -> np.ndarray:
    """The same placement in the order family 6 demands (so a hint survives it): within
    each class of interchangeable servers, non-empty servers first by the least container
    type they hold; then identical containers on non-decreasing servers. Both moves keep
    every load, group and cost (the servers of a class share all of them)."""
    out = assign.copy()
    c_type = md.c_type
    for cls in md.classes:
        held = {n: [int(c_type[c]) for c in np.flatnonzero(out == n)] for n in cls}
        order_key = {n: (not types, min(types, default=0)) for n, types in held.items()}
        relabel = relabel_in_runs([cls], order_key.__getitem__, largest_first=False)
        out = np.array([relabel.get(int(n), int(n)) for n in out], dtype=np.int64)
    start = 0
    for c in range(1, len(out) + 1):
        if c == len(out) or c_type[c] != c_type[start]:
            out[start:c] = np.sort(out[start:c])
            start = c
    return out


def export_model(instance: Instance, path: str | Path, fmt: str) -> None:
    """Write the model: ``mps``/``lp`` (PuLP) or ``proto`` (CP-SAT text)."""
    backend = "cpsat" if fmt == "proto" else "cbc"
    build_model(model_data(instance), backend).model.write(path, fmt)


register_method(MethodSpec(
    problem="liquid", name="exact", kind="exact", run=run_exact,
    backends=BACKENDS, default_backend="cbc",
    summary="assignment model of Eq. 7 with linearized pairwise network cost",
    export=export_model,
))
