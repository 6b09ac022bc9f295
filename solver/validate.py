"""The independent checker: is a decision feasible for an instance? What does it cost?

It recomputes every load from the decision and the instance alone; it shares no code
with any model or heuristic.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from .decision import Decision
from .errors import InputError
from .instance import Instance
from .instance_io import check_instance
from .problems import Violation, get_problem

TOL = 1e-6


@dataclass(frozen=True)
class ValidationReport:
    """The verdict: ``ok`` is True when there is no violation."""

    violations: tuple[Violation, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def __str__(self) -> str:
        if self.ok:
            return "feasible"
        return "infeasible:\n" + "\n".join(f"  {v}" for v in self.violations)


def validate(instance: Instance, decision: Decision) -> ValidationReport:
    """Check ``decision`` against ``instance``: ids, demands, capacities, exclusivity.

    The instance is checked first, as :func:`dlsched.load_instance` checks a file (an
    instance built in Python gets the same one-line :class:`~dlsched.InputError`). Then
    the generic rules: every placed job is a pending job, placed once; every GPU and
    server id exists; a job with a fixed demand gets exactly ``num_gpus`` distinct GPUs; a
    container job places each container once on one server with exactly its GPUs; per-GPU
    memory and per-server CPU and RAM hold (running jobs included); GPUs are not shared
    when the problem demands exclusivity. Then the problem's own rules.

    A decision whose placements carry ``end`` is an offline *schedule* of the whole
    workload and is checked by the schedule rules (see :func:`_schedule_violations`).

    Parameters
    ----------
    instance
        The snapshot (or, for a schedule, the workload) the decision is for.
    decision
        The placements to check; it is never trusted, whoever made it. A result without a
        decision (``result.decision is None``: no solution found) has nothing to check.

    Returns
    -------
    ValidationReport
        ``ok`` when no rule is broken; otherwise every :class:`Violation` found (a stable
        ``kind``, the job, a message).

    Raises
    ------
    InputError
        ``instance`` is not an :class:`~dlsched.Instance` or is one that
        :func:`dlsched.load_instance` would refuse, or ``decision`` is not a
        :class:`~dlsched.Decision`.
    """
    if not isinstance(instance, Instance):
        raise InputError(f"instance is a {type(instance).__name__}", field="instance",
                         fix="pass an Instance (dlsched.load_instance(path) reads a file)")
    if not isinstance(decision, Decision):
        what = "None" if decision is None else f"a {type(decision).__name__}"
        raise InputError(f"decision is {what}", field="decision",
                         fix="pass a Decision (result.decision is None when the method "
                             "found no solution: check result.status first)")
    check_instance(instance)
    return validate_decision(instance, decision)


def validate_decision(instance: Instance, decision: Decision) -> ValidationReport:
    """:func:`validate` for an instance already checked (loaded from a file, or checked
    once by ``solve`` or the simulator): the rules of the decision alone. The simulator
    calls it at every decision, so the instance's checks are not repeated there."""
    numbers = _number_violations(decision)
    if numbers:
        return ValidationReport(tuple(numbers))
    if any(p.end is not None for p in decision.placements):
        return ValidationReport(tuple(_schedule_violations(instance, decision)))
    return ValidationReport(tuple(_snapshot_violations(instance, decision)))


def _snapshot_violations(instance: Instance, decision: Decision,
                         problem_rules: bool = True) -> list[Violation]:
    """The rules of a snapshot decision (all placements hold their GPUs at once)."""
    problem = get_problem(instance.problem)
    cluster = instance.cluster
    out: list[Violation] = []
    mem_used = instance.gpu_mem_used
    cpu_used, ram_used = instance.node_usage
    mem = mem_used.copy()
    cpu = cpu_used.copy()
    ram = ram_used.copy()
    # (job, its GPU indices) per placement that got through the per-placement rules; the
    # GPUs' holders (GPU index -> placed jobs on it) are built from it only when needed
    held: list[tuple[str, list[int]]] = []
    repeats = False  # some placement lists a GPU twice
    index = cluster.gpu_index
    seen: set[str] = set()
    ok_structure = True
    for p in decision.placements:
        if p.job not in instance.job_index:
            out.append(Violation("unknown_job", p.job, "not a pending job of this instance"))
            ok_structure = False
            continue
        if p.job in seen:
            out.append(Violation("duplicate", p.job, "placed more than once"))
            ok_structure = False
            continue
        seen.add(p.job)
        job = instance.job(p.job)
        gpus = list(map(index.get, p.gpus))
        unknown = [g for g in p.gpus if g not in index] if None in gpus else ()
        if unknown:
            out.append(Violation("unknown_gpu", p.job, f"unknown GPU ids {unknown}"))
            ok_structure = False
            continue
        twice = len(set(gpus)) != len(gpus)
        if twice:
            out.append(Violation("demand", p.job, "a GPU is listed twice"))
            repeats = True
        if job.containers:
            loads = _container_loads(instance, job, p, out)
            if loads is None:
                ok_structure = False
                continue
            for node, (c_cpu, c_ram) in loads[1].items():
                cpu[node] += c_cpu
                ram[node] += c_ram
            for g, m in loads[0].items():
                mem[g] += m
        else:
            if job.num_gpus is not None and len(p.gpus) != job.num_gpus:
                out.append(
                    Violation("demand", p.job, f"gets {len(p.gpus)} GPUs, needs {job.num_gpus}")
                )
            if not p.gpus:
                out.append(Violation("demand", p.job, "placed on no GPU"))
            if len(gpus) > 4:  # np.add.at adds in index order: the loop's sums, vectorized
                # (a zero is not added: x + 0.0 is x; distinct GPUs take one addition each)
                if job.gpu_mem_gb:
                    if twice:
                        np.add.at(mem, gpus, job.gpu_mem_gb)
                    else:
                        mem[gpus] += job.gpu_mem_gb
                if job.cpu_per_gpu or job.ram_gb_per_gpu:
                    nodes = cluster.gpu_node[gpus]
                    np.add.at(cpu, nodes, job.cpu_per_gpu)
                    np.add.at(ram, nodes, job.ram_gb_per_gpu)
            for g in gpus if len(gpus) <= 4 else ():
                mem[g] += job.gpu_mem_gb or 0.0
                node = cluster.gpu_node[g]
                cpu[node] += job.cpu_per_gpu
                ram[node] += job.ram_gb_per_gpu
        held.append((p.job, gpus))

    over = np.flatnonzero(mem > cluster.gpu_mem_gb + TOL)
    holders = _holders(held) if over.size else {}
    for g in over:
        out.append(
            Violation(
                "gpu_memory",
                _first(holders.get(int(g), [])),
                f"GPU {cluster.gpu_ids[g]} holds {mem[g]:g} GB of {cluster.gpu_mem_gb[g]:g} GB",
            )
        )
    for used, cap, kind in (
        (cpu, cluster.node_cpu, "node_cpu"),
        (ram, cluster.node_ram_gb, "node_ram"),
    ):
        for n in np.flatnonzero(used > cap + TOL):
            out.append(
                Violation(kind, None, f"node {cluster.node_ids[n]} uses {used[n]:g} of {cap[n]:g}")
            )
    if problem.exclusive_gpus:
        busy = instance.gpu_busy
        if not holders and held and (repeats or _maybe_shared(held, busy)):
            holders = _holders(held)
        for g in sorted(holders):  # GPU order; untouched GPUs cannot be shared
            jobs = holders[g]
            if len(jobs) > 1 or (jobs and busy[g]):
                out.append(Violation("exclusive", jobs[0], f"GPU {cluster.gpu_ids[g]} is shared"))
    if ok_structure and problem_rules:
        out.extend(problem.check_decision(instance, decision))
    return out


def _schedule_violations(instance: Instance, decision: Decision) -> list[Violation]:
    """The rules of a timed decision (an offline schedule of every job of the workload).

    Every placement has a start and an end; every job is scheduled exactly once; no job
    starts before its ``submit_time``; ``end - start`` is the problem's run time of the job
    on its GPUs (:meth:`Problem.schedule_duration`, which depends on the placement's shape);
    and at every moment the jobs then running obey every snapshot rule (ids, demands,
    GPU memory, server CPU/RAM, exclusive GPUs). Loads only rise at a start, so checking the
    set of running jobs just after each distinct start covers every moment. Then the
    problem's own rules on the whole schedule.
    """
    problem = get_problem(instance.problem)
    out: list[Violation] = []
    if not problem.schedule_objectives:
        return [Violation("schedule", None, f"problem {problem.name!r} defines no timed "
                                            "schedules (placements with start and end)")]
    timed = []
    for p in decision.placements:
        if p.start is None or p.end is None:
            out.append(Violation("schedule", p.job, "a schedule needs start and end on every "
                                                    "placement"))
        elif not (np.isfinite(p.start) and np.isfinite(p.end)):
            out.append(Violation("schedule", p.job, f"start {p.start} / end {p.end} "
                                                    "not finite"))
        else:
            timed.append(p)
    placed = [p.job for p in decision.placements]
    twice = sorted({j for j in placed if placed.count(j) > 1})
    if twice:
        out.append(Violation("duplicate", twice[0], f"scheduled more than once: {twice[:5]}"))
    missing = [j.id for j in instance.jobs if j.id not in set(placed)]
    if missing:
        out.append(Violation("schedule", missing[0], f"{len(missing)} job(s) not scheduled: "
                                                     f"{missing[:5]}"))
    if out:
        return out
    starts = sorted({p.start for p in timed})
    seen: set[tuple[str, str | None]] = set()
    for t in starts:
        active = [p for p in timed if p.start <= t + TOL and p.end > t + TOL]
        for v in _snapshot_violations(instance, Decision(tuple(active)), problem_rules=False):
            if (v.kind, v.job) not in seen:
                seen.add((v.kind, v.job))
                out.append(Violation(v.kind, v.job, f"at t = {t:g}: {v.message}"))
    if any(v.kind in ("unknown_job", "duplicate", "unknown_gpu", "unknown_node")
           for v in out):
        return out
    for p in timed:
        job = instance.job(p.job)
        if p.start < job.submit_time - TOL:
            out.append(Violation("release", p.job, f"starts at {p.start:g}, before its "
                                                   f"submit time {job.submit_time:g}"))
        if not p.gpus:
            continue  # the snapshot rules report it
        duration = problem.schedule_duration(instance, p.job, p.gpus)
        if not abs(p.end - p.start - duration) <= TOL * max(1.0, abs(duration)):
            out.append(Violation("duration", p.job, f"runs {p.end - p.start:g} s on these GPUs, "
                                                    f"needs {duration:g} s"))
    out.extend(problem.check_decision(instance, decision))
    return out


MAX_TIME = 1e12
"""Largest magnitude of a start or end time (seconds), as in the solution schema."""


def _number_violations(decision: Decision) -> list[Violation]:
    """Every number of a decision (``start``, ``end``) must be a finite real number within
    ±:data:`MAX_TIME`; NaN compares false with everything, so it is caught here, first."""
    out = []
    for p in decision.placements:
        for name in ("start", "end"):
            value = getattr(p, name, None)
            if value is None:
                continue
            if (isinstance(value, bool) or not isinstance(value, int | float | np.number)
                    or abs(value) > MAX_TIME or not np.isfinite(value)):
                out.append(Violation("number", str(p.job), f"{name} = {value!r} is not a finite "
                                     f"number within ±{MAX_TIME:g}"))
    return out


def _holders(held: list[tuple[str, list[int]]]) -> dict[int, list[str]]:
    """GPU index -> the placed jobs on it, in placement order (touched GPUs only)."""
    holders: dict[int, list[str]] = {}
    for job, gpus in held:
        for g in set(gpus):
            holders.setdefault(g, []).append(job)
    return holders


def _maybe_shared(held: list[tuple[str, list[int]]], busy: np.ndarray) -> bool:
    """Whether a GPU is placed twice or is busy, in a few array steps (the placements
    list each GPU once; the exclusivity loop then names the GPUs only when one is)."""
    touched = np.fromiter(chain.from_iterable(gpus for _, gpus in held), dtype=np.int64)
    if busy[touched].any():
        return True
    touched.sort()
    return bool((touched[1:] == touched[:-1]).any())


def _first(jobs: list[str]) -> str | None:
    return jobs[0] if jobs else None


def _container_loads(instance, job, placement, out):
    """Per-GPU memory and per-server (CPU, RAM) of a container job; None if malformed."""
    cluster = instance.cluster
    by_task = {}
    for t in placement.tasks:
        if t.task in by_task:
            out.append(Violation("duplicate", job.id, f"container {t.task} placed twice"))
            return None
        by_task[t.task] = t
    wanted = {c.id for c in job.containers}
    if set(by_task) != wanted:
        missing, extra = sorted(wanted - set(by_task)), sorted(set(by_task) - wanted)
        out.append(Violation("demand", job.id, f"containers missing {missing}, unknown {extra}"))
        return None
    gpu_mem: dict[int, float] = {}
    node_load: dict[int, tuple[float, float]] = {}
    all_gpus: list[str] = []
    for c in job.containers:
        t = by_task[c.id]
        if t.node not in cluster.node_index:
            out.append(Violation("unknown_node", job.id, f"unknown node id {t.node!r}"))
            return None
        node = cluster.node_index[t.node]
        bad = [
            g
            for g in t.gpus
            if g not in cluster.gpu_index or cluster.gpu_node[cluster.gpu_index[g]] != node
        ]
        if bad:
            out.append(
                Violation(
                    "unknown_gpu", job.id, f"container {c.id}: GPUs {bad} are not on node {t.node}"
                )
            )
            return None
        if len(set(t.gpus)) != c.gpus or len(t.gpus) != c.gpus:
            out.append(
                Violation(
                    "demand", job.id, f"container {c.id} gets {len(t.gpus)} GPUs, needs {c.gpus}"
                )
            )
        for g in t.gpus:
            gi = cluster.gpu_index[g]
            gpu_mem[gi] = gpu_mem.get(gi, 0.0) + c.gpu_mem_gb
        old = node_load.get(node, (0.0, 0.0))
        node_load[node] = (old[0] + c.cpu, old[1] + c.ram_gb)
        all_gpus.extend(t.gpus)
    if sorted(all_gpus) != sorted(placement.gpus):
        out.append(Violation("demand", job.id, "job GPUs differ from its containers' GPUs"))
    return gpu_mem, node_load


def evaluate(instance: Instance, decision: Decision, objective: str | None = None) -> float:
    """The problem's objective for ``decision``, computed from the decision alone.

    ``objective`` names a schedule objective of the problem (``makespan``,
    ``weighted_jct``, ``qos``; see :meth:`Problem.evaluate_schedule`) for a timed decision
    (an offline schedule); ``None`` is the problem's snapshot objective.

    Parameters
    ----------
    instance
        The snapshot (or workload) the decision is for.
    decision
        A decision for ``instance``; it is validated first.
    objective
        ``None`` for the problem's own objective, or the name of a schedule objective.

    Returns
    -------
    float
        The objective value (the problem's ``sense`` says whether lower or higher is better).

    Raises
    ------
    ValueError
        The decision is infeasible: an infeasible decision has no objective value.
    """
    report = validate(instance, decision)
    if not report.ok:
        raise ValueError(f"cannot evaluate an infeasible decision: {report}")
    problem = get_problem(instance.problem)
    if objective is None:
        return problem.evaluate(instance, decision)
    return problem.evaluate_schedule(instance, decision, objective)
