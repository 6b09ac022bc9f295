"""A warm start for the offline CP-SAT model that the model can actually take.

A timed decision (e.g. the greedy schedule) is in real seconds on named GPUs. Rounded
naively onto the grid it may overlap itself (on a fine grid, durations rounded up outrun
the real gaps) and break the model's symmetry rules (interchangeable jobs start in index
order; the GPU-count columns of interchangeable servers are in decreasing lexicographic
order), and CP-SAT then cannot use it. :func:`grid_hint` returns an equivalent schedule
that satisfies both:

1. *re-timed on the grid*: jobs in the decision's start order, each at the earliest grid
   time ≥ its rounded release at which its own GPUs (the decision's) are free, with the
   rounded-up duration of its mode — a feasible schedule of the primal's integer data;
2. *interchangeable jobs relabelled*: their (start, mode) pairs handed out in start order
   to the jobs in index order (they have the same release, modes and weight);
3. *interchangeable servers permuted*: within each class, servers re-ordered so their
   GPU-count columns (over the jobs in index order) decrease lexicographically, each
   job's mode replaced by the one with the permuted counts (identical servers: the same
   duration).

Each step keeps the schedule feasible; step 1 may start jobs earlier than their rounded
times, steps 2-3 leave the objective as it is. Jobs the decision does not place, or places in a
shape that is not one of their modes, are left out of the hint.
"""

from __future__ import annotations

from dlsched.decision import Decision

from ..symmetry_hints import relabel_in_runs
from .data import OfflineData


def grid_hint(data: OfflineData, decision: Decision) -> dict[int, tuple[int, int]]:
    """Job index -> (mode index, grid start) of the warm start (module docstring)."""
    cluster = data.workload.cluster
    by_job = decision.by_job
    rows = []
    for j, job in enumerate(data.workload.jobs):
        p = by_job.get(job.id)
        if p is None or p.start is None or not all(g in cluster.gpu_index for g in p.gpus):
            continue
        gpus = [int(cluster.gpu_index[g]) for g in p.gpus]
        counts = [0] * data.num_servers
        for g in gpus:
            counts[int(cluster.gpu_node[g])] += 1
        k = _mode_index(data, j, tuple(counts))
        if k is not None:
            rows.append((float(p.start), j, k, gpus))
    free: dict[int, int] = {}
    hint: dict[int, tuple[int, int]] = {}
    for _start, j, k, gpus in sorted(rows):
        s = max([data.release[j]] + [free.get(g, 0) for g in gpus])
        for g in gpus:
            free[g] = s + data.durations[j][k]
        hint[j] = (k, s)
    for group in data.identical_jobs():
        placed = [j for j in group if j in hint]
        for j, value in zip(placed, sorted((hint[j] for j in placed), key=lambda h: h[1]),
                            strict=True):
            hint[j] = value
    for group in data.server_classes():
        columns = {s: tuple(data.modes[j][hint[j][0]].counts[s] if j in hint else 0
                            for j in range(data.num_jobs)) for s in group}
        relabel = relabel_in_runs([group], columns.__getitem__)
        for j, (k, s0) in list(hint.items()):
            counts = list(data.modes[j][k].counts)
            for old, new in relabel.items():
                counts[new] = data.modes[j][k].counts[old]
            k2 = _mode_index(data, j, tuple(counts))
            if k2 is None:
                del hint[j]
            else:
                hint[j] = (k2, s0)
    return hint


def _mode_index(data: OfflineData, j: int, counts: tuple[int, ...]) -> int | None:
    return next((k for k, m in enumerate(data.modes[j]) if m.counts == counts), None)
