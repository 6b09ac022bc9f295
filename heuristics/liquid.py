"""Liquid heuristics: best-fit (Alg. 1), the grouping genetic algorithm (Sec. 5.3), baselines.

All methods work on a node-level assignment (container → server) kept feasible by
:class:`NodeLoads` (GPU counts per memory level, CPU, RAM); concrete GPUs are chosen at the
end by ``dlsched.problems.liquid.assign_gpus``. A method that cannot place the whole batch
returns ``Status.NO_SOLUTION`` and no decision (a Liquid batch is placed whole).

- the container-by-container best-fit rule (Alg. 1 read literally: containers in an order
  interleaving PS and workers, each to the server of least partial score, ties to the
  lowest index; line 18 of Alg. 1 — removing the chosen server from the candidates — is
  not copied). It is kept only as the GA's optional ``seed_bestfit``: it sends every PS to
  server 0 (a PS placed before its workers costs the same everywhere), so the registered
  ``bestfit`` method is the job-wise one of ``heuristics.liquid_jobwise`` (computed by
  ``heuristics.liquid_bestfit``).
- ``gga`` (Sec. 5.3, Figs. 7-9; constants of the Go code): a plan is an ordered list of
  servers with their containers (Fig. 7). Population 30 + C/2, tournament of 3, crossover
  rate 0.7, mutation rate 0.5, one elite; fitness = objective + w·(servers used) (Eq. 8's
  NumNU; w = 1 for the paper objective, 1/C for the implementation's); stop after 30 + C
  generations without improvement, ``max_generations`` or ``time_limit``. Crossover
  (Fig. 8) inserts one server of parent X, with its containers, at a random location of
  Y's list, deletes Y's servers holding any of them (and Y's own copy of that server) and
  re-places the other containers of the deleted servers by first-fit along the child's
  list, in listing order. Mutation (Fig. 9) deletes one server of the plan and re-places
  its containers by first-fit on the others. The repair uses only the plan's remaining
  servers (``repair="plan"``, the paper's "remaining computing nodes"); a container that
  fits none makes the plan invalid (fitness +inf). ``repair="cluster"`` (the other
  reading) then opens the first empty server. Initial population: first-fit in queue
  order over the servers in index order, then alternately over a random server order and
  random-fit; optionally best-fit. docs/liquid.md lists the readings.
- baselines: ``random`` (a random server that fits), ``spread`` (even-distributed: the
  server holding fewest containers of this batch), ``firstfit`` (lowest-index server),
  ``pack`` (a server already holding the job if any, else the one with fewest free GPUs).

Reproducibility: every random draw comes from one ``numpy.random.Generator(seed)``; a run
stopped by generations or stalls is identical for a seed. A run stopped by ``time_limit``
depends on the machine's speed (how many generations fit), so it is not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.method_support import heuristic_method
from dlsched.problems.liquid import LiquidData, decision_from_assignment, liquid_data
from dlsched.registry import (
    BOOL,
    MethodSpec,
    OptionRule,
    check_option_values,
    check_options,
    register_method,
)
from dlsched.result import MethodOutput, Status

from .liquid_loads import NodeLoads

UNSET = -1


class Unplaceable(Exception):
    """A container fits on no server given the containers placed before it."""

    def __init__(self, data: LiquidData, c: int) -> None:
        job = data.instance.jobs[data.c_job[c]].id
        super().__init__(f"container {data.containers[c].id} of job {job} fits on no server")


# ----------------------------------------------------------------------------- greedy rules
def interleaved_order(data: LiquidData) -> list[int]:
    """Containers job by job, each job's PS and workers alternating (ps0, w0, ps1, w1, ...)."""
    order: list[int] = []
    for sl in data.job_slices:
        idx = np.arange(sl.start, sl.stop)
        ps, workers = list(idx[data.c_ps[idx]]), list(idx[~data.c_ps[idx]])
        for k in range(max(len(ps), len(workers))):
            order.extend(int(c) for c in (ps[k:k + 1] + workers[k:k + 1]))
    return order


def marginal_cost(data: LiquidData, assign: np.ndarray, c: int) -> np.ndarray:
    """[N] increase of the partial plan's objective if container c goes to each server."""
    cost = data.lin[c].copy()
    for partners, own in ((data.pair_w, data.pair_p), (data.pair_p, data.pair_w)):
        k = np.flatnonzero((own == c) & (assign[partners] >= 0))
        if len(k):
            cost += data.pair_rows(k, assign[partners[k]])
    same_job = np.arange(len(assign))[(data.c_job == data.c_job[c]) & (assign >= 0)]
    new_node = np.ones(data.num_nodes, dtype=bool)
    new_node[assign[same_job]] = False
    return cost + np.where(new_node, data.node_coef, 0.0)


def greedy(data: LiquidData, order: list[int], rule: str,
           rng: np.random.Generator | None = None) -> np.ndarray:
    """Place containers one by one in ``order`` by ``rule``; raises Unplaceable."""
    assign = np.full(data.num_containers, UNSET, dtype=np.int64)
    loads = NodeLoads.empty(data)
    for c in order:
        ok = loads.fits(c)
        cand = np.flatnonzero(ok)
        if not len(cand):
            raise Unplaceable(data, c)
        if rule == "bestfit":
            n = cand[np.argmin(marginal_cost(data, assign, c)[cand])]
        elif rule == "firstfit":
            n = cand[0]
        elif rule == "random":
            n = cand[rng.integers(len(cand))]
        elif rule == "spread":
            n = cand[np.lexsort((cand, -loads.free_gpus()[cand], loads.count[cand]))[0]]
        elif rule == "pack":
            mine = assign[(data.c_job == data.c_job[c]) & (assign >= 0)]
            own = np.isin(cand, mine)
            n = cand[np.lexsort((cand, loads.free_gpus()[cand], ~own))[0]]
        else:
            raise ValueError(f"unknown rule {rule!r}")
        assign[c] = int(n)
        loads.add(c, int(n))
    return assign


# ----------------------------------------------------------------------------- the GGA
REPAIRS = ("plan", "cluster")


@dataclass(frozen=True)
class GgaSettings:
    """Constants of the grouping GA (defaults: the authors' implementation).

    ``repair``: where the first-fit repair may put an evicted container. ``"plan"`` (the
    paper's "remaining computing nodes"): the plan's nodes that the operator did not delete;
    ``"cluster"``: then any empty server in index order, the ones just deleted last.
    """

    population: int | None = None  # default 30 + C // 2
    tournament: int = 3
    crossover_rate: float = 0.7
    mutation_rate: float = 0.5
    stall_generations: int | None = None  # default 30 + C
    max_generations: int = 10_000
    node_weight: float | None = None  # weight of NumNU; default 1 (paper) or 1/C
    seed_bestfit: bool = False
    repair: str = "plan"


@dataclass(frozen=True)
class Plan:
    """One chromosome (Fig. 7): container -> server, and the plan's servers in sequence."""

    assign: np.ndarray
    order: tuple[int, ...]

    @classmethod
    def of(cls, assign: np.ndarray, sequence) -> Plan:
        """The plan's order: the used servers in the order they appear in ``sequence``."""
        used = set(np.unique(assign).tolist())
        return cls(assign, tuple(int(n) for n in dict.fromkeys(sequence) if n in used))


class Gga:
    """The grouping genetic algorithm on one instance."""

    def __init__(self, data: LiquidData, settings: GgaSettings, rng: np.random.Generator):
        self.data = data
        self.s = settings
        self.rng = rng
        c = data.num_containers
        self.size = settings.population or 30 + c // 2
        self.stall = settings.stall_generations or 30 + c
        w = settings.node_weight
        if w is None:
            w = 1.0 if data.params.objective == "paper" else 1.0 / max(1, c)
        self.node_weight = w
        self.counts = {"crossover": 0, "crossover_invalid": 0, "mutation": 0,
                       "mutation_invalid": 0}

    def fitness(self, plan: Plan | None) -> float:
        """Objective + node_weight · servers used; infeasible (None) is +inf (worst)."""
        if plan is None:
            return float("inf")
        a = plan.assign
        return self.data.score(a) + self.node_weight * len(np.unique(a))

    def first_fit(self, assign: np.ndarray, order: list[int], evicted: list[int],
                  deleted: set[int]) -> Plan | None:
        """Re-place ``evicted`` in turn on the first server of ``order`` that fits them
        (``repair="cluster"``: then the first empty server, those in ``deleted`` last);
        None if one fits nowhere."""
        loads = NodeLoads.of(self.data, assign)
        last = np.zeros(self.data.num_nodes, dtype=bool)
        last[list(deleted)] = True
        for c in evicted:
            ok = loads.fits(c)
            n = next((m for m in order if ok[m]), None)
            if n is None and self.s.repair == "cluster":
                idle = np.flatnonzero(ok & (loads.count == 0))
                if len(idle):
                    n = int(idle[np.argsort(last[idle], kind="stable")[0]])
                    order.append(n)
            if n is None:
                return None
            assign[c] = n
            loads.add(c, n)
        return Plan.of(assign, order)

    def evicted(self, plan: Plan, nodes: set[int], keep: np.ndarray) -> list[int]:
        """Containers of ``plan`` on ``nodes`` not in ``keep``, in the plan's listing order."""
        a = plan.assign
        out = []
        for n in plan.order:
            if n in nodes:
                out += [int(c) for c in np.flatnonzero(a == n) if not keep[c]]
        return out

    def crossover(self, x: Plan, y: Plan) -> Plan | None:
        """Fig. 8: X's node n (with its containers) goes into Y at a random location; Y's
        nodes holding one of them (and Y's own n) are deleted; first-fit repair."""
        n = x.order[self.rng.integers(len(x.order))]
        group = x.assign == n
        deleted = set(y.assign[group].tolist()) | {n}
        evicted = self.evicted(y, deleted, group)
        order = [m for m in y.order if m not in deleted]
        order.insert(int(self.rng.integers(len(order) + 1)), n)
        child = y.assign.copy()
        child[np.isin(child, list(deleted))] = UNSET
        child[group] = n
        self.counts["crossover"] += 1
        out = self.first_fit(child, order, evicted, deleted - {n})
        self.counts["crossover_invalid"] += out is None
        return out

    def mutation(self, y: Plan) -> Plan | None:
        """Fig. 9: delete a random node of Y; first-fit its containers on the others."""
        n = y.order[self.rng.integers(len(y.order))]
        evicted = [int(c) for c in np.flatnonzero(y.assign == n)]
        child = y.assign.copy()
        child[evicted] = UNSET
        self.counts["mutation"] += 1
        out = self.first_fit(child, [m for m in y.order if m != n], evicted, {n})
        self.counts["mutation_invalid"] += out is None
        return out

    def fill(self, sequence: np.ndarray) -> Plan:
        """First-fit of the batch in queue order over the servers in ``sequence``."""
        data = self.data
        rank = np.empty(data.num_nodes, dtype=np.int64)
        rank[sequence] = np.arange(len(sequence))
        assign = np.full(data.num_containers, UNSET, dtype=np.int64)
        loads = NodeLoads.empty(data)
        for c in range(data.num_containers):
            cand = np.flatnonzero(loads.fits(c))
            if not len(cand):
                raise Unplaceable(data, c)
            n = int(cand[np.argmin(rank[cand])])
            assign[c] = n
            loads.add(c, n)
        return Plan.of(assign, sequence.tolist())

    def initial(self) -> list[Plan | None]:
        """First-fit (server index order, then random server orders) and random-fit,
        alternately; containers in queue order; optionally the best-fit plan."""
        data, out = self.data, []
        base = list(range(data.num_containers))
        for k in range(self.size):
            try:
                if k == 0:
                    out.append(self.fill(np.arange(data.num_nodes)))
                elif k == 1 and self.s.seed_bestfit:
                    a = greedy(data, interleaved_order(data), "bestfit")
                    out.append(Plan.of(a, range(data.num_nodes)))
                elif k % 2:
                    out.append(self.fill(self.rng.permutation(data.num_nodes)))
                else:
                    a = greedy(data, base, "random", self.rng)
                    out.append(Plan.of(a, a.tolist()))
            except Unplaceable:
                out.append(None)
        return out

    def select(self, fit: np.ndarray) -> int:
        pick = self.rng.choice(len(fit), size=self.s.tournament, replace=True)
        return int(pick[np.argmin(fit[pick])])

    def run(self, deadline: float | None) -> tuple[np.ndarray | None, dict]:
        pop = self.initial()
        fit = np.array([self.fitness(a) for a in pop])
        best = int(np.argmin(fit))
        best_fit, best_plan = fit[best], pop[best]
        history = [float(best_fit)]
        since, gen, stopped = 0, 0, "stall"
        while True:
            if since >= self.stall:
                break
            if gen >= self.s.max_generations:
                stopped = "generations"
                break
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "time"
                break
            gen += 1
            children: list[Plan | None] = [best_plan]  # elitism
            while len(children) < self.size:
                a = pop[self.select(fit)]
                if a is None:
                    children.append(None)
                    continue
                child: Plan | None = a
                if self.rng.random() < self.s.crossover_rate:
                    b = pop[self.select(fit)]
                    if b is not None:
                        child = self.crossover(a, b)
                if child is not None and self.rng.random() < self.s.mutation_rate:
                    child = self.mutation(child)
                children.append(child)
            pop = children
            fit = np.array([self.fitness(a) for a in pop])
            k = int(np.argmin(fit))
            if fit[k] < best_fit - 1e-12:
                best_fit, best_plan, since = fit[k], pop[k], 0
            else:
                since += 1
            history.append(float(best_fit))
        info = {"generations": gen, "stopped_by": stopped, "history": history,
                "population": self.size, "fitness": float(best_fit), **self.counts}
        if not np.isfinite(best_fit):
            return None, info
        return best_plan.assign, info


# ----------------------------------------------------------------------------- methods
def _output(data: LiquidData, assign: np.ndarray | None, message: str = "",
            extra: dict | None = None) -> MethodOutput:
    if assign is None:
        return MethodOutput(None, Status.NO_SOLUTION, message=message, extra=extra or {})
    return MethodOutput(decision_from_assignment(data, assign), Status.FEASIBLE,
                        message=message, extra=extra or {})


def _greedy_method(rule: str):
    def run(instance: Instance, *, seed: int = 0) -> MethodOutput:
        data = liquid_data(instance)
        order = interleaved_order(data) if rule == "bestfit" else list(
            range(data.num_containers))
        rng = np.random.default_rng(seed)
        try:
            return _output(data, greedy(data, order, rule, rng))
        except Unplaceable as exc:
            return _output(data, None, str(exc))

    return heuristic_method(run)


GGA_RULES: dict[str, OptionRule] = {
    "population": ("int", 2, 10_000), "tournament": ("int", 1, 10_000),
    "crossover_rate": ("float", 0, 1), "mutation_rate": ("float", 0, 1),
    "stall_generations": ("int", 1, 10_000_000), "max_generations": ("int", 0, 10_000_000),
    "node_weight": ("float", 0, 1e6), "seed_bestfit": BOOL, "repair": ("str", None, None)}
"""Values the grouping GA's options may take (also those of ``gga-ls``)."""


def run_gga(instance: Instance, *, backend=None, time_limit: float | None = None,
            seed: int = 0, **options) -> MethodOutput:
    """The grouping GA; options are the fields of :class:`GgaSettings`."""
    allowed = tuple(GgaSettings.__dataclass_fields__)
    check_options(options, allowed)
    check_option_values(options, GGA_RULES, ("population", "stall_generations", "node_weight"))
    if options.get("repair", "plan") not in REPAIRS:
        raise InputError(f"repair = {options['repair']!r}", field="options.repair",
                         fix="use " + " or ".join(REPAIRS))
    settings = GgaSettings(**options)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    data = liquid_data(instance)
    assign, info = Gga(data, settings, np.random.default_rng(seed)).run(deadline)
    message = "" if assign is not None else "no feasible plan in the population"
    return _output(data, assign, message, info)


for _name, _kind, _summary in (
    ("random", "baseline", "each container to a random server that fits"),
    ("spread", "baseline", "even-distributed: the server holding fewest containers"),
    ("firstfit", "baseline", "each container to the lowest-index server that fits"),
    ("pack", "baseline", "the job's own servers first, then the fullest server"),
):
    register_method(MethodSpec("liquid", _name, _kind, _greedy_method(_name), summary=_summary))
register_method(MethodSpec("liquid", "gga", "heuristic", run_gga,
                           summary="grouping genetic algorithm (Sec. 5.3, Eq. 8)"))
