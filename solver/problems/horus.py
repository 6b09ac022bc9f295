"""Horus: interference-aware co-location of pending jobs on GPUs (Yeung et al., TPDS 2021).

Cost of job j on GPU g (Eqs. 7-10), with utilizations in percent and f on fractions:

    Cost[j,g] = w_mem * (UR_mem[g] + GMem[j]) / CP_mem[g]
              + w_util * f_type(g)((UR_util[g] + GUtil[j]) / 100)

f is linear up to 100 % cumulative utilization and quadratic above (the paper's footnotes
give the quadratics for GTX 1080 and RTX 2080). Our reading of the linear part: the line
through the origin and the quadratic's value at 100 %, which keeps f continuous, increasing
and convex (``InterferenceFunction.check_convex``).

Objective ("paper" cost model): sum of Cost over placed (job, GPU) pairs plus
``unplaced_penalty`` per GPU request of every job left waiting (a batch need not fit
whole). The default penalty exceeds the largest possible total placement cost, so every
method's objective ranks first by GPU requests placed, then by cost.

"colocation" cost model (beyond the paper): the paper's cost is measured against the state
before the round, so two pending jobs can land on one idle GPU at no modeled interference.
This variant charges ``w_util * [f(U_g) - f(UR_g)]`` on each GPU's final cumulative
utilization U_g instead of the per-job increments, plus ``w_util * f(UR_g)`` per job put
on a busy GPU:

    cost = sum_{j,g} x[j,g] (w_mem * mem[j,g] + w_util * f(UR_g))
           + w_util * sum_g [f(U_g) - f(UR_g)]

It equals the paper's cost whenever no GPU receives two jobs in the round, and is larger
otherwise (f is convex with f(0) = 0, hence superadditive).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..decision import Decision
from ..errors import InputError
from ..instance import Instance
from .base import Problem, register_problem
from .horus_params import (
    BUILTIN_INTERFERENCE,
    HorusParams,
    InterferenceFunction,
    parse_horus_params,
)


@dataclass(frozen=True)
class HorusCosts:
    """Everything the Horus objective needs, as arrays over (pending job, GPU)."""

    params: HorusParams
    cost: np.ndarray | None  # [J, G] paper cost of one share of job j on GPU g (inf: cannot)
    base_interference: np.ndarray  # [G] w_util * f(UR_util[g])
    base_util: np.ndarray  # [G] UR_util in percent
    job_util: np.ndarray  # [J] GUtil in percent
    job_gpus: np.ndarray  # [J] requested GPUs
    functions: Sequence[InterferenceFunction]  # [G]
    penalty: float

    def f(self, g: int, util_pct: float) -> float:
        return float(self.functions[g](util_pct / 100.0))


def horus_costs(instance: Instance, *, matrix: bool = True) -> HorusCosts:
    """Cost matrix and penalty of a Horus instance (shared by models, heuristics, evaluator).
    ``matrix=False`` leaves the [jobs, GPUs] matrix out (``cost`` None): the evaluator
    computes only the entries a decision uses, with :func:`share_costs` (elementwise)."""
    p = parse_horus_params(instance.params)
    c = instance.cluster
    util, mem = instance.gpu_usage
    cap = c.gpu_mem_gb
    job_mem = np.array([j.gpu_mem_gb for j in instance.jobs], dtype=float)
    job_util = np.array([j.gpu_util for j in instance.jobs], dtype=float)
    job_gpus = np.array([j.num_gpus for j in instance.jobs], dtype=np.int64)
    functions = _GpuFunctions(p.interference, c.gpu_type)
    cost = share_costs(p, c.gpu_type, cap, util, mem, job_util, job_mem) if matrix else None
    base = np.empty(len(util))
    for name, cols in _type_columns(c.gpu_type):  # one vectorized call per GPU type
        base[cols] = p.interference[name](util[cols] / 100.0)
    base = p.w_util * base
    penalty = (
        p.unplaced_penalty
        if p.unplaced_penalty is not None
        else _default_penalty(p, instance, functions, job_mem, job_util, job_gpus)
    )
    return HorusCosts(p, cost, base, util, job_util, job_gpus, functions, penalty)


class _GpuFunctions(Sequence):
    """f of each GPU (its type's), looked up when read: no per-GPU tuple per call."""

    def __init__(self, interference: Mapping[str, InterferenceFunction],
                 gpu_type: tuple[str, ...]) -> None:
        self._interference, self._gpu_type = interference, gpu_type

    def __len__(self) -> int:
        return len(self._gpu_type)

    def __getitem__(self, g):  # type: ignore[override]
        if isinstance(g, slice):
            return tuple(self._interference[t] for t in self._gpu_type[g])
        return self._interference[self._gpu_type[g]]


@lru_cache(maxsize=16)
def _type_columns_of(gpu_type: tuple[str, ...]) -> tuple[tuple[str, np.ndarray], ...]:
    types = np.asarray(gpu_type)
    return tuple((name, types == name) for name in sorted(set(gpu_type)))


_LAST_TYPES: tuple = (None, ())  # the last gpu_type tuple asked for and its columns


def _type_columns(gpu_type: tuple[str, ...]) -> tuple[tuple[str, np.ndarray], ...]:
    """(GPU type, boolean column mask) per type present, computed once per cluster.

    The cluster's own tuple is usually asked again and again (a heuristic's per-job costs):
    it is recognized by identity, without hashing its G entries for the cache."""
    global _LAST_TYPES
    last = _LAST_TYPES  # read once: another thread may replace it
    if last[0] is gpu_type:
        return last[1]
    out = _type_columns_of(gpu_type)
    _LAST_TYPES = (gpu_type, out)
    return out


def share_costs(
    p: HorusParams,
    gpu_type: tuple[str, ...],
    cap: np.ndarray,
    util: np.ndarray,
    mem: np.ndarray,
    job_util: np.ndarray,
    job_mem: np.ndarray,
    gpus: np.ndarray | None = None,
) -> np.ndarray:
    """Eq. 7 for one GPU share of each job on each GPU, given the GPUs' current use.

    Returns a [jobs, GPUs] matrix; ``inf`` where a GPU has no memory and the job needs some.
    With ``gpus`` (GPU indices), only those columns, in that order (the same numbers: the
    formula is elementwise).
    """
    if gpus is not None:
        cap, util, mem = cap[gpus], util[gpus], mem[gpus]
    need = mem[None, :] + job_mem[:, None]
    if (cap > 0).all():  # the usual case: the same quotients without the masks
        mem_ratio = need / cap[None, :]
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            mem_ratio = np.where(
                cap[None, :] > 0,
                need / np.where(cap > 0, cap, 1.0)[None, :],
                np.where(need > 0, np.inf, 0.0),
            )
    cum = (util[None, :] + job_util[:, None]) / 100.0
    types = _type_columns(gpu_type)
    if len(types) == 1:  # one GPU type: f on every column at once (same numbers)
        interference = p.interference[types[0][0]](cum)
    else:
        interference = np.empty_like(cum)
        for name, cols in types:
            if gpus is not None:
                cols = cols[gpus]
            interference[:, cols] = p.interference[name](cum[:, cols])
    return p.w_mem * mem_ratio + p.w_util * interference


def weighted_interference(f: InterferenceFunction, x: np.ndarray, w_util: float
                          ) -> np.ndarray:
    """``w_util · f(x)`` at the utilization shares ``x`` (1.0 = one GPU's worth), by the
    operations of :meth:`InterferenceFunction.__call__` (the same IEEE results), in
    place where an array is this call's own."""
    a2, a1, a0 = f.quadratic
    slope, intercept = f.line
    quad = a2 * x
    quad += a1
    quad *= x
    quad += a0
    line = slope * x
    line += intercept
    out = np.where(x > 1.0, quad, line)
    if w_util != 1.0:  # (v * 1.0 is v: the default weights cost no step)
        out *= w_util
    return out


def job_share_costs(p: HorusParams, gpu_type: tuple[str, ...], cap: np.ndarray,
                    util: np.ndarray, free_mem: np.ndarray, job_util: float, job_mem: float,
                    gpus: np.ndarray) -> np.ndarray:
    """:func:`share_costs` of one job on GPUs ``gpus``, with the memory in use given as
    ``cap - free_mem`` (the same numbers, in fewer array steps when the cluster has one
    GPU type and no GPU without memory)."""
    f = single_function(p, gpu_type, cap)
    if f is None:
        return share_costs(p, gpu_type, cap, util, cap - free_mem, np.array([job_util]),
                           np.array([job_mem]), gpus=gpus)[0]
    # the operations of share_costs and InterferenceFunction.__call__ on one row, in
    # place where an array is this call's own (the same IEEE results, fewer temporaries)
    x = np.add(util[gpus], job_util, dtype=np.float64)
    x /= 100.0
    interference = weighted_interference(f, x, p.w_util)
    c = cap[gpus]
    cost = np.subtract(c, free_mem[gpus], dtype=np.float64)
    cost += job_mem
    cost /= c
    if p.w_mem != 1.0:
        cost *= p.w_mem
    cost += interference
    return cost


def single_function(p: HorusParams, gpu_type: tuple[str, ...], cap: np.ndarray
                    ) -> InterferenceFunction | None:
    """The interference function of every GPU when the cluster has one GPU type and no
    GPU without memory (:func:`job_share_costs`' case of fewer array steps), else None."""
    types = _type_columns(gpu_type)
    if len(types) != 1 or not _all_positive(cap):
        return None
    return p.interference[types[0][0]]


_LAST_CAP: tuple = (None, False)  # the last capacity array asked about, and the answer


def _all_positive(cap: np.ndarray) -> bool:
    """Every GPU has memory (asked per job of a round: the cluster's array, by identity)."""
    global _LAST_CAP
    last = _LAST_CAP
    if last[0] is cap:
        return last[1]
    out = bool((cap > 0).all())
    _LAST_CAP = (cap, out)
    return out


def _default_penalty(p, instance, functions, job_mem, job_util, job_gpus) -> float:
    """1 + (total GPU requests) × (largest cost one GPU share can have), rounded up.

    A GPU share costs at most w_mem * m_max + 2 * w_util * f(u_cap) in either cost model
    (u_cap: every pending job on the busiest GPU), so leaving one GPU request unplaced
    always costs more than any placement can.
    """
    if len(instance.jobs) == 0:
        return 1.0
    util, mem = instance.gpu_usage
    cap = instance.cluster.gpu_mem_gb
    pos = cap > 0
    m_max = float(np.max((mem[pos] + job_mem.max()) / cap[pos])) if pos.any() else 0.0
    u_cap = (float(util.max()) + float(job_util.sum())) / 100.0
    f_max = max(float(p.interference[name](u_cap))
                for name, _ in _type_columns(instance.cluster.gpu_type))
    per_share = p.w_mem * m_max + 2.0 * p.w_util * f_max
    return float(math.ceil(1.0 + int(job_gpus.sum()) * per_share))


@dataclass(frozen=True)
class HorusBreakdown:
    """The parts of a Horus objective."""

    placement_cost: float
    unplaced_gpus: int
    penalty: float

    @property
    def total(self) -> float:
        return self.placement_cost + self.penalty * self.unplaced_gpus


_PAIRS_AT_ONCE = 512
"""Most (job, GPU) pairs :func:`_paper_total` prices in one [pairs, pairs] call."""


def _paper_total(instance: Instance, decision: Decision,
                 costs: HorusCosts) -> tuple[float, set[str]] | None:
    """The paper cost model's placement cost (and the placed jobs) with one
    :func:`share_costs` call for every placed (job, GPU) pair, its diagonal read (the
    formula is elementwise: the numbers of one call per placement), summed in placement
    then GPU order like the loop of :func:`horus_breakdown`. None above
    :data:`_PAIRS_AT_ONCE` pairs (that loop then runs)."""
    cluster, jobs = instance.cluster, instance.jobs
    index = cluster.gpu_index
    pair_jobs: list[int] = []
    pair_gpus: list[int] = []
    placed = set()
    for pl in decision.placements:
        j = instance.job_index[pl.job]
        placed.add(pl.job)
        pair_gpus.extend(index[gid] for gid in pl.gpus)
        pair_jobs.extend([j] * len(pl.gpus))
    if len(pair_gpus) > _PAIRS_AT_ONCE:
        return None
    if not pair_gpus:
        return 0.0, placed
    util, mem = instance.gpu_usage
    rows = np.array(pair_jobs, dtype=np.int64)
    job_mem = np.array([jobs[j].gpu_mem_gb for j in pair_jobs], dtype=float)
    matrix = share_costs(costs.params, cluster.gpu_type, cluster.gpu_mem_gb, util, mem,
                         costs.job_util[rows], job_mem,
                         gpus=np.array(pair_gpus, dtype=np.int64))
    total = 0.0
    for value in np.diagonal(matrix).tolist():
        total += value
    return total, placed


_LAST_EVALUATED: tuple = (None, None)  # (weak reference to an instance, its costs)


def _evaluation_costs(instance: Instance) -> HorusCosts:
    """:func:`horus_costs` without the matrix, kept for the last instance evaluated: a
    search or a brute force evaluates many decisions of one instance, and these costs are
    half of an evaluation of a small one. Kept while the instance is the same object and
    its params parse to the same object (:func:`parse_horus_params` parses a mapping
    changed in place again); the weak reference does not keep the instance alive, and a
    new instance is never taken for a collected one."""
    global _LAST_EVALUATED
    ref, costs = _LAST_EVALUATED  # read once: another thread may replace it
    if (ref is not None and ref() is instance
            and parse_horus_params(instance.params) is costs.params):
        return costs
    costs = horus_costs(instance, matrix=False)
    _LAST_EVALUATED = (weakref.ref(instance), costs)
    return costs


def horus_breakdown(instance: Instance, decision: Decision) -> HorusBreakdown:
    """Placement cost, unplaced GPU requests and penalty of a decision."""
    costs = _evaluation_costs(instance)
    cluster = instance.cluster
    util, mem = instance.gpu_usage
    total = 0.0
    placed = set()
    if costs.params.cost_model == "paper":
        summed = _paper_total(instance, decision, costs)
        if summed is not None:
            total, placed = summed
            unplaced = sum(j.num_gpus for j in instance.jobs if j.id not in placed)
            return HorusBreakdown(float(total), int(unplaced), costs.penalty)
    added_util = np.zeros(cluster.num_gpus)
    touched = np.zeros(cluster.num_gpus, dtype=bool)
    for pl in decision.placements:
        j = instance.job_index[pl.job]
        placed.add(pl.job)
        gpus = np.array([cluster.gpu_index[gid] for gid in pl.gpus], dtype=np.int64)
        row = share_costs(costs.params, cluster.gpu_type, cluster.gpu_mem_gb, util, mem,
                          costs.job_util[j:j + 1],
                          np.array([instance.jobs[j].gpu_mem_gb], dtype=float), gpus=gpus)[0]
        for k, g in enumerate(gpus.tolist()):
            if costs.params.cost_model == "paper":
                total += row[k]
            else:
                mem_part = row[k] - costs.params.w_util * costs.f(
                    g, costs.base_util[g] + costs.job_util[j]
                )
                total += mem_part + costs.base_interference[g]
                added_util[g] += costs.job_util[j]
                touched[g] = True
    if costs.params.cost_model == "colocation":
        for g in np.flatnonzero(touched):
            final = costs.f(g, costs.base_util[g] + added_util[g])
            total += costs.params.w_util * final - costs.base_interference[g]
    unplaced = sum(j.num_gpus for j in instance.jobs if j.id not in placed)
    return HorusBreakdown(float(total), int(unplaced), costs.penalty)


def estimate_gpu_memory_gb(
    batch: int,
    activations: float,
    parameters: float,
    gradients: float,
    overhead_gb: float = 0.0,
    bytes_per_value: int = 4,
) -> float:
    """GPU memory of a training job by Eq. 2: (B·A + P) + B·G values, plus overhead δ.

    Counts of values (activations per sample, parameters, gradients per sample) times
    ``bytes_per_value`` (4 for fp32), in GB (10^9 bytes), plus ``overhead_gb``.
    """
    if min(batch, activations, parameters, gradients, overhead_gb) < 0:
        raise ValueError("memory estimate inputs must be >= 0")
    values = (batch * activations + parameters) + batch * gradients
    return values * bytes_per_value / 1e9 + overhead_gb


class HorusProblem(Problem):
    """Horus (paper seed 002): place DL jobs on shared GPUs at least interference cost.

    Jobs need ``num_gpus``, ``gpu_util`` and ``gpu_mem_gb``; GPUs may be shared within
    their memory; the objective (minimized) is the interference and memory cost of the
    placement plus a penalty per unplaced GPU request (:func:`horus_breakdown`).
    """

    name = "horus"
    sense = "min"
    job_fields = ("num_gpus", "gpu_util", "gpu_mem_gb")
    exclusive_gpus = False
    default_interference = "horus"

    def parse_params(self, params: Mapping[str, Any]) -> HorusParams:
        """Parse ``params`` (cost weights and model, penalty, queues, beta, interference).

        Parameters
        ----------
        params
            The instance's ``params`` mapping.

        Returns
        -------
        HorusParams
            The typed parameters (:func:`parse_horus_params`).
        """
        return parse_horus_params(params)

    def check_instance(self, instance: Instance) -> None:
        """The base checks, and an interference function for every GPU type.

        Parameters
        ----------
        instance
            The instance being loaded.

        Returns
        -------
        None

        Raises
        ------
        InputError
            A job field is missing or a GPU type has no interference function.
        """
        super().check_instance(instance)
        p = self.parse_params(instance.params)
        missing = sorted(set(instance.cluster.gpu_type) - set(p.interference))
        if missing:
            raise InputError(
                f"no interference function for GPU type {missing[0]!r}",
                field=f"params.interference.{missing[0]}",
                fix=f'add {{"quadratic": [a2, a1, a0]}} for it (built in: '
                f"{', '.join(sorted(BUILTIN_INTERFERENCE))})",
            )

    def evaluate(self, instance: Instance, decision: Decision) -> float:
        """Interference and memory cost plus the unplaced-request penalty (minimized).

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        float
            ``horus_breakdown(instance, decision).total``.
        """
        return horus_breakdown(instance, decision).total

    def report_metrics(self, instance: Instance, decision: Decision) -> dict[str, float]:
        """GPU requests placed, placement cost and the penalty paid for the rest.

        Parameters
        ----------
        instance
            The snapshot.
        decision
            A valid decision.

        Returns
        -------
        dict of str to float
            ``GPU requests placed``, ``GPU requests unplaced``, ``placement cost`` and
            ``penalty`` (penalty per GPU × unplaced; cost + penalty = objective).
        """
        b = horus_breakdown(instance, decision)
        asked = sum(j.num_gpus for j in instance.jobs)
        return {"GPU requests placed": float(asked - b.unplaced_gpus),
                "GPU requests unplaced": float(b.unplaced_gpus),
                "placement cost": b.placement_cost, "penalty": b.penalty * b.unplaced_gpus}


register_problem(HorusProblem())
