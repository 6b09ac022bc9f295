"""CPU time of one decision per method through ``solve()`` at 1,024 GPUs (``--gpus``).

Snapshots (seed 0), for G GPUs (``--gpus``, default 1,024, a multiple of 8): Horus
``generate_horus`` (G/8 × 8 GTX 1080, half busy, β = 15 pending); GENIE
``generate_genie(snapshot=True)`` on G/4 × 4 GPUs; Liquid ``generate_liquid`` on G/2 × 2
T4 with a quarter of the GPUs busy, its first 15 jobs pending; SCHED² G/8 × 8 with half
the GPUs busy (running jobs in cluster order) and the first 15 jobs of a
``generate_sched2`` workload pending. Each method runs through :func:`dlsched.solve.solve`
(validation and the objective included), ``--repeat`` times after one warm-up call; the
figure is CPU seconds per call (process time). The last line is one JSON object.

    python -m dlsched.benchmarks.policy_latency [--repeat 5] [--gpus 4096]
"""

from __future__ import annotations

import argparse
import json
import os
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
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=1024,
                        help="GPUs of every snapshot (a multiple of 8; default 1024)")
    args = parser.parse_args(argv)
    if args.gpus < 16 or args.gpus % 8:
        parser.error("--gpus must be a multiple of 8, at least 16")
    out: dict[str, float] = {}
    print(f"{'problem':<8}{'method':<13}{'GPUs':>6}{'jobs':>6}{'CPU ms':>9}")
    for problem, inst in snapshots(args.gpus).items():
        for method in METHODS[problem]:
            solve(inst, method)
            c = time.process_time()
            for _ in range(args.repeat):
                solve(inst, method)
            ms = (time.process_time() - c) / args.repeat * 1000
            out[f"{problem}:{method}"] = round(ms, 3)
            print(f"{problem:<8}{method:<13}{inst.cluster.num_gpus:>6}{len(inst.jobs):>6}"
                  f"{ms:>9.2f}")
    out["max_ms"] = max(out.values())
    out["loadavg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
