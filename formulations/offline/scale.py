"""How far the offline models prove: rows for a benchmark table.

:func:`scale_rows` generates SCHED² workloads (``dlsched.instances.sched2_gen``, the
``online_vs_offline`` protocol: mean inter-arrival 60 s, median duration 300 s) on
``servers`` × ``gpus_per_server`` GPUs and solves each with the offline methods through
``solve``; one row per (jobs, seed, objective) with build and solve seconds (wall and
this process's CPU), status, objective, bound, gap, the grid unit and whether it is exact.
``python -m dlsched.benchmarks.offline_scale`` prints them; ``exact_scale`` can call it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from dlsched.instances.sched2_gen import generate_sched2
from dlsched.solve import solve

from .methods import METHODS

OBJECTIVE_METHOD = {objective: name for name, objective in METHODS.items()}


def scale_rows(jobs: Iterable[int] = (8, 12, 16, 20), *, servers: int = 2,
               gpus_per_server: int = 4, seeds: Iterable[int] = range(5),
               objectives: Iterable[str] = ("makespan", "weighted_jct"),
               time_limit: float = 60.0, **options: Any) -> list[dict[str, Any]]:
    """Solve generated workloads with the offline methods; one row per solve.

    Parameters
    ----------
    jobs
        Workload sizes (jobs per workload).
    servers, gpus_per_server
        The cluster.
    seeds
        Generator seeds.
    objectives
        ``makespan``, ``weighted_jct`` and/or ``qos``.
    time_limit
        Seconds per solve (build and solve).
    options
        Passed to the methods (``num_workers``, ``solver_options``, ``symmetry``, ...).

    Returns
    -------
    list of dict
        Keys: cluster, jobs, seed, objective, status, objective_value, bound, gap,
        build_s, solve_s, wall_s, cpu_s, time_unit, exact_grid, bnb_nodes and
        bnb_complete (``offline-wct``'s branch and bound: nodes, finished; None if not run).
    """
    rows = []
    for n in jobs:
        for seed in seeds:
            w = generate_sched2(seed=seed, jobs=n, servers=servers,
                                gpus_per_server=gpus_per_server, interarrival=60.0,
                                median_duration=300.0)
            for objective in objectives:
                cpu = time.process_time()
                r = solve(w, OBJECTIVE_METHOD[objective], time_limit=time_limit, **options)
                rows.append({
                    "cluster": f"{servers}x{gpus_per_server}", "jobs": n, "seed": seed,
                    "objective": objective, "status": r.status.value,
                    "objective_value": r.objective, "bound": r.bound, "gap": r.gap,
                    "build_s": r.build_time, "solve_s": r.extra.get("solve_time"),
                    "wall_s": r.wall_time, "cpu_s": time.process_time() - cpu,
                    "time_unit": r.extra.get("time_unit"),
                    "exact_grid": r.extra.get("exact_grid"),
                    "bnb_nodes": r.extra.get("bnb_nodes"),
                    "bnb_complete": r.extra.get("bnb_complete")})
    return rows
