"""Exact Liquid batch model (Eq. 7, or the implementation's cost) on PuLP and CP-SAT.

Variables: x[c,n] = container c on server n (only where c fits on n alone);
s[k,G] = PS-worker pair k shares group G (a server, rack or domain; continuous in PuLP,
Boolean in CP-SAT); y[j,n] = job j uses server n (only where the objective prices it);
z[n,t] = containers of type <= t on server n (symmetry breaking only).
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
  6. symmetry     identical containers of a job take non-decreasing servers; among
                  interchangeable servers of one rack (same capacities, same running load)
                  n_{k+1} may hold a container of type t only if n_k holds one of type <= t
Objective: Σ_k coef_k (D_root - Σ_G saving_G s[k,G]) + Σ lin[c,n] x[c,n] + Σ node_coef[n] y[j,n]
(d(a, b) = D_root minus the savings of the groups holding both; see
``dlsched.problems.liquid.topology_groups``). The savings are >= 0 and minimized with a
minus sign, so s takes its largest value, min(X_p,G, X_w,G), at an optimum.

CP-SAT: costs × ``SCALE`` (10^6) rounded; the bound is reduced by half a unit per term a
solution can switch on (one x and one y per container, three s per pair) and divided back.
Concrete GPUs are chosen after solving by ``assign_gpus`` (deterministic).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pulp
from ortools.sat.python import cp_model

from dlsched.instance import Instance
from dlsched.problems.liquid import (
    EPS,
    LiquidData,
    decision_from_assignment,
    liquid_data,
    topology_groups,
)
from dlsched.registry import MethodSpec, check_options, register_method
from dlsched.result import Status
from dlsched.solve import MethodOutput

from .cpsat_backend import SCALE, run_cpsat
from .cpsat_backend import model_size as cpsat_size
from .pulp_backend import PULP_BACKENDS, is_one, run_pulp, write_model
from .pulp_backend import model_size as pulp_size


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


class _Builder:
    """Adds the constraint families to a backend through a tiny adapter."""

    def __init__(self, md: ModelData, lin_sum, add, new_x, new_s, new_y, new_z,
                 scale: int | None = None):
        self.md = md
        self.sum = lin_sum
        self.add = add
        self.new_x, self.new_s, self.new_y, self.new_z = new_x, new_s, new_y, new_z
        d = md.data
        if scale is None:  # real coefficients, a small tolerance on the room
            self.need = (d.c_cpu, d.c_ram)
            self.room = (d.free_cpu + EPS, d.free_ram + EPS)
        else:  # integers for CP-SAT: needs rounded up, room rounded down
            self.need = tuple(np.ceil(a * scale - 1e-6).astype(np.int64).tolist()
                              for a in (d.c_cpu, d.c_ram))
            self.room = tuple(np.floor(a * scale + 1e-6).astype(np.int64).tolist()
                              for a in (d.free_cpu, d.free_ram))

    def build(self):
        md, d = self.md, self.md.data
        xs, share = _structure(md)
        x = {(c, n): self.new_x(c, n) for c, n in xs}
        by_c: dict[int, list] = {}
        by_n: dict[int, list] = {}
        for (c, n), v in x.items():
            by_c.setdefault(c, []).append((n, v))
            by_n.setdefault(n, []).append((c, v))
        # 1. assignment
        for c in range(d.num_containers):
            self.add(self.sum(v for _, v in by_c[c]) == 1)
        # 2. GPUs per memory level, 3. CPU and RAM
        for n, items in by_n.items():
            for lev in range(d.level_cap.shape[1]):
                terms = [(int(d.c_gpus[c]), v) for c, v in items
                         if d.c_gpus[c] > 0 and d.c_level[c] >= lev]
                if sum(g for g, _ in terms) > d.level_cap[n, lev]:
                    self.add(self.sum(g * v for g, v in terms) <= int(d.level_cap[n, lev]))
            for need, room in zip(self.need, self.room, strict=True):
                terms = [(need[c], v) for c, v in items if need[c] > 0]
                if sum(a for a, _ in terms) > room[n]:
                    self.add(self.sum(a * v for a, v in terms) <= room[n])
        # 4. sharing
        s = {}
        for k, gi in share:
            s[k, gi] = self.new_s(k, gi)
            members = set(md.groups[gi][0])
            for c in (int(d.pair_p[k]), int(d.pair_w[k])):
                self.add(s[k, gi] <= self.sum(v for n, v in by_c[c] if n in members))
        # at most one group per tree level holds both ends of a pair (implied in the LP,
        # stated for CP-SAT's propagation of the objective bound)
        levels: dict[tuple[int, str], list] = {}
        for (k, gi), v in s.items():
            levels.setdefault((k, md.kinds[gi]), []).append(v)
        for group in levels.values():
            if len(group) > 1:
                self.add(self.sum(group) <= 1)
        by_ps: dict[tuple[int, int], list[int]] = {}
        for k, gi in share:
            by_ps.setdefault((int(d.pair_p[k]), gi), []).append(k)
        for (p, gi), ks in by_ps.items():
            members = list(md.groups[gi][0])
            room = int(d.level_cap[members, 0].sum())
            gpus = [int(d.c_gpus[d.pair_w[k]]) for k in ks]
            if sum(gpus) > room:
                xp = self.sum(v for n, v in by_c[p] if n in set(members))
                self.add(self.sum(g * s[k, gi] for g, k in zip(gpus, ks, strict=True))
                         <= room * xp)
        # 5. job-server
        y = {}
        for j, n in md.y_keys:
            sl = d.job_slices[j]
            own = [x[c, n] for c in range(sl.start, sl.stop) if (c, n) in x]
            y[j, n] = self.new_y(j, n)
            if d.node_coef[n] > 0:
                for v in own:
                    self.add(y[j, n] >= v)
            else:
                self.add(y[j, n] <= self.sum(own))
        # 6. symmetry
        self._symmetry(x, by_c)
        return x, s, y, share

    def _symmetry(self, x, by_c) -> None:
        md, d = self.md, self.md.data
        c_type = md.c_type
        for c in range(d.num_containers - 1):
            if c_type[c] == c_type[c + 1]:
                self.add(self.sum(n * v for n, v in by_c[c])
                         <= self.sum(n * v for n, v in by_c[c + 1]))
        n_types = int(c_type.max()) + 1 if len(c_type) else 0
        for cls in md.classes:
            prefix = {}
            for n in cls[:-1]:
                running = None
                for t in range(n_types):
                    here = [x[c, n] for c in np.flatnonzero(c_type == t).tolist() if (c, n) in x]
                    z = self.new_z(n, t)
                    self.add(z == (self.sum(here) if running is None
                                   else running + self.sum(here)))
                    prefix[n, t] = running = z
            for a, b in zip(cls[:-1], cls[1:], strict=True):
                for c in range(d.num_containers):
                    if (c, b) in x:
                        self.add(x[c, b] <= prefix[a, int(c_type[c])])


def _objective_terms(md: ModelData, x, s, y):
    """(constant, [(coefficient, variable)]) of the objective in real units."""
    d = md.data
    const = float(sum(d.pair_coef[k] for k in md.pairs)) * md.root
    terms = [(float(d.lin[c, n]), v) for (c, n), v in x.items()]
    terms += [(-float(d.pair_coef[k]) * md.groups[gi][1], v) for (k, gi), v in s.items()]
    terms += [(float(d.node_coef[n]), v) for (_, n), v in y.items()]
    return const, [(a, v) for a, v in terms if a != 0.0]


# --------------------------------------------------------------------------- PuLP
def build_pulp(md: ModelData):
    prob = pulp.LpProblem("liquid", pulp.LpMinimize)
    builder = _Builder(
        md, pulp.lpSum, lambda con: prob.addConstraint(con),
        lambda c, n: prob.add_variable(f"x_{c}_{n}", cat=pulp.LpBinary),
        lambda k, g: prob.add_variable(f"s_{k}_{g}", lowBound=0, upBound=1),
        lambda j, n: prob.add_variable(f"y_{j}_{n}", lowBound=0, upBound=1),
        lambda n, t: prob.add_variable(f"z_{n}_{t}", lowBound=0))
    x, s, y, _ = builder.build()
    const, terms = _objective_terms(md, x, s, y)
    prob += pulp.lpSum(a * v for a, v in terms) + const
    return prob, x


def solve_pulp(md: ModelData, backend: str, time_limit: float | None, seed: int):
    t0 = time.perf_counter()
    prob, x = build_pulp(md)
    build = time.perf_counter() - t0
    run = run_pulp(prob, backend, time_limit, seed)
    assign = None
    if run.status.has_solution:
        assign = np.empty(md.data.num_containers, dtype=np.int64)
        for (c, n), v in x.items():
            if is_one(v):
                assign[c] = n
    return assign, run.status, run.bound, pulp_size(prob), build, run.log, run.solve_time, {}


# --------------------------------------------------------------------------- CP-SAT
def build_cpsat(md: ModelData):
    """The same model for CP-SAT; returns (model, x, objective constant, rounding slack)."""
    m = cp_model.CpModel()
    builder = _Builder(
        md, sum, m.Add,
        lambda c, n: m.NewBoolVar(f"x_{c}_{n}"),
        lambda k, g: m.NewBoolVar(f"s_{k}_{g}"),
        lambda j, n: m.NewBoolVar(f"y_{j}_{n}"),
        lambda n, t: m.NewIntVar(0, md.data.num_containers, f"z_{n}_{t}"),
        scale=SCALE)
    x, s, y, _ = builder.build()
    const, terms = _objective_terms(md, x, s, y)
    m.Minimize(sum(round(SCALE * a) * v for a, v in terms))
    slack = 0.5 * (2 * md.data.num_containers + 3 * len(md.pairs))
    return m, x, const, slack


def solve_cpsat(md: ModelData, time_limit: float | None, seed: int):
    t0 = time.perf_counter()
    model, x, const, slack = build_cpsat(md)
    build = time.perf_counter() - t0
    run = run_cpsat(model, time_limit, seed)
    assign = bound = None
    if run.status.has_solution:
        assign = np.empty(md.data.num_containers, dtype=np.int64)
        for (c, n), v in x.items():
            if run.solver.Value(v):
                assign[c] = n
        bound = (run.bound - slack) / SCALE + const
    return (assign, run.status, bound, cpsat_size(model), build, run.log, run.solve_time,
            {"scale": SCALE})


# --------------------------------------------------------------------------- method
def run_exact(instance: Instance, *, backend: str, time_limit: float | None, seed: int = 0,
              **options) -> MethodOutput:
    """Solve the batch exactly; every container placed, or INFEASIBLE."""
    check_options(options)
    md = model_data(instance)
    problem = _check_fits(md)
    if problem:
        return MethodOutput(None, Status.INFEASIBLE, message=problem)
    if backend == "cpsat":
        out = solve_cpsat(md, time_limit, seed)
    else:
        out = solve_pulp(md, backend, time_limit, seed)
    assign, status, bound, size, build, log, solve_time, extra = out
    decision = None if assign is None else decision_from_assignment(md.data, assign)
    return MethodOutput(decision, status, bound, size, build, log,
                        extra={"solve_time": solve_time, **extra})


def export_model(instance: Instance, path: str | Path, fmt: str) -> None:
    """Write the PuLP model as an MPS or LP file."""
    prob, _ = build_pulp(model_data(instance))
    write_model(prob, path, fmt)


register_method(MethodSpec(
    problem="liquid", name="exact", kind="exact", run=run_exact,
    backends=(*PULP_BACKENDS, "cpsat"), default_backend="cbc",
    summary="assignment model of Eq. 7 with linearized pairwise network cost",
    export=export_model,
))
