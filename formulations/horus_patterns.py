"""Horus exact model over GPU *patterns* (option ``form="patterns"``; the default stays
the per-pair model of :mod:`dlsched.formulations.horus`).

A pattern of a GPU is a non-empty set S of its candidate jobs whose memory fits its free
memory together (one share each). GPUs of one class — twins in the sense of
:func:`dlsched.formulations.horus_data._twins`: same server, type, capacity, use and
candidate jobs — have the same patterns, so the model counts them instead of naming GPUs:

  n[k,S] integer in [0, |k|]   GPUs of class k that receive exactly the jobs of S
  y[j]   binary                job j is placed this round

  1. class size   sum_S n[k,S] <= |k|
  2. demand       sum_k sum_{S ∋ j} n[k,S] = RQ_j y[j]
  3. node cpu/ram sum_{k on n} sum_S need(S) n[k,S] <= CP^r_n - UR^r_n   (where it can bind)
  Objective: sum cost(k,S) n[k,S] + penalty * sum_j RQ_j (1 - y[j])

Why it is the same problem: a solution of the per-pair model gives each GPU one set of
jobs, which fits its memory (the memory row), so it is a pattern; counting the GPUs of a
class by pattern gives n, which satisfies 1-3 with the same cost. Conversely the members
of a class can take the counted patterns in any order (they are interchangeable), and
each job appears at most once per pattern, so it gets RQ_j distinct GPUs. The cost of a
pattern is exact in both cost models: the paper's is a sum over shares, the colocation
one adds w (f(UR + sum GUtil) - f(UR)) for the GPU's final utilization, so this form needs
no cutting-plane loop. Per GPU the LP relaxation is the convex hull of its memory
knapsack (a Dantzig-Wolfe reformulation), which is why its bound is tighter; the price is
one column per pattern (``max_patterns`` caps it: an InputError beyond).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlsched.errors import InputError
from dlsched.method_support import decision_from_indices
from dlsched.result import MethodOutput, Status
from dlsched.state import EPS

from .backend import Deadline, LinearModel, TimeUp, solver_params
from .backends import new_model
from .horus_data import HorusData
from .symmetry_hints import chained_runs

MAX_PATTERNS = 200_000


@dataclass(frozen=True)
class PatternClass:
    """Interchangeable GPUs and their feasible job sets."""

    gpus: tuple[int, ...]
    patterns: tuple[tuple[int, ...], ...]  # job sets, each sorted
    costs: tuple[float, ...]


def gpu_classes(data: HorusData) -> list[tuple[int, ...]]:
    """Runs of twin GPUs (as the symmetry rows chain them) and the other GPUs alone."""
    gpus = sorted({g for _, g in data.pairs})
    runs = chained_runs(data.symmetric)
    in_run = {g for run in runs for g in run}
    return [tuple(r) for r in runs] + [(g,) for g in gpus if g not in in_run]


class _TooMany(Exception):
    """More subsets than the caller's limit."""


def _subsets(jobs: list[int], mem: np.ndarray, room: float,
             limit: int | None = None) -> list[tuple[int, ...]]:
    """Every non-empty subset of ``jobs`` whose memory fits ``room`` (depth first);
    :class:`_TooMany` as soon as there are more than ``limit``."""
    order = sorted(jobs, key=lambda j: (-mem[j], j))
    out: list[tuple[int, ...]] = []

    def grow(start: int, chosen: list[int], left: float) -> None:
        for i in range(start, len(order)):
            j = order[i]
            if mem[j] <= left:
                chosen.append(j)
                out.append(tuple(sorted(chosen)))
                if limit is not None and len(out) > limit:
                    raise _TooMany
                grow(i + 1, chosen, left - mem[j])
                chosen.pop()

    grow(0, [], room)
    return out


def pattern_cost(data: HorusData, g: int, jobs: tuple[int, ...]) -> float:
    """What GPU g adds to the evaluator's objective when it receives exactly ``jobs``."""
    costs = data.costs
    if not data.colocation:
        return float(sum(costs.cost[j, g] for j in jobs))
    w = costs.params.w_util
    total = 0.0
    for j in jobs:
        mem_part = costs.cost[j, g] - w * costs.f(g, costs.base_util[g] + costs.job_util[j])
        total += mem_part + costs.base_interference[g]
    final = costs.f(g, costs.base_util[g] + float(costs.job_util[list(jobs)].sum()))
    return float(total + w * final - costs.base_interference[g])


def pattern_classes(data: HorusData, max_patterns: int = MAX_PATTERNS,
                    deadline: Deadline | None = None) -> list[PatternClass]:
    """The classes with their patterns and costs; InputError beyond ``max_patterns``."""
    jobs_of: dict[int, list[int]] = {}
    for j, g in data.pairs:
        jobs_of.setdefault(g, []).append(j)
    mem = np.array([job.gpu_mem_gb for job in data.instance.jobs], dtype=float)
    enumerated, total = [], 0
    for members in gpu_classes(data):  # every class's subsets first: a refusal costs no
        g = members[0]                 # pattern prices
        try:
            subsets = _subsets(jobs_of[g], mem, float(data.free_mem[g]) + EPS,
                               max_patterns - total)
        except _TooMany:
            raise InputError(
                f"the pattern model needs more than max_patterns = {max_patterns} columns",
                field="options.max_patterns",
                fix="raise max_patterns or use the default form (form='pairs')") from None
        total += len(subsets)
        if deadline is not None:
            deadline.check("enumerating Horus patterns")
        enumerated.append((members, subsets))
    return [PatternClass(members, tuple(subsets),
                         tuple(pattern_cost(data, members[0], s) for s in subsets))
            for members, subsets in enumerated]


@dataclass
class PatternModel:
    """The pattern model on one backend, with its variables."""

    model: LinearModel
    classes: list[PatternClass]
    n: dict[tuple[int, int], Any]  # (class index, pattern index) -> count variable
    y: list[Any]


def build_pattern_model(data: HorusData, classes: list[PatternClass], backend: str,
                        deadline: Deadline | None = None) -> PatternModel:
    """The model of the module docstring on ``backend``."""
    inst, costs = data.instance, data.costs
    deadline = deadline or Deadline(None)
    m = new_model(backend, "horus_patterns", deadline)
    y = [m.binary(f"y_{j}") for j in range(len(inst.jobs))]
    n: dict[tuple[int, int], Any] = {}
    by_job: dict[int, list] = {j: [] for j in range(len(inst.jobs))}
    for k, cls in enumerate(classes):
        size = len(cls.gpus)
        for p, jobs in enumerate(cls.patterns):
            var = m.binary(f"n_{k}_{p}") if size == 1 else m.integer(f"n_{k}_{p}", 0, size)
            n[k, p] = var
            for j in jobs:
                by_job[j].append(var)
        if size > 1 or len(cls.patterns) > 1:
            m.add([(1, n[k, p]) for p in range(len(cls.patterns))], "<=", size, f"class_{k}")
    for j, job in enumerate(inst.jobs):
        m.add([(1, v) for v in by_job[j]] + [(-job.num_gpus, y[j])], "==", 0, f"demand_{j}")
    deadline.check("building the Horus pattern model")
    node_of = inst.cluster.gpu_node
    for attr, free, tag in (("cpu_per_gpu", data.free_cpu, "cpu"),
                            ("ram_gb_per_gpu", data.free_ram, "ram")):
        need = [float(getattr(job, attr)) for job in inst.jobs]  # few jobs: plain floats
        per_node: dict[int, list] = {}
        most: dict[int, float] = {}
        for k, cls in enumerate(classes):
            node = int(node_of[cls.gpus[0]])
            amounts = [sum(need[j] for j in jobs) for jobs in cls.patterns]
            terms = per_node.setdefault(node, [])
            terms.extend((a, n[k, p]) for p, a in enumerate(amounts) if a > 0)
            most[node] = most.get(node, 0.0) + max(amounts, default=0.0) * len(cls.gpus)
        for node, terms in per_node.items():
            if terms and most[node] > free[node] + EPS:
                m.add(terms, "<=", free[node] + EPS, f"{tag}_{node}")
    requests = int(sum(job.num_gpus for job in inst.jobs))
    terms = [(cls.costs[p], n[k, p]) for k, cls in enumerate(classes)
             for p in range(len(cls.patterns))]
    terms += [(-costs.penalty * job.num_gpus, y[j]) for j, job in enumerate(inst.jobs)]
    # CP-SAT: half a unit per active term; every GPU in use holds a share, so at most
    # min(GPUs, requests) pattern units are active
    active = min(sum(len(cls.gpus) for cls in classes), requests) + len(inst.jobs)
    m.minimize(terms, costs.penalty * requests, rounding_slack=0.5 * active)
    return PatternModel(m, classes, n, y)


def pattern_hint(pm: PatternModel, chosen: dict[int, list[int]]) -> dict[Any, float]:
    """Hint values from job -> GPUs (a warm start); GPUs outside the classes are ignored,
    and a GPU whose job set is no pattern of its class leaves the hint partial."""
    on_gpu: dict[int, list[int]] = {}
    for j, gpus in chosen.items():
        for g in gpus:
            on_gpu.setdefault(g, []).append(j)
    values: dict[Any, float] = {var: 0.0 for var in pm.n.values()}
    for k, cls in enumerate(pm.classes):
        index = {s: p for p, s in enumerate(cls.patterns)}
        for g in cls.gpus:
            if g in on_gpu:
                p = index.get(tuple(sorted(on_gpu[g])))
                if p is not None:
                    values[pm.n[k, p]] += 1.0
    values.update({var: float(j in chosen) for j, var in enumerate(pm.y)})
    return values


def pattern_decision(pm: PatternModel) -> dict[int, list[int]]:
    """Job -> GPUs of the incumbent: each class's members take its counted patterns in
    turn (they are interchangeable)."""
    model = pm.model
    chosen = {j: [] for j, yj in enumerate(pm.y) if model.is_one(yj)}
    for k, cls in enumerate(pm.classes):
        free = list(cls.gpus)
        for p, jobs in enumerate(cls.patterns):
            count = int(round(model.value(pm.n[k, p])))
            for _ in range(count):
                g = free.pop(0)
                for j in jobs:
                    chosen.setdefault(j, []).append(g)
    return chosen


def run_patterns(data: HorusData, backend: str, deadline: Deadline, seed: int,
                 hint: dict[int, list[int]] | None, num_workers: int,
                 solver_options: dict | None, max_patterns: int) -> MethodOutput:
    """Build, warm-start and solve the pattern model once (``form="patterns"``)."""
    t0 = time.perf_counter()
    try:
        classes = pattern_classes(data, max_patterns, deadline)
        pm = build_pattern_model(data, classes, backend, deadline)
    except TimeUp as exc:
        return MethodOutput(None, Status.NO_SOLUTION, None, None, time.perf_counter() - t0,
                            message=str(exc))
    if hint is not None:
        pm.model.hint(pattern_hint(pm, hint))
    build = time.perf_counter() - t0
    run = pm.model.solve(solver_params(deadline, seed, num_workers, solver_options))
    extra = {"solve_time": run.solve_time, "rounds": 1, "form": "patterns",
             "classes": len(classes), "patterns": len(pm.n),
             "certificate": data.certificate.to_dict()}
    if not run.status.has_solution:
        return MethodOutput(None, run.status, run.bound, pm.model.size(), build, run.log,
                            run.message, extra)
    chosen = pattern_decision(pm)
    decision = decision_from_indices(data.instance, sorted(chosen.items()))
    return MethodOutput(decision, run.status, run.bound, pm.model.size(), build, run.log,
                        run.message, extra)


__all__ = ["run_patterns", "MAX_PATTERNS", "PatternClass", "PatternModel", "build_pattern_model",
           "gpu_classes", "pattern_classes", "pattern_decision", "pattern_hint"]
