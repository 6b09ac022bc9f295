"""Wall time, peak memory and events per second of replaying the real traces.

Replays every ITP cluster (all 69,351 jobs, each cluster sized from its own offered load at
80 % target utilization) and the whole Philly tail (14,237 jobs) under

* ``horus:fifo`` — plain FIFO: exclusive GPUs, the first idle GPUs in cluster order;
* ``sched2:fifo`` — FIFO with the packing placement of SCHED² Fig. 2;
* ``sched2:sif`` — shortest ideal time first with packing;

all with the SCHED² locality model (and the Horus interference model, inert here since
every policy keeps GPUs exclusive). Each (trace, policy) runs in a fresh process so that
its peak memory (ru_maxrss, which includes loading the trace) is its own.

Run: ``python -m dlsched.benchmarks.trace_replay [--policies sched2:fifo ...] [--out FILE.jsonl]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import time


def _replay(trace: str, policy: str, queue) -> None:
    from dlsched.instances.traces import itp_workloads, philly_workload
    from dlsched.simulate import SpeedModel, simulate, summary
    problem, method = policy.split(":")
    speed = SpeedModel(locality="sched2", interference="horus" if problem == "horus" else None)
    t0 = time.perf_counter()
    workloads = (itp_workloads(problem=problem) if trace == "itp"
                 else {"philly": philly_workload(problem=problem)})
    load_s = time.perf_counter() - t0
    out = {"trace": trace, "policy": policy, "load_s": round(load_s, 2), "jobs": 0, "events": 0,
           "sim_s": 0.0, "gpus": 0, "clusters": len(workloads)}
    per = {}
    for name, w in workloads.items():
        run = simulate(w, method, speed, record_events=False)
        s = summary(run)
        out["jobs"] += len(w.jobs)
        out["events"] += run.event_count
        out["sim_s"] += run.wall_time
        out["gpus"] += w.cluster.num_gpus
        per[name] = {"gpus": w.cluster.num_gpus, "jobs": len(w.jobs),
                     "jct_mean_h": round(s["jct_mean"] / 3600, 2),
                     "wait_mean_h": round(s["wait_mean"] / 3600, 2),
                     "util": round(s["gpu_utilization"], 3), "sim_s": round(run.wall_time, 2)}
    out["sim_s"] = round(out["sim_s"], 2)
    out["events_per_s"] = round(out["events"] / out["sim_s"])
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["per_cluster"] = per
    queue.put(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="+",
                        default=["horus:fifo", "sched2:fifo", "sched2:sif"])
    parser.add_argument("--traces", nargs="+", default=["itp", "philly"])
    parser.add_argument("--out", default=None, help="write the results as JSON lines")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    rows = []
    for trace in args.traces:
        for policy in args.policies:
            q = ctx.Queue()
            p = ctx.Process(target=_replay, args=(trace, policy, q))
            p.start()
            row = q.get()
            p.join()
            rows.append(row)
            brief = {k: v for k, v in row.items() if k != "per_cluster"}
            print(json.dumps(brief), flush=True)
            for name, c in row["per_cluster"].items():
                print(f"   {name}: {json.dumps(c)}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
