"""The independent checker: is a decision feasible for an instance? What does it cost?

It recomputes every load from the decision and the instance alone; it shares no code
with any model or heuristic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .decision import Decision
from .instance import Instance
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

    Generic rules: every placed job is a pending job, placed once; every GPU and server id
    exists; a job with a fixed demand gets exactly ``num_gpus`` distinct GPUs; a container
    job places each container once on one server with exactly its GPUs; per-GPU memory and
    per-server CPU and RAM hold (running jobs included); GPUs are not shared when the
    problem demands exclusivity. Then the problem's own rules.
    """
    problem = get_problem(instance.problem)
    cluster = instance.cluster
    out: list[Violation] = []
    util, mem_used = instance.gpu_usage
    cpu_used, ram_used = instance.node_usage
    mem = mem_used.copy()
    cpu = cpu_used.copy()
    ram = ram_used.copy()
    holders = [[] for _ in range(cluster.num_gpus)]
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
        unknown = [g for g in p.gpus if g not in cluster.gpu_index]
        if unknown:
            out.append(Violation("unknown_gpu", p.job, f"unknown GPU ids {unknown}"))
            ok_structure = False
            continue
        if len(set(p.gpus)) != len(p.gpus):
            out.append(Violation("demand", p.job, "a GPU is listed twice"))
        gpus = [cluster.gpu_index[g] for g in p.gpus]
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
            for g in gpus:
                mem[g] += job.gpu_mem_gb or 0.0
                node = cluster.gpu_node[g]
                cpu[node] += job.cpu_per_gpu
                ram[node] += job.ram_gb_per_gpu
        for g in set(gpus):
            holders[g].append(p.job)

    over = np.flatnonzero(mem > cluster.gpu_mem_gb + TOL)
    for g in over:
        out.append(
            Violation(
                "gpu_memory",
                _first(holders[g]),
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
        for g, jobs in enumerate(holders):
            if len(jobs) > 1 or (jobs and busy[g]):
                out.append(Violation("exclusive", jobs[0], f"GPU {cluster.gpu_ids[g]} is shared"))
    if ok_structure:
        out.extend(problem.check_decision(instance, decision))
    return ValidationReport(tuple(out))


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


def evaluate(instance: Instance, decision: Decision) -> float:
    """The problem's objective for ``decision``, computed from the decision alone.

    Raises ValueError when the decision is infeasible: an infeasible decision has no
    objective value.
    """
    report = validate(instance, decision)
    if not report.ok:
        raise ValueError(f"cannot evaluate an infeasible decision: {report}")
    return get_problem(instance.problem).evaluate(instance, decision)
