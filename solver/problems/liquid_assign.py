"""Liquid decisions from node-level assignments (container -> server) and back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..decision import Decision, Placement, TaskPlacement

if TYPE_CHECKING:
    from .liquid import LiquidData

EPS = 1e-9
"""Tolerance of Liquid's capacity comparisons (GPU memory, CPU, RAM)."""


def assign_gpus(data: LiquidData, assign: np.ndarray) -> list[tuple[int, ...]]:
    """Concrete GPU indices for each container of a node-level assignment.

    Per server, containers in decreasing GPU-memory need (then index) take the free GPUs
    with enough memory in index order. Compatibility is nested (a GPU good for a need is
    good for every smaller one), so this succeeds whenever the level counts fit.
    Raises ValueError when a server cannot take its containers.
    """
    cluster = data.instance.cluster
    busy = data.instance.gpu_busy
    out: list[tuple[int, ...]] = [()] * len(assign)
    members: dict[int, list[int]] = {}  # server -> its containers, ascending
    for c, n in enumerate(assign.tolist()):
        members.setdefault(n, []).append(c)
    mem, gpus = data.c_mem.tolist(), data.c_gpus.tolist()
    for n in sorted(members):
        free = [int(g) for g in cluster.gpus_of_node[n] if not busy[g]]
        for c in sorted(members[n], key=lambda c: (-mem[c], c)):
            if gpus[c] == 0:
                continue
            ok = [g for g in free if cluster.gpu_mem_gb[g] >= mem[c] - EPS]
            if len(ok) < gpus[c]:
                raise ValueError(f"server {cluster.node_ids[n]} cannot hold its containers")
            out[c] = tuple(ok[: gpus[c]])
            free = [g for g in free if g not in out[c]]
    return out


def decision_from_assignment(data: LiquidData, assign: np.ndarray) -> Decision:
    """A Decision placing container c on server ``assign[c]`` (GPUs by :func:`assign_gpus`)."""
    inst = data.instance
    node_ids, gpu_ids = inst.cluster.node_ids, inst.cluster.gpu_ids
    gpus = assign_gpus(data, assign)
    placements = []
    for j, sl in enumerate(data.job_slices):
        tasks = tuple(
            TaskPlacement(data.containers[c].id, node_ids[assign[c]],
                          tuple(gpu_ids[g] for g in gpus[c]))
            for c in range(sl.start, sl.stop))
        all_gpus = tuple(sorted(g for t in tasks for g in t.gpus))
        placements.append(Placement(inst.jobs[j].id, all_gpus, tasks))
    return Decision.of(placements)


def assignment_from_decision(data: LiquidData, decision: Decision) -> np.ndarray:
    """Server index of every container (the decision must place every job, checked)."""
    node_index = data.instance.cluster.node_index
    out = np.empty(data.num_containers, dtype=np.int64)
    for j, sl in enumerate(data.job_slices):
        placement = decision.by_job[data.instance.jobs[j].id]
        where = {t.task: node_index[t.node] for t in placement.tasks}
        for c in range(sl.start, sl.stop):
            out[c] = where[data.containers[c].id]
    return out
