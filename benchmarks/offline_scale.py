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

import pandas as pd

from dlsched.formulations.offline.scale import scale_rows


def _markdown(df: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, df.columns)) + " |",
             "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


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
        df.to_csv(args.out, index=False)
    df["proven"] = df["status"] == "optimal"
    table = df.groupby(["cluster", "jobs", "objective"]).agg(
        proven=("proven", "sum"), runs=("proven", "size"), cpu_median=("cpu_s", "median"),
        cpu_max=("cpu_s", "max"), gap_max=("gap", "max"), exact_grid=("exact_grid", "sum"))
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    print(_markdown(table.round(3).reset_index()))
    summary = {f"{c} {n} {o}": {k: (round(float(v), 4) if isinstance(v, float) else int(v))
                                for k, v in rec.items()}
               for (c, n, o), rec in table.to_dict("index").items()}
    print(json.dumps({"benchmark": "offline_scale", "time_limit": args.time_limit,
                      "seeds": args.seeds, "results": summary}))


if __name__ == "__main__":
    main()
