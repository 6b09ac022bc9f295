"""CPU time of one decision per method through ``solve()`` at 1,024 GPUs (``--gpus``).

Snapshots (seed 0), for G GPUs (``--gpus``, default 1,024, a multiple of 8): Horus
``generate_horus`` (G/8 × 8 GTX 1080, half busy, β = 15 pending); GENIE
``generate_genie(snapshot=True)`` on G/4 × 4 GPUs; Liquid ``generate_liquid`` on G/2 × 2
T4 with a quarter of the GPUs busy, its first 15 jobs pending; SCHED² G/8 × 8 with half
the GPUs busy (running jobs in cluster order) and the first 15 jobs of a
``generate_sched2`` workload pending.

What is timed: the process CPU time (``time.process_time``, not wall time: the machine is
shared) of one call ``solve(snapshot, method)``, everything a library user pays for a
decision: the instance checks, the method, the independent validation of its decision and
the objective. Each timed call gets a snapshot it has never seen: a new ``Instance`` with
the same fields (built before the clock starts), so nothing cached on an instance (its
GPU usage, a problem's arrays) carries over from an earlier call. The ``Cluster`` object
is shared, as a scheduler or the simulator keeps one cluster across decisions: what is
derived from the topology alone (GPU index, server distances) is computed once, by one
untimed warm-up call per method (which also pays imports and per-params parsing). The
figure is the median over ``--repeat`` calls, each timed alone: the median is the cost
of a typical call, robust to a call that meets a garbage collection or another process
evicting its caches (the mean would carry those, the minimum would hide them); the table
also shows the minimum and maximum. The last line is one JSON object: the median CPU ms
per ``problem:method``, ``max_ms`` (the largest median) and the load.

    python -m dlsched.benchmarks.policy_latency [--repeat 5] [--gpus 4096]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from dlsched.instance import Instance
from dlsched.jobs import RunningJob
from dlsched.solve import solve
from dlsched.topology import homogeneous_cluster

METHODS = {
    "horus": ("greedy", "obp", "fifo"),
    "genie": ("swaf", "fifo", "minmin", "wfair", "capacity", "tetris-perf", "tetris-cer"),
    "liquid": ("bestfit", "firstfit"),
    "sched2": ("fifo", "sif", "dsif", "saf", "lrf", "spf"),
}


def _sched2_snapshot(gpus: int) -> Instance:
    from dlsched.instances.sched2_gen import generate_sched2
    w = generate_sched2(seed=0, jobs=15)
    cluster = homogeneous_cluster(gpus // 8, 8)
    ids = cluster.gpu_ids
    running = tuple(RunningJob(job=f"r{i}", gpus=tuple(ids[8 * i:8 * i + 8]), remaining_s=600.0)
                    for i in range(gpus // 16))
    jobs = tuple(j.replace(submit_time=0.0) for j in w.jobs)
    return Instance(problem="sched2", cluster=cluster, jobs=jobs, params=w.params,
                    running=running, time=0.0, name=f"sched2-{gpus}-half-busy")


def _first(inst: Instance, k: int) -> Instance:
    return inst.replace(jobs=inst.jobs[:k])


def snapshots(gpus: int = 1024) -> dict[str, Instance]:
    """The four snapshots of ``gpus`` GPUs (module docstring)."""
    from dlsched.instances.genie_gen import generate_genie
    from dlsched.instances.horus_gen import generate_horus
    from dlsched.instances.liquid_gen import generate_liquid
    return {"horus": generate_horus(seed=0, nodes=gpus // 8),
            "genie": generate_genie(seed=0, snapshot=True, nodes=gpus // 4, gpus_per_node=4),
            "liquid": _first(generate_liquid(seed=0, nodes=gpus // 2, gpus_per_node=2,
                                             busy=0.25), 15),
            "sched2": _sched2_snapshot(gpus)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed calls per method, each on a new snapshot (default 5)")
    parser.add_argument("--gpus", type=int, default=1024,
                        help="GPUs of every snapshot (a multiple of 8; default 1024)")
    args = parser.parse_args(argv)
    if args.gpus < 16 or args.gpus % 8:
        parser.error("--gpus must be a multiple of 8, at least 16")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    out: dict[str, float] = {}
    print(f"{'problem':<8}{'method':<13}{'GPUs':>6}{'jobs':>6}{'median ms':>11}"
          f"{'min ms':>9}{'max ms':>9}")
    for problem, inst in snapshots(args.gpus).items():
        for method in METHODS[problem]:
            solve(inst, method)  # warm-up: imports, the cluster's derived views
            fresh = [inst.replace() for _ in range(args.repeat)]
            times = []
            for snapshot in fresh:
                c = time.process_time()
                solve(snapshot, method)
                times.append((time.process_time() - c) * 1000)
            ms = statistics.median(times)
            out[f"{problem}:{method}"] = round(ms, 3)
            print(f"{problem:<8}{method:<13}{inst.cluster.num_gpus:>6}{len(inst.jobs):>6}"
                  f"{ms:>11.2f}{min(times):>9.2f}{max(times):>9.2f}")
    out["max_ms"] = max(out.values())
    out["loadavg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
