"""Prefix mode of the simulator (``Policy.prefix``; ``dlsched.simulate.engine``).

Problems whose batch is placed whole (Liquid) show the policy the longest prefix of the
pending queue it can place: first the longest prefix whose summed GPUs, CPU and RAM fit
the free totals (:func:`prefix_bound`); if the policy finds no solution for it, shorter
prefixes by bisection (:func:`longest_solved_prefix`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..decision import Decision
from ..instance import Instance
from ..jobs import Job
from .live import LiveState

Call = Callable[[float, tuple[Job, ...]], tuple[Decision, float | None, bool, Instance]]


def prefix_bound(state: LiveState, max_jobs: int | None) -> int:
    """Longest queue prefix (at most ``max_jobs`` jobs) whose summed GPUs, CPU and RAM fit
    the free totals."""
    c = state.cluster
    free_gpu = state.idle_total
    free_cpu = float(c.node_cpu.sum() - np.array(state.node_cpu).sum()) + 1e-9
    free_ram = float(c.node_ram_gb.sum() - np.array(state.node_ram).sum()) + 1e-9
    limit = max_jobs or len(state.queue)
    k = 0
    for idx in state.queue:
        job = state.jobs[idx]
        if k >= limit:
            break
        if job.containers:
            gpus = sum(x.gpus for x in job.containers)
            cpu = sum(x.cpu for x in job.containers)
            ram = sum(x.ram_gb for x in job.containers)
        else:
            gpus = job.num_gpus or 0
            cpu, ram = gpus * job.cpu_per_gpu, gpus * job.ram_gb_per_gpu
        free_gpu -= gpus
        free_cpu -= cpu
        free_ram -= ram
        if free_gpu < 0 or free_cpu < 0 or free_ram < 0:
            break
        k += 1
    return k


def longest_solved_prefix(call: Call, t: float, queue: tuple[Job, ...], hi: int
                          ) -> tuple[Decision, float | None, bool, Any]:
    """The policy's answer for ``queue[:hi]`` or, if it finds no solution there, for the
    longest shorter prefix it solves (bisection: feasibility is monotone in the prefix).

    ``call(t, jobs)`` returns (decision, wake-up time, whether a solution, the snapshot);
    so does this, for the prefix kept (the last call's when none is solved).
    """
    decision, wake, found, snap = call(t, queue[:hi])
    if not found:
        # lo jobs are known to fit (0 trivially); try at most hi
        lo, hi = 0, hi - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            d, w, ok, s = call(t, queue[:mid])
            if ok:
                lo, decision, wake, found, snap = mid, d, w, True, s
            else:
                hi = mid - 1
    return decision, wake, found, snap
