"""From a CP-SAT solution to a timed decision: left-shift with real durations, assign GPUs.

The model's starts sit on the grid and its durations are rounded up. With the real
durations every job is started again, in the model's start order, at the earliest time
(its release or another job's end) where its servers have room until it ends; that time is
never later than the model's start (every job placed before it ends no later than in the
model's schedule), so no objective gets worse. Then each job takes, on each of its
servers, the GPUs free at its start (lowest index first), in start order: a per-server
cumulative profile always maps onto concrete identical GPUs that way.
"""

from __future__ import annotations

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.instance import Instance

from ..backend import Deadline
from .data import Mode


def _fits(placed: list[tuple[float, float, tuple[int, ...]]], counts: tuple[int, ...],
          caps: list[int], t: float, d: float) -> bool:
    """Room for ``counts`` GPUs per server over [t, t + d) next to ``placed``."""
    checks = [t] + [s for s, _, _ in placed if t < s < t + d]
    for x in checks:
        for srv, k in enumerate(counts):
            if k and sum(c[srv] for s, e, c in placed if s <= x < e) + k > caps[srv]:
                return False
    return True


def left_shift(workload: Instance, picks: list[tuple[float, int, Mode]]
               ) -> dict[int, tuple[float, Mode]]:
    """Real start of every job, from (model start in seconds, job index, mode) triples."""
    caps = workload.cluster.node_gpu_count.tolist()
    placed: list[tuple[float, float, tuple[int, ...]]] = []
    out: dict[int, tuple[float, Mode]] = {}
    for s_model, j, mode in sorted(picks, key=lambda p: (p[0], p[1])):
        release = workload.jobs[j].submit_time
        start = max(s_model, release)
        for t in sorted({release} | {e for _, e, _ in placed if release < e < start}):
            if _fits(placed, mode.counts, caps, t, mode.duration):
                start = t
                break
        placed.append((start, start + mode.duration, mode.counts))
        out[j] = (start, mode)
    return out


def timed_decision(workload: Instance, starts: dict[int, tuple[float, Mode]]) -> Decision:
    """Placements with start, end and concrete GPUs (free GPUs, lowest index first)."""
    cluster = workload.cluster
    busy_until = np.full(cluster.num_gpus, -np.inf)
    placements = []
    for j, (start, mode) in sorted(starts.items(), key=lambda kv: (kv[1][0], kv[0])):
        end = start + mode.duration
        gpus: list[int] = []
        for srv, k in enumerate(mode.counts):
            if k:
                free = [int(g) for g in cluster.gpus_of_node[srv]
                        if busy_until[g] <= start + 1e-7]
                if len(free) < k:
                    raise RuntimeError(f"server {srv} has {len(free)} free GPUs at {start}, "
                                       f"job {workload.jobs[j].id} needs {k} (a bug)")
                gpus += free[:k]
        busy_until[gpus] = end
        placements.append(Placement(workload.jobs[j].id, tuple(cluster.gpu_ids[g] for g in gpus),
                                    start=float(start), end=float(end)))
    return Decision(tuple(placements))


def greedy_schedule(workload: Instance, modes: list[list[Mode]],
                    deadline: Deadline | None = None) -> dict[int, tuple[float, Mode]]:
    """A warm start: jobs by Smith's ratio (weight / shortest duration, highest first), each
    placed at the earliest time its mode with the earliest end fits (serial scheme).

    ``deadline``: :class:`~dlsched.formulations.backend.TimeUp` once it passes (checked
    per job)."""
    caps = workload.cluster.node_gpu_count.tolist()
    jobs = workload.jobs
    order = sorted(range(len(jobs)), key=lambda j: (
        -jobs[j].weight / min(m.duration for m in modes[j]), jobs[j].submit_time, j))
    placed: list[tuple[float, float, tuple[int, ...]]] = []
    out: dict[int, tuple[float, Mode]] = {}
    for j in order:
        if deadline is not None:
            deadline.check("building the warm start")
        release = jobs[j].submit_time
        times = sorted({release} | {e for _, e, _ in placed if e > release})
        best: tuple[float, Mode] | None = None
        for mode in modes[j]:
            start = next(t for t in times if _fits(placed, mode.counts, caps, t, mode.duration))
            if best is None or start + mode.duration < best[0] + best[1].duration:
                best = (start, mode)
        assert best is not None
        placed.append((best[0], best[0] + best[1].duration, best[1].counts))
        out[j] = best
    return out
