"""Alg. 1's queues of the Horus greedy: the clustering features and the weighted-fair
buffers (``dlsched.heuristics.horus`` uses them)."""

from __future__ import annotations

import numpy as np

from dlsched.jobs import Job


def job_features(jobs: tuple[Job, ...]) -> np.ndarray:
    """The four clustering features of Sec. 4.2.2: tasks, GPU util, GPUs per task, GPU memory."""
    return np.array([[1.0, j.gpu_util, j.num_gpus, j.gpu_mem_gb] for j in jobs], dtype=float)


def weighted_fair_pick(queues: list[list[int]], waits: np.ndarray, beta: int) -> list[int]:
    """Pick β job indices across queues in proportion to w_x = max(len, median wait × len).

    Shares are rounded by largest remainder, capped by queue length, and what a short
    queue cannot take goes to the others in weight order. Inside a queue the longest
    waiting jobs go first.
    """
    queues = [sorted(q, key=lambda j: (-waits[j], j)) for q in queues if q]
    if not queues:
        return []
    weights = np.array([max(len(q), float(np.median(waits[q])) * len(q)) for q in queues])
    beta = min(beta, sum(len(q) for q in queues))
    exact = weights / weights.sum() * beta
    take = np.floor(exact).astype(int)
    order = sorted(range(len(queues)), key=lambda x: (-(exact[x] - take[x]), x))
    for x in order[: beta - int(take.sum())]:
        take[x] += 1
    take = np.minimum(take, [len(q) for q in queues])
    by_weight = sorted(range(len(queues)), key=lambda x: (-weights[x], x))
    while take.sum() < beta:
        for x in by_weight:
            if take[x] < len(queues[x]) and take.sum() < beta:
                take[x] += 1
    return [j for x, q in enumerate(queues) for j in q[: take[x]]]


def buffer_order(queue_lists: list[list[int]], waits: np.ndarray, beta: int,
                 refill: bool = True) -> list[int]:
    """Alg. 1's buffers, concatenated: the order in which one call tries the jobs.

    Each buffer is :func:`weighted_fair_pick` of β jobs, in order of waiting time (longest
    first, ties: lower index). With ``refill`` the picked jobs leave their queues and the
    next buffer is picked from what is left, weights taken again, until the queues are
    empty ("while queues in Q is not empty do", line 3; docs/horus.md); without it, the
    first buffer alone.
    """
    left = [list(q) for q in queue_lists]
    order: list[int] = []
    while any(left):
        buffer = sorted(weighted_fair_pick(left, waits, beta), key=lambda j: (-waits[j], j))
        order += buffer
        if not refill:
            break
        taken = set(buffer)
        left = [[j for j in q if j not in taken] for q in left]
    return order
