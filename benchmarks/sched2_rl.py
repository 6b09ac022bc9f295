"""SCHED²'s DQN agent against the six selection rules, and against the offline optimum.

Part 1: the 30 test episodes (1000 jobs, seeds 1000-1029, the congested regime) at 60 %,
68 % and 75 % one-GPU jobs: mean execution effectiveness E (Eq. 2), makespan, mean JCT
and mean wait of ``dqn`` (the shipped agent, or ``--weights``) and of FIFO, SIF, DSIF,
SAF, LRF and SPF, every run through the simulator. Part 2: on small workloads (2 × 4 GPUs,
``--small-jobs`` jobs) the offline optimum's makespan and total weighted completion time
(the exact offline methods registered for ``sched2``) beside the rules' (the shipped agent
is trained for 15 × 8 GPUs and refuses another cluster).

    python -m dlsched.benchmarks.sched2_rl [--episodes 30] [--weights FILE]

The last line is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from dlsched.instances.sched2_gen import generate_sched2
from dlsched.markdown import markdown_table
from dlsched.registry import methods_for
from dlsched.rl.sched2_train import RULES, TEST_SEEDS, EpisodeSpec, compare
from dlsched.simulate import Policy, job_table, simulate
from dlsched.solve import solve

from .paper_claims import claim

SHARES = (0.60, 0.68, 0.75)
POLICIES = ("dqn", *RULES)


def part_one(weights: str | None, episodes: int, jobs: int) -> dict:
    out: dict = {}
    for share in SHARES:
        table = compare(weights, EpisodeSpec(jobs=jobs, single_share=share).workloads(
            list(TEST_SEEDS)[:episodes]), POLICIES)
        per = {}
        for name, rows in table.groupby("policy", sort=False):
            per[name] = {k: {"mean": float(rows[k].mean()), "std": float(rows[k].std(ddof=0)),
                             "min": float(rows[k].min()), "max": float(rows[k].max())}
                         for k in ("effectiveness_mean", "makespan", "jct_mean", "wait_mean")}
        out[f"{share:.2f}"] = per
    return out


def part_two(workloads: int, jobs: int, time_limit: float) -> dict:
    offline = {m: m for m in methods_for("sched2") if m.startswith("offline")}
    rows = []
    for s in range(workloads):
        w = generate_sched2(seed=s, jobs=jobs, servers=2, gpus_per_server=4, interarrival=60.0)
        row: dict = {"seed": s}
        for name in RULES:
            t = job_table(simulate(w, Policy(name), record_events=False))
            row[name] = {"makespan": float(t["end"].max() - t["submit"].min()),
                         "total_completion": float((t["end"] - t["submit"]).sum())}
        for m in offline:
            r = solve(w, m, time_limit=time_limit)
            row[m] = {"status": r.status.value, "objective": r.objective, "bound": r.bound}
        rows.append(row)
    return {"offline_methods": sorted(offline), "workloads": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", help="agent weights (default: the shipped agent)")
    parser.add_argument("--episodes", type=int, default=30, help="test episodes (30)")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per episode (1000)")
    parser.add_argument("--small-workloads", type=int, default=5, help="part 2 workloads (5)")
    parser.add_argument("--small-jobs", type=int, default=8, help="jobs per small workload (8)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per offline solve (60)")
    args = parser.parse_args(argv)
    start = time.process_time()
    one = part_one(args.weights, args.episodes, args.jobs)
    for share, per in one.items():
        print(f"\n### {float(share):.0%} one-GPU jobs, {args.episodes} test episodes\n")
        print(markdown_table(
            ["policy", "mean E", "E std", "makespan h", "mean JCT h", "mean wait h"],
            [[name, f"{m['effectiveness_mean']['mean']:.3f}",
              f"{m['effectiveness_mean']['std']:.3f}", f"{m['makespan']['mean'] / 3600:.1f}",
              f"{m['jct_mean']['mean'] / 3600:.2f}", f"{m['wait_mean']['mean'] / 3600:.2f}"]
             for name, m in per.items()]))
        best = max(RULES, key=lambda r: per[r]["effectiveness_mean"]["mean"])
        ratio = per["dqn"]["effectiveness_mean"]["mean"] / per[best]["effectiveness_mean"]["mean"]
        print(f"\ndqn / best rule ({best}) mean E: {ratio:.3f} (the paper: "
              f"{1 + claim('sched2.fig7.E-68').value:g} at 68 %)")
        per["best_rule"] = best
        per["dqn_over_best_rule"] = ratio
    two = part_two(args.small_workloads, args.small_jobs, args.time_limit)
    print(f"\n### small workloads: 2 x 4 GPUs, {args.small_jobs} jobs\n")
    print(markdown_table(
        ["seed", *(f"{p} makespan" for p in RULES), "offline"],
        [[row["seed"], *(f"{row[p]['makespan']:.0f}" for p in RULES),
          "; ".join(f"{m}: {row[m]['status']} {row[m]['objective']}"
                    for m in two["offline_methods"]) or "no offline method registered"]
         for row in two["workloads"]]))
    mean_e = {p: statistics.fmean([one[s][p]["effectiveness_mean"]["mean"] for s in one])
              for p in POLICIES}
    print(json.dumps({"benchmark": "sched2_rl", "cpu_s": round(time.process_time() - start, 1),
                      "episodes": args.episodes, "mean_effectiveness_over_shares": mean_e,
                      "by_share": one, "small": two}, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
