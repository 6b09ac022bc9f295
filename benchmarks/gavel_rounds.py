"""Does Gavel's round-based simulation explain its JCT gap to dlsched at 3,000 jobs?

A cross-check (issue 30) found, under FIFO with locality and interference off, dlsched's
mean JCT 62,736 s and Gavel's simulator 204,337 s on 3,000 jobs (3.3x) but agreement
within 5 % on 1,000. Gavel's simulator (stanford-futuredata/gavel, ``scheduler.py``)
leases GPUs in rounds of ``time_per_iteration`` = 360 s: a job that finishes inside a
round holds its GPUs to the round's end, and an arrival is admitted at the next round's
start. This benchmark measures that semantic in dlsched's simulator: Gavel-style traces
(Gavel's ``utils._generate_duration`` / ``_generate_scale_factor`` distributions,
re-drawn with numpy: 80 % of jobs 10^U(1.5, 3) min, 20 % 10^U(3, 4) min; 70 / 10 / 15 /
5 % on 1 / 2 / 4 / 8 GPUs; Poisson arrivals) on 64 V100s, FIFO, replayed as is and with
every arrival and duration rounded up to a multiple of 360 s (FIFO never preempts, so
this is exactly a round-leased schedule). The last line is one JSON object.

    python -m dlsched.benchmarks.gavel_rounds
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dlsched.instance import Instance
from dlsched.jobs import Job
from dlsched.markdown import markdown_table
from dlsched.simulate import Policy, SpeedModel, job_table, simulate
from dlsched.topology import homogeneous_cluster

ROUND_S = 360.0  # Gavel's default time_per_iteration
GPUS = 64
LOADS = (1900.0, 2100.0)  # mean inter-arrival, s: offered load ~1.0 and ~0.9 of 64 GPUs


def gavel_like(jobs: int, interarrival: float, seed: int = 0) -> list[tuple[float, int, float]]:
    """(arrival, GPUs, duration s) of a Gavel-style trace (module docstring)."""
    rng = np.random.default_rng(seed)
    out, t = [], 0.0
    for _ in range(jobs):
        r = rng.uniform()
        gpus = 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8
        long_job = rng.random() >= 0.8
        minutes = 10 ** (rng.uniform(3, 4) if long_job else rng.uniform(1.5, 3))
        out.append((t, gpus, 60.0 * minutes))
        t += rng.exponential(interarrival)
    return out


def workload(trace: list[tuple[float, int, float]], rounds: bool) -> Instance:
    """The trace as a SCHED² workload on 8 servers x 8 V100 (``rounds``: leased)."""
    def up(x: float) -> float:
        return float(np.ceil(x / ROUND_S) * ROUND_S) if rounds else x

    jobs = tuple(Job(id=f"g{i:05d}", submit_time=round(up(t), 3), num_gpus=g,
                     duration=round(up(d), 3), model="resnet50", kind="train")
                 for i, (t, g, d) in enumerate(trace))
    return Instance(problem="sched2", cluster=homogeneous_cluster(
        GPUS // 8, 8, gpu_type="v100", gpu_mem_gb=16.0), jobs=jobs, params={},
        name="gavel-like")


def mean_jct(trace: list[tuple[float, int, float]], rounds: bool) -> float:
    """Mean JCT of FIFO from each job's own arrival (a leased run's admission wait
    included), locality and interference off."""
    run = simulate(workload(trace, rounds), Policy("fifo"),
                   SpeedModel(locality=None, interference=None), record_events=False,
                   frag_samples=False)
    ends = job_table(run).set_index("job")["end"]
    return float(np.mean([ends[f"g{i:05d}"] - t for i, (t, _g, _d) in enumerate(trace)]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000,
                    help="jobs of the longer trace (3000); the shorter has a third")
    args = ap.parse_args(argv)
    start = time.process_time()
    figures = []
    for ia in LOADS:
        trace = gavel_like(args.jobs, ia)
        for n in (args.jobs // 3, args.jobs):
            jct = {rounds: mean_jct(trace[:n], rounds) for rounds in (False, True)}
            figures.append({"interarrival_s": ia, "jobs": n, "jct_events_s": jct[False],
                            "jct_rounds_s": jct[True],
                            "rounds_over_events": jct[True] / jct[False]})
    print(markdown_table(
        ["mean inter-arrival (s)", "jobs", "mean JCT, event-driven (s)",
         "mean JCT, 360 s rounds (s)", "rounds / events"],
        [[f"{f['interarrival_s']:g}", f["jobs"], f"{f['jct_events_s']:,.0f}",
          f"{f['jct_rounds_s']:,.0f}", f"{f['rounds_over_events']:.4f}"] for f in figures]))
    print(json.dumps({"figures": figures, "cpu_s": time.process_time() - start}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
