"""Gap between online SCHED² rules and the offline optimum on small workloads.

Protocol: 20 workloads from ``dlsched.instances.sched2_gen`` (seeds 0-19; 8 jobs on 2 servers x 4
GPUs, mean inter-arrival 60 s, median duration 300 s, 68 % single-GPU jobs). Each is replayed
by every SCHED² rule (packing placement, SCHED² locality model) and solved offline through
``solve(workload, "offline-makespan" / "offline-wct")`` (CP-SAT, 1 worker, 60 s per
objective covering build and solve, time grid chosen by the method so that a proof is a
proof of the real optimum) for the optimal makespan and the optimal total JCT. Gap =
(online − offline optimum) / offline optimum, using the offline *bound* when the solve is
not proven optimal (so the gap is never understated).

Run: ``python -m dlsched.benchmarks.online_vs_offline [--workloads 20] [--jobs 8] [--out FILE.csv]``
"""

from __future__ import annotations

import argparse
import json
import time
from math import nan

import pandas as pd

from dlsched.heuristics.sched2 import RULES
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import job_table, simulate
from dlsched.solve import solve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = []
    for seed in range(args.workloads):
        w = generate_sched2(seed=seed, jobs=args.jobs, servers=2, gpus_per_server=4,
                            interarrival=60.0, median_duration=300.0)
        t0 = time.perf_counter()
        opt = {obj: solve(w, method, time_limit=args.time_limit)
               for obj, method in (("makespan", "offline-makespan"),
                                   ("weighted_jct", "offline-wct"))}
        off_s = time.perf_counter() - t0
        for rule in RULES:
            table = job_table(simulate(w, rule, record_events=False))
            online = {"makespan": table["end"].max() - table["submit"].min(),
                      "weighted_jct": table["jct"].sum()}
            row = {"seed": seed, "rule": rule, "offline_s": round(off_s, 2)}
            for obj, res in opt.items():
                ref = res.objective if res.status.value == "optimal" else res.bound
                row[f"{obj}_online"] = round(online[obj], 1)
                row[f"{obj}_opt"] = nan if res.objective is None else round(res.objective, 1)
                row[f"{obj}_status"] = res.status.value
                row[f"{obj}_offline_gap"] = nan if res.gap is None else round(res.gap, 6)
                row[f"{obj}_gap"] = nan if not ref else round((online[obj] - ref) / ref, 4)
            rows.append(row)
        print(f"seed {seed}: offline {off_s:.1f} s, makespan opt "
              f"{opt['makespan'].objective} ({opt['makespan'].status.value}), total JCT opt "
              f"{opt['weighted_jct'].objective} ({opt['weighted_jct'].status.value})",
              flush=True)
    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, index=False)
    summary = df.groupby("rule")[["makespan_gap", "weighted_jct_gap"]].agg(["mean", "max"])
    print(summary.round(4).to_string())
    proven = {obj: int((df[df.rule == "fifo"][f"{obj}_status"] == "optimal").sum())
              for obj in ("makespan", "weighted_jct")}
    print("proven optimal:", proven, "of", args.workloads)
    gaps = {rule: {obj: round(float(g[f"{obj}_gap"].mean()), 4)
                   for obj in ("makespan", "weighted_jct")}
            for rule, g in df.groupby("rule")}
    print(json.dumps({"benchmark": "online_vs_offline", "workloads": args.workloads,
                      "jobs": args.jobs, "time_limit": args.time_limit, "proven": proven,
                      "mean_gap": gaps}))


if __name__ == "__main__":
    main()
