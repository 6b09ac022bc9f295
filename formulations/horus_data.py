"""Horus model input: certified candidate (job, GPU) pairs, free capacities, GPU twins.

**Candidate reduction (exact).** Let D = sum_j RQ_j, the GPU shares the round can place.
Call a server *tight* when the new jobs could exhaust its free CPU or RAM (sum_j
min(RQ_j, GPUs of n) * need_j exceeds the room), else *loose*. A share placed on GPU h
*blocks*, for job j, the GPU h if its server is loose, or the whole server if it is tight.
Job j's candidates K_j are a prefix of its feasible GPUs (memory and one share of CPU/RAM
fit) sorted by cost, extended until its *units* — tight servers it touches plus GPUs it
has on loose servers — reach D (or every feasible GPU is in). Exchange argument: if a
solution gives j a GPU g outside K_j, the other D - 1 shares block at most D - 1 units, so
some unit of K_j holds no new share; its candidate c takes j's share alone, exactly as
before the round, at cost(j, c) <= cost(j, g) (paper model; in the colocation model the
saving on g is at least cost(j, g) because f is convex). Each move removes one
non-candidate share, so an optimum over the candidates is an optimum of the full model.
The certificate per run (``extra["certificate"]``) records D and, per job, its units; the
reduction starts from the naive D cheapest GPUs and enlarges every job whose units fall
short (the naive rule is wrong when CPU or RAM binds on a server holding cheap GPUs).

For the colocation cost model it also bounds the cumulative utilization each GPU can reach
(the cutting planes of :mod:`dlsched.formulations.horus` stop there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.problems.horus import HorusCosts, horus_costs
from dlsched.state import EPS


@dataclass(frozen=True)
class Certificate:
    """Why the candidate pairs suffice (module docstring): one entry per job."""

    demand: int  # D, the GPU shares the round can place
    units: tuple[int, ...]  # per job: tight servers + loose-server GPUs among candidates
    complete: tuple[bool, ...]  # per job: every feasible GPU is a candidate
    prefix: tuple[bool, ...]  # per job: no non-candidate is cheaper than a candidate
    enlarged: tuple[int, ...]  # jobs whose naive D cheapest GPUs were not enough
    candidate_pairs: int
    feasible_pairs: int

    @property
    def failing(self) -> tuple[int, ...]:
        """Jobs for which the exchange argument does not hold."""
        return tuple(j for j, (u, c, p) in enumerate(
            zip(self.units, self.complete, self.prefix, strict=True))
            if not (c or (p and u >= self.demand)))

    @property
    def holds(self) -> bool:
        return not self.failing

    def to_dict(self) -> dict[str, Any]:
        return {"demand": self.demand, "holds": self.holds, "enlarged_jobs": len(self.enlarged),
                "candidate_pairs": self.candidate_pairs, "feasible_pairs": self.feasible_pairs,
                "min_units": min(self.units, default=0)}


def certify(instance: Instance, costs: HorusCosts, feasible: np.ndarray, tight: np.ndarray,
            pairs: list[tuple[int, int]], enlarged: tuple[int, ...] = ()) -> Certificate:
    """Check the exchange argument for any candidate pairs (module docstring)."""
    node_of = instance.cluster.gpu_node
    demand = int(sum(j.num_gpus for j in instance.jobs))
    chosen: dict[int, list[int]] = {j: [] for j in range(len(instance.jobs))}
    for j, g in pairs:
        chosen[j].append(g)
    units, complete, prefix = [], [], []
    for j, gpus in chosen.items():
        mask = np.zeros(feasible.shape[1], dtype=bool)
        mask[gpus] = True
        rest = feasible[j] & ~mask
        units.append(_units(np.asarray(gpus, dtype=np.int64), node_of, tight))
        complete.append(not rest.any())
        worst = costs.cost[j, gpus].max() if gpus else -np.inf
        prefix.append(bool(not rest.any() or worst <= costs.cost[j, rest].min()))
    return Certificate(demand, tuple(units), tuple(complete), tuple(prefix), tuple(enlarged),
                       len(pairs), int(feasible.sum()))


@dataclass(frozen=True)
class HorusData:
    """Model input shared by every backend."""

    instance: Instance
    costs: HorusCosts
    pairs: list[tuple[int, int]]  # candidate (job, gpu) pairs
    free_mem: np.ndarray
    free_cpu: np.ndarray
    free_ram: np.ndarray
    colocation: bool
    util_hi: np.ndarray  # [G] largest reachable cumulative utilization (percent)
    certificate: Certificate
    symmetric: list[tuple[int, int]] = field(default_factory=list)  # consecutive twins


def feasible_matrix(instance: Instance, costs: HorusCosts) -> np.ndarray:
    """[J, G]: one share of job j fits GPU g alone (memory, and CPU/RAM of its server)."""
    c = instance.cluster
    util, mem = instance.gpu_usage
    cpu, ram = instance.node_usage
    free_mem = c.gpu_mem_gb - mem
    jobs = instance.jobs
    need_mem = np.array([j.gpu_mem_gb or 0.0 for j in jobs], dtype=float)
    fits = (free_mem[None, :] >= need_mem[:, None] - EPS) & np.isfinite(costs.cost)
    room = np.ones((len(jobs), c.num_nodes), dtype=bool)
    for free, attr in ((c.node_cpu - cpu, "cpu_per_gpu"), (c.node_ram_gb - ram, "ram_gb_per_gpu")):
        need = np.array([getattr(j, attr) for j in jobs], dtype=float)
        room &= free[None, :] + EPS >= need[:, None]
    return fits & room[:, c.gpu_node]


def tight_servers(instance: Instance, free_cpu: np.ndarray, free_ram: np.ndarray) -> np.ndarray:
    """[N] True where the round's new jobs could exhaust the server's free CPU or RAM."""
    c = instance.cluster
    per_node = np.bincount(c.gpu_node, minlength=c.num_nodes)
    tight = np.zeros(c.num_nodes, dtype=bool)
    for free, attr in ((free_cpu, "cpu_per_gpu"), (free_ram, "ram_gb_per_gpu")):
        load = np.zeros(c.num_nodes)
        for job in instance.jobs:
            load += np.minimum(job.num_gpus, per_node) * getattr(job, attr)
        tight |= load > free + EPS
    return tight


def _units(gpus: np.ndarray, node_of: np.ndarray, tight: np.ndarray) -> int:
    nodes = node_of[gpus]
    on_tight = tight[nodes]
    return int(len(np.unique(nodes[on_tight])) + np.count_nonzero(~on_tight))


@dataclass(frozen=True)
class Candidates:
    """The (job, GPU) pairs that get a variable, and why they suffice."""

    pairs: list[tuple[int, int]]
    certificate: Certificate


def candidate_pairs(instance: Instance, costs: HorusCosts, feasible: np.ndarray,
                    tight: np.ndarray, *, reduce: bool = True) -> Candidates:
    """Per job, the cheapest feasible GPUs whose units reach D (module docstring).

    Starts from the naive D cheapest (ties: spread over servers) and enlarges a job's
    prefix until the certificate holds for it. ``reduce=False`` keeps every feasible pair.
    """
    node_of = instance.cluster.gpu_node
    demand = int(sum(j.num_gpus for j in instance.jobs))
    pairs: list[tuple[int, int]] = []
    enlarged = []
    for j in range(len(instance.jobs)):
        gpus = np.flatnonzero(feasible[j])
        if not reduce or len(gpus) <= demand:
            pairs.extend((j, int(g)) for g in gpus)
            continue
        # by cost; ties: first GPU of each server before second ones (spreads servers)
        cost = costs.cost[j, gpus]
        rank = _rank_within_server(gpus, cost, node_of)
        order = gpus[np.lexsort((gpus, rank, cost))]
        size = demand
        if _units(order[:size], node_of, tight) < demand:
            enlarged.append(j)
            while size < len(order) and _units(order[:size], node_of, tight) < demand:
                size = min(len(order), size + max(demand, size // 2))
            lo, hi = demand, size  # the shortest prefix that holds
            while lo < hi:
                mid = (lo + hi) // 2
                if _units(order[:mid], node_of, tight) >= demand:
                    hi = mid
                else:
                    lo = mid + 1
            size = hi
        pairs.extend((j, int(g)) for g in np.sort(order[:size]))
    return Candidates(pairs, certify(instance, costs, feasible, tight, pairs, tuple(enlarged)))


def _rank_within_server(gpus: np.ndarray, cost: np.ndarray, node_of: np.ndarray) -> np.ndarray:
    """0 for a server's cheapest listed GPU, 1 for its second, … (ties by index)."""
    order = np.lexsort((gpus, cost, node_of[gpus]))
    nodes = node_of[gpus][order]
    start = np.r_[0, np.flatnonzero(np.diff(nodes)) + 1]
    run = np.arange(len(order)) - np.repeat(start, np.diff(np.r_[start, len(order)]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = run
    return rank


def _twins(instance: Instance, pairs: list[tuple[int, int]], free_mem: np.ndarray
           ) -> list[tuple[int, int]]:
    """Consecutive interchangeable GPUs: same server, type, capacity, use, candidate jobs."""
    c = instance.cluster
    util, mem = instance.gpu_usage
    jobs_of: dict[int, list[int]] = {}
    for j, g in pairs:
        jobs_of.setdefault(g, []).append(j)
    classes: dict[tuple, list[int]] = {}
    for g, js in jobs_of.items():
        key = (int(c.gpu_node[g]), c.gpu_type[g], float(c.gpu_mem_gb[g]), float(util[g]),
               float(mem[g]), tuple(js))
        classes.setdefault(key, []).append(g)
    out = []
    for members in classes.values():
        members.sort()
        out.extend(zip(members, members[1:], strict=False))
    return out


def horus_data(instance: Instance, *, reduce: bool = True, symmetry: bool = True,
               extra_pairs: list[tuple[int, int]] = ()) -> HorusData:
    """Candidate pairs with their certificate, free capacities, utilization ranges.

    ``extra_pairs``: feasible (job, GPU) pairs to add to the model beyond the certified
    candidates (a warm start's: without them the reduced model could not take it). The
    certificate is the candidates' own; more pairs keep it true (the exchange argument
    only needs the cheapest prefix among a job's pairs).
    """
    costs = horus_costs(instance)
    c = instance.cluster
    util, mem = instance.gpu_usage
    cpu, ram = instance.node_usage
    free_mem, free_cpu, free_ram = c.gpu_mem_gb - mem, c.node_cpu - cpu, c.node_ram_gb - ram
    feasible = feasible_matrix(instance, costs)
    tight = tight_servers(instance, free_cpu, free_ram)
    chosen = candidate_pairs(instance, costs, feasible, tight, reduce=reduce)
    pairs, cert = chosen.pairs, chosen.certificate
    known = set(pairs)
    extra = sorted({(j, g) for j, g in extra_pairs if feasible[j, g]} - known)
    pairs = pairs + extra if extra else pairs
    colocation = costs.params.cost_model == "colocation"
    util_hi = costs.base_util.copy()
    if colocation:
        _require_whole_percents(instance, costs)
        util_hi = _reachable_util(instance, costs, pairs, free_mem)
    twins = _twins(instance, pairs, free_mem) if symmetry else []
    return HorusData(instance, costs, pairs, free_mem, free_cpu, free_ram, colocation,
                     util_hi, cert, twins)


def _require_whole_percents(instance: Instance, costs: HorusCosts) -> None:
    """Raise InputError naming the first pending job, or running job on a GPU, whose GPU
    utilization (summed per GPU for running jobs) is not a whole percent."""
    def fractional(values: np.ndarray) -> np.ndarray:
        return np.flatnonzero(~np.isclose(values, np.round(values)))

    bad_jobs, bad_gpus = fractional(costs.job_util), fractional(costs.base_util)
    if not bad_jobs.size and not bad_gpus.size:
        return
    if bad_jobs.size:
        field = f"jobs[{bad_jobs[0]}].gpu_util"
    else:
        gpu = instance.cluster.gpu_ids[bad_gpus[0]]
        on_gpu = [i for i, r in enumerate(instance.running) if gpu in r.gpus]
        whole = [i for i in on_gpu if float(instance.running[i].gpu_util).is_integer()]
        culprit = next((i for i in on_gpu if i not in whole), on_gpu[0] if on_gpu else None)
        field = "running" if culprit is None else f"running[{culprit}].gpu_util"
    raise InputError(
        "the exact colocation model needs whole-percent GPU utilizations", field=field,
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


__all__ = ["Candidates", "Certificate", "HorusData", "candidate_pairs", "certify",
           "feasible_matrix", "horus_data", "tight_servers"]
