"""An upper bound on the effective GPUs (the SCHED² snapshot objective) any valid
decision starts.

The bound (:func:`effective_gpus_bound`) relaxes the snapshot to a knapsack: each
submitted job j is worth at most ``v_j = num_gpus / s_j`` where ``s_j`` is the smallest
locality slowdown any placement on the idle GPUs can give it, and the started jobs' GPUs
fit in the idle GPUs. ``s_j`` comes from filling the locality groups with the most idle
GPUs first: the slowdown falls as Σ n_s² grows (``remote_peer_share``), and a convex sum
under per-group caps is largest when the largest groups are filled first. The knapsack is
solved exactly by dynamic programming over idle GPU counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .sched2 import locality_slowdown, parse_sched2_params, submitted_part

if TYPE_CHECKING:
    from ..instance import Instance

def _packed_counts(demand: int, idle_per_group: np.ndarray) -> list[int] | None:
    """GPUs per group when ``demand`` fills the groups with the most idle GPUs first."""
    counts, left = [], demand
    for idle in sorted(idle_per_group.tolist(), reverse=True):
        if left == 0:
            break
        take = min(idle, left)
        if take > 0:
            counts.append(take)
            left -= take
    return counts if left == 0 else None


def effective_gpus_bound(instance: Instance) -> float:
    """An upper bound on the effective GPUs (the SCHED² objective) of any valid decision.

    Parameters
    ----------
    instance
        A SCHED² snapshot.

    Returns
    -------
    float
        The optimum of the knapsack relaxation of the module docstring (0 when no
        submitted job fits on the idle GPUs).
    """
    params = parse_sched2_params(instance.params)
    cluster = instance.cluster
    idle_gpus = ~instance.gpu_busy
    groups = cluster.gpu_locality_group[idle_gpus]
    idle_per_group = np.unique(groups, return_counts=True)[1] if groups.size else np.zeros(0)
    capacity = int(idle_gpus.sum())
    best = np.zeros(capacity + 1)  # best[c]: most value with at most c GPUs
    for job in submitted_part(instance).jobs:
        need = int(job.num_gpus)
        counts = _packed_counts(need, idle_per_group) if need <= capacity else None
        if counts is None:
            continue
        value = need / locality_slowdown(params.sensitivity(job.model), counts)
        best[need:] = np.maximum(best[need:], best[:capacity + 1 - need] + value)
    return float(best[capacity])
