"""Liquid placement job by job: the corrected best-fit and the GA with local search.

The container-by-container best-fit of ``heuristics.liquid`` places a parameter server
first, when none of its workers is placed: its cost is then equal on every server and the
tie sends every PS to server 0, away from its workers. Here a job is placed as a whole:

- ``bestfit`` (Alg. 1, immediate mode, corrected; registered by
  ``heuristics.liquid_bestfit``, which makes :func:`jobwise_bestfit`'s decisions with
  less work): jobs in queue order; for each job the candidate plans are (a) the whole job
  on one server, for every server it fits on, and (b) a split plan that places the
  workers one by one, each on the server of least partial score, and then each PS on the
  server of least score given its workers. The cheapest candidate wins (ties: lowest
  server index). The fitness term sees the GPUs the earlier jobs of the same round took
  (Alg. 1 places one job after another, each on the state the previous ones left), so
  best-fit packs; the batch is then priced by the problem's evaluator like every other
  method (whose UsedGPU is the state before the round). ``gga-ls`` places jobs by the
  batch objective's own terms.
- ``gga-ls``: the grouping GA's population and tournament with job-preserving operators —
  crossover injects one server's jobs from parent X into Y and re-places every job it
  disturbed whole (by the job-wise best-fit), mutation re-places the jobs of one server in
  a random order — seeded with best-fit in queue order and in decreasing GPU demand (a
  first-fit-decreasing packing), and a local search on the best plan of every generation
  (re-place a split job whole; swap a split job with another job; move one container,
  priced by its exact change of the score) that runs to a local optimum. Stops at
  ``time_limit``, after ``stall_generations`` without improvement, or ``max_generations``.

Every random draw comes from one ``numpy.random.Generator(seed)``; a run stopped by stalls
or generations is identical for a seed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.instance import Instance
from dlsched.problems.liquid import EPS, LiquidData, decision_from_assignment, liquid_data
from dlsched.registry import MethodSpec, check_option_values, check_options, register_method
from dlsched.result import MethodOutput, Status

from .liquid import GGA_RULES, UNSET
from .liquid_loads import NodeLoads

# ----------------------------------------------------------------------------- job plans


class _Round:
    """The partial plan of one round: assignment, loads and GPUs taken this round."""

    def __init__(self, data: LiquidData, assign: np.ndarray | None = None,
                 dynamic: bool = False, loads: type[NodeLoads] = NodeLoads) -> None:
        self.data = data
        self.dynamic = dynamic
        self.assign = (np.full(data.num_containers, UNSET, dtype=np.int64)
                       if assign is None else assign.copy())
        self.loads = loads.of(data, self.assign)
        # best-fit's per-server term with every placed container's GPUs counted, kept
        # between jobs and recomputed at the servers place/remove_job touched since
        self.coef: np.ndarray | None = None
        self.touched: set[int] = set()

    def copy(self) -> _Round:
        other = _Round.__new__(_Round)
        other.data = self.data
        other.dynamic = self.dynamic
        other.assign = self.assign.copy()
        other.loads = self.loads.copy()
        other.coef = None if self.coef is None else self.coef.copy()
        other.touched = set(self.touched)
        return other

    def place(self, c: int, n: int) -> None:
        self.assign[c] = n
        self.loads.add(c, n)
        self.touched.add(n)

    def remove_job(self, j: int) -> None:
        sl = self.data.job_slices[j]
        for c in range(sl.start, sl.stop):
            if self.assign[c] >= 0:
                self.loads.remove(c, int(self.assign[c]))
                self.touched.add(int(self.assign[c]))
                self.assign[c] = UNSET

    def dynamic_coef(self) -> np.ndarray:
        """``node_coef - (1 - λ) · GPUs placed / total`` per server (paper objective), all
        placed containers counted: computed once, then only where the loads changed (the
        same numbers elementwise). Read-only for callers."""
        d = self.data
        scale = 1.0 - d.params.lam
        if self.coef is None:
            self.coef = d.node_coef - scale * (self.loads.gpu[:, 0].astype(float)
                                               / d.total_gpus)
        else:
            for n in self.touched:
                self.coef[n] = d.node_coef[n] - scale * (float(self.loads.gpu[n, 0])
                                                         / d.total_gpus[n])
        self.touched.clear()
        return self.coef

    def round_gpus(self, exclude_job: int) -> np.ndarray:
        """[N] GPUs taken this round by jobs other than ``exclude_job``."""
        d = self.data
        if not (self.assign[d.job_slices[exclude_job]] >= 0).any():
            # every placed container counts: the loads' level-0 column holds their GPUs
            # per server (integers, so the same floats as the sum below)
            return self.loads.gpu[:, 0].astype(float)
        mask = (self.assign >= 0) & (d.c_job != exclude_job)
        return np.bincount(self.assign[mask], weights=d.c_gpus[mask],
                           minlength=d.num_nodes)


def _dynamic_terms(data: LiquidData, rnd: _Round, j: int) -> tuple[np.ndarray, np.ndarray]:
    """(lin [C_j, N], node_coef [N]) of job j; with ``rnd.dynamic`` the GPUs the round's
    other jobs took count as used (best-fit), else the batch objective's own terms."""
    sl = data.job_slices[j]
    if not rnd.dynamic:
        return data.lin_rows(sl), data.node_coef
    if data.params.objective == "paper" and not (rnd.assign[sl] >= 0).any():
        return data.lin_rows(sl), rnd.dynamic_coef()  # the same numbers as below
    extra = rnd.round_gpus(j) / data.total_gpus
    lam = data.params.lam
    if data.params.objective == "paper":  # lin unchanged: the data's rows (read here only)
        return data.lin_rows(sl), data.node_coef - (1.0 - lam) * extra
    lin = data.lin_rows(sl).copy()
    sign = np.where(data.c_ps[sl], 1.0, -1.0)
    lin += sign[:, None] * extra[None, :] / max(1, data.num_containers)
    return lin, data.node_coef.copy()


def job_cost(data: LiquidData, j: int, nodes: np.ndarray, lin: np.ndarray,
             node_coef: np.ndarray) -> float:
    """Score of job j placed on ``nodes`` (one server index per container of the job)."""
    coef, ps, workers, rows = data.job_pair_terms[j]
    net = float(coef @ data.dist[nodes[ps], nodes[workers]])
    own = float(lin[rows, nodes].sum())
    servers = sorted(set(nodes.tolist()))  # np.unique's servers, without its overhead
    return net + own + float(node_coef[servers].sum())


def _levels_fit(gpu: np.ndarray, need: Sequence, cap: np.ndarray, levels: int) -> np.ndarray:
    """[N] ``((gpu[:, :levels] + need[:levels]) <= cap[:, :levels]).all(axis=1)`` column by
    column (the same booleans: integer sums; a row-wise ``all`` on a 2-D slice is slow)."""
    ok = gpu[:, 0] + need[0] <= cap[:, 0]
    for lev in range(1, levels):
        ok &= gpu[:, lev] + need[lev] <= cap[:, lev]
    return ok


def _fits(data: LiquidData, loads: NodeLoads, c: int) -> np.ndarray:
    """``loads.fits(c)`` written out level by level with :func:`_levels_fit` (the
    reference :meth:`NodeLoads.fits` must agree with; the methods call ``loads.fits``)."""
    levels = int(data.c_level[c]) + 1
    ok = _levels_fit(loads.gpu, [data.c_gpus[c]] * levels, data.level_cap, levels)
    ok &= loads.cpu + data.c_cpu[c] <= data.free_cpu + EPS
    ok &= loads.ram + data.c_ram[c] <= data.free_ram + EPS
    return ok


def _fits_whole(data: LiquidData, loads: NodeLoads, j: int) -> np.ndarray:
    """[N] servers that can take every container of job j at once."""
    return loads.fits_all(*data.job_needs[j])


def best_job_plan(data: LiquidData, rnd: _Round, j: int) -> np.ndarray | None:
    """The cheapest plan for job j on the round's state (see the module docstring)."""
    sl = data.job_slices[j]
    size = sl.stop - sl.start
    lin, node_coef = _dynamic_terms(data, rnd, j)
    best, best_cost = None, np.inf
    # on one server every pair's distance is 0: the cost is the linear terms (summed over
    # the job's rows for every server: the same sums as over the servers that fit)
    costs = lin.sum(axis=0) + node_coef
    n = _cheapest(costs, _fits_whole(data, rnd.loads, j))
    if n is not None:
        best, best_cost = np.full(size, n, dtype=np.int64), float(costs[n])
    split = _split_plan(data, rnd, j, lin, node_coef)
    if split is not None:
        cost = job_cost(data, j, split, lin, node_coef)
        if cost < best_cost - 1e-12:
            best = split
    return best


def _split_plan(data: LiquidData, rnd: _Round, j: int, lin: np.ndarray,
                node_coef: np.ndarray) -> np.ndarray | None:
    """Workers first, each on its cheapest server, then each PS given its workers."""
    sl = data.job_slices[j]
    ps = data.c_ps[sl]
    idx = range(sl.start, sl.stop)
    order = [c for c, p in zip(idx, ps.tolist(), strict=True) if not p] + \
        [c for c, p in zip(idx, ps.tolist(), strict=True) if p]
    # the round's loads stay as they are: where the job's earlier containers went, the
    # fit is recomputed with them added (fits_after)
    loads = rnd.loads
    assign = rnd.assign.copy()
    nodes = np.full(len(idx), UNSET, dtype=np.int64)
    added: dict[int, list[int]] = {}
    # the per-server term: node_coef, 0 on the servers the job already uses
    coef = node_coef
    for c in order:
        ok = loads.fits(c)
        for m, here in added.items():
            ok[m] = loads.fits_after(c, m, here)
        cost = lin[c - sl.start] + coef
        # its pairs as the PS, then as the worker, whose partner is placed (pair order)
        for partners, pairs in ((data.pair_w, data.pairs_as_ps[c]),
                                (data.pair_p, data.pairs_as_worker[c])):
            if len(pairs):
                k = pairs[assign[partners[pairs]] >= 0]
                if len(k):
                    cost += data.pair_rows(k, assign[partners[k]])
        n = _cheapest(cost, ok)
        if n is None:
            return None
        added.setdefault(n, []).append(c)
        assign[c] = n
        nodes[c - sl.start] = n
        if coef is node_coef:
            coef = node_coef.copy()
        coef[n] = 0.0
    return nodes


def _cheapest(cost: np.ndarray, ok: np.ndarray) -> int | None:
    """``cand[argmin(cost[cand])]`` for ``cand = flatnonzero(ok)`` (None when empty): the
    first server of least cost among those that fit. Overwrites ``cost`` where not ok."""
    np.putmask(cost, ~ok, np.inf)  # cost[~ok] = inf, without a boolean index's cost
    n = int(cost.argmin())
    if ok[n]:
        return n
    cand = np.flatnonzero(ok)  # none fits, or every one that fits costs +inf
    return int(cand[np.argmin(cost[cand])]) if len(cand) else None


def place_jobs(data: LiquidData, rnd: _Round, jobs: list[int]) -> bool:
    """Place ``jobs`` in order by their best plan; False when one fits nowhere."""
    for j in jobs:
        plan = best_job_plan(data, rnd, j)
        if plan is None:
            return False
        sl = data.job_slices[j]
        for k, n in enumerate(plan):
            rnd.place(sl.start + k, int(n))
    return True


def jobwise_bestfit(data: LiquidData) -> np.ndarray | None:
    """The corrected best-fit: every job in queue order by its best plan, each seeing the
    GPUs the earlier jobs took."""
    rnd = _Round(data, dynamic=True)
    if not place_jobs(data, rnd, list(range(len(data.job_slices)))):
        return None
    return rnd.assign


# ----------------------------------------------------------------------------- local search
def _split_jobs(data: LiquidData, assign: np.ndarray) -> list[int]:
    """Jobs whose containers sit on more than one server."""
    return [j for j, sl in enumerate(data.job_slices) if len(np.unique(assign[sl])) > 1]


def _container_costs(data: LiquidData, assign: np.ndarray, c: int) -> np.ndarray:
    """[N] the score's terms that depend on container c's server, given the others."""
    cost = data.lin[c].copy()
    for partners, own in ((data.pair_w, data.pair_p), (data.pair_p, data.pair_w)):
        k = np.flatnonzero(own == c)
        if len(k):
            cost += data.pair_rows(k, assign[partners[k]])
    sl = data.job_slices[int(data.c_job[c])]
    others = np.delete(assign[sl], c - sl.start)
    new_server = np.ones(data.num_nodes, dtype=bool)
    new_server[others] = False
    return cost + np.where(new_server, data.node_coef, 0.0)


def local_search(data: LiquidData, assign: np.ndarray, deadline: float | None) -> np.ndarray:
    """First-improvement descent: re-place a split job whole, swap a split job with another
    job, move one container (priced by its exact change of the score)."""
    rnd = _Round(data, assign)
    value = data.score(rnd.assign)
    jobs = len(data.job_slices)
    improved = True
    while improved and (deadline is None or time.perf_counter() < deadline):
        improved = False
        for a in _split_jobs(data, rnd.assign):
            for b in [None, *range(jobs)]:
                if b == a:
                    continue
                trial = rnd.copy()
                trial.remove_job(a)
                if b is not None:
                    trial.remove_job(b)
                if place_jobs(data, trial, [a] if b is None else [b, a]):
                    v = data.score(trial.assign)
                    if v < value - 1e-12:
                        rnd, value, improved = trial, v, True
                        break
        for c in range(data.num_containers):
            here = int(rnd.assign[c])
            rnd.loads.remove(c, here)
            cost = _container_costs(data, rnd.assign, c)
            ok = rnd.loads.fits(c)
            ok[here] = True
            cand = np.flatnonzero(ok)
            n = int(cand[np.argmin(cost[cand])])
            if cost[n] < cost[here] - 1e-12:
                rnd.assign[c] = n
                value += float(cost[n] - cost[here])
                improved = True
            rnd.loads.add(c, int(rnd.assign[c]))
    return rnd.assign


# ----------------------------------------------------------------------------- GA + LS
@dataclass(frozen=True)
class GgaLsSettings:
    """Settings of ``gga-ls``: the GA's constants plus the local search."""

    population: int = 20
    tournament: int = 3
    crossover_rate: float = 0.7
    mutation_rate: float = 0.5
    stall_generations: int = 10
    max_generations: int = 200


class GgaLs:
    """The grouping GA with job-preserving operators and local search, on one instance."""

    def __init__(self, data: LiquidData, settings: GgaLsSettings,
                 rng: np.random.Generator) -> None:
        self.data, self.s, self.rng = data, settings, rng
        self.jobs = len(data.job_slices)
        data.lin  # noqa: B018 - the GA reads its rows many times: build the matrix once

    def random_plan(self) -> np.ndarray | None:
        rnd = _Round(self.data)
        order = [int(j) for j in self.rng.permutation(self.jobs)]
        return rnd.assign if place_jobs(self.data, rnd, order) else None

    def crossover(self, x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
        d = self.data
        servers = np.unique(x)
        n = int(servers[self.rng.integers(len(servers))])
        moved = sorted({int(d.c_job[c]) for c in np.flatnonzero(x == n)})
        child = _Round(d, y)
        for j in moved:
            child.remove_job(j)
        for j in moved:  # inject X's plan of these jobs where it still fits
            sl = d.job_slices[j]
            plan = x[sl]
            if all(child.loads.fits(c)[plan[c - sl.start]] for c in range(sl.start, sl.stop)):
                for k, m in enumerate(plan):
                    child.place(sl.start + k, int(m))
        hit = {int(d.c_job[c]) for c in range(d.num_containers)
               if child.assign[c] < 0}
        for j in hit:
            child.remove_job(j)
        order = [j for j in self.rng.permutation(self.jobs) if int(j) in hit]
        return child.assign if place_jobs(d, child, [int(j) for j in order]) else None

    def mutation(self, y: np.ndarray) -> np.ndarray | None:
        d = self.data
        servers = np.unique(y)
        n = int(servers[self.rng.integers(len(servers))])
        hit = sorted({int(d.c_job[c]) for c in np.flatnonzero(y == n)})
        child = _Round(d, y)
        for j in hit:
            child.remove_job(j)
        order = [hit[k] for k in self.rng.permutation(len(hit))]
        return child.assign if place_jobs(d, child, order) else None

    def run(self, deadline: float | None) -> tuple[np.ndarray | None, dict]:
        d = self.data
        by_size = sorted(range(self.jobs), key=lambda j: (-int(d.c_gpus[d.job_slices[j]].sum()), j))
        packed = _Round(d)
        seeds = [jobwise_bestfit(d),
                 packed.assign if place_jobs(d, packed, by_size) else None]
        pop = seeds + [self.random_plan() for _ in range(self.s.population - len(seeds))]
        fit = np.array([np.inf if a is None else d.score(a) for a in pop])
        k = int(np.argmin(fit))
        if not np.isfinite(fit[k]):
            return None, {"generations": 0, "stopped_by": "no plan"}
        best = local_search(d, pop[k], deadline)
        best_value = d.score(best)
        history = [best_value]
        gen, since, stopped = 0, 0, "stall"
        while True:
            if since >= self.s.stall_generations:
                break
            if gen >= self.s.max_generations:
                stopped = "generations"
                break
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "time"
                break
            gen += 1
            children = [best]
            while len(children) < self.s.population:
                a = pop[self._select(fit)]
                child = a
                if a is not None and self.rng.random() < self.s.crossover_rate:
                    b = pop[self._select(fit)]
                    if b is not None:
                        child = self.crossover(a, b)
                if child is not None and self.rng.random() < self.s.mutation_rate:
                    child = self.mutation(child)
                children.append(child)
            pop = children
            fit = np.array([np.inf if a is None else d.score(a) for a in pop])
            k = int(np.argmin(fit))
            candidate = local_search(d, pop[k], deadline) if pop[k] is not None else None
            value = np.inf if candidate is None else d.score(candidate)
            if value < best_value - 1e-12:
                best, best_value, since = candidate, value, 0
                pop[k], fit[k] = candidate, value
            else:
                since += 1
            history.append(best_value)
        return best, {"generations": gen, "stopped_by": stopped, "history": history,
                      "population": self.s.population}

    def _select(self, fit: np.ndarray) -> int:
        pick = self.rng.choice(len(fit), size=self.s.tournament, replace=True)
        return int(pick[np.argmin(fit[pick])])


# ----------------------------------------------------------------------------- methods
def _output(data: LiquidData, assign: np.ndarray | None, message: str,
            extra: dict | None = None) -> MethodOutput:
    if assign is None:
        return MethodOutput(None, Status.NO_SOLUTION, message=message, extra=extra or {})
    return MethodOutput(decision_from_assignment(data, assign), Status.FEASIBLE,
                        extra=extra or {})


def run_gga_ls(instance: Instance, *, backend=None, time_limit: float | None = 1.0,
               seed: int = 0, **options) -> MethodOutput:
    """The GA with job-preserving operators and local search; options: GgaLsSettings."""
    check_options(options, tuple(GgaLsSettings.__dataclass_fields__))
    check_option_values(options, GGA_RULES)
    data = liquid_data(instance)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    assign, info = GgaLs(data, GgaLsSettings(**options),
                         np.random.default_rng(seed)).run(deadline)
    return _output(data, assign, "no feasible plan found", info)


register_method(MethodSpec(
    "liquid", "gga-ls", "heuristic", run_gga_ls,
    summary="grouping GA with job-preserving repair, best-fit seed and local search"))
