"""How far the offline schedule models prove optimality (2 × 4 and 4 × 4 GPUs).

Protocol: SCHED² workloads (``dlsched.instances.sched2_gen``, seeds 0..S-1, mean
inter-arrival 60 s, median duration 300 s) of 8-20 jobs; each solved by ``offline-makespan``
and ``offline-wct`` (CP-SAT, 1 worker, ``--time-limit`` seconds covering build and solve).
Prints a markdown table per cluster × jobs × objective (proven count, median and max CPU
seconds of this process, largest gap) and, as its last line, one JSON object with the rows'
summary. CPU seconds are this process's; note the machine load beside them.

Run: ``python -m dlsched.benchmarks.offline_scale [--clusters 2x4,4x4] [--jobs 8,12,16,20]
[--seeds 5] [--time-limit 60]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterable
from typing import Any

import pandas as pd

from dlsched.files import atomic_path
from dlsched.formulations.offline.methods import METHODS
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.markdown import markdown_table
from dlsched.solve import solve

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="2x4", help="servers x GPUs, comma-separated")
    parser.add_argument("--jobs", default="8,12,16,20")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--objectives", default="makespan,weighted_jct")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", default=None, help="CSV of every row")
    args = parser.parse_args(argv)
    rows = []
    for cluster in args.clusters.split(","):
        servers, gpus = (int(x) for x in cluster.split("x"))
        rows += scale_rows([int(n) for n in args.jobs.split(",")], servers=servers,
                           gpus_per_server=gpus, seeds=range(args.seeds),
                           objectives=args.objectives.split(","),
                           time_limit=args.time_limit)
    df = pd.DataFrame(rows)
    if args.out:
        with atomic_path(args.out, "--out") as tmp:
            df.to_csv(tmp, index=False)
    df["proven"] = df["status"] == "optimal"
    table = df.groupby(["cluster", "jobs", "objective"]).agg(
        proven=("proven", "sum"), runs=("proven", "size"), cpu_median=("cpu_s", "median"),
        cpu_max=("cpu_s", "max"), gap_max=("gap", "max"), exact_grid=("exact_grid", "sum"))
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    frame = table.round(3).reset_index()
    print(markdown_table(list(frame.columns), frame.itertuples(index=False)))
    summary = {f"{c} {n} {o}": {k: (round(float(v), 4) if isinstance(v, float) else int(v))
                                for k, v in rec.items()}
               for (c, n, o), rec in table.to_dict("index").items()}
    print(json.dumps({"benchmark": "offline_scale", "time_limit": args.time_limit,
                      "seeds": args.seeds, "results": summary}))


if __name__ == "__main__":
    main()
