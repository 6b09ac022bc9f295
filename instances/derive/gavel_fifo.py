"""Gavel's side of the dlsched / Gavel FIFO cross-check (docs/simulator.md, issue 30).

Unlike the other scripts here, this one runs Gavel's own code (stanford-futuredata/gavel,
commit c4fa400, MIT licence), in Gavel's environment, never in dlsched's: a checkout of
Gavel's ``scheduler/`` folder with its RPC stubs built (``make rpc_stubs``) and a separate
virtual environment holding what its simulator imports (numpy, cvxpy, scikit-learn,
matrix_completion, psutil, grpcio, grpcio-tools). Nothing of Gavel is copied here: the
script calls Gavel's functions.

``trace``
    Writes a Gavel trace (Gavel's 10-column format) of ``--jobs`` jobs drawn exactly as
    ``scripts/drivers/simulate_scheduler_with_generated_jobs.py -m --seed S -l LAM`` draws
    them: ``utils.generate_job(generate_multi_gpu_jobs=True)`` on a ``random.Random`` seeded
    ``S + 2`` (Gavel's ``_job_generator``), Poisson arrivals from one seeded ``S + 3``
    (``_interarrival_time_generator``), the first job at 0.
``simulate``
    Runs ``scheduler.Scheduler(simulate=True)`` on the first ``--jobs`` jobs of a trace as
    ``scripts/drivers/simulate_scheduler_with_trace.py`` does (policy ``fifo``, 360 s
    rounds, ``--seed``), with a hook on ``_schedule_jobs_on_workers`` that records every
    round (active, allocated and placed jobs and GPUs) and one on
    ``_reset_time_run_so_far`` (when the allocation is recomputed), and writes a summary
    JSON: mean JCT, Gavel's utilization, makespan, per-decile utilization, idle GPUs while
    jobs wait, rounds whose allocation exceeds the cluster.

Commands that made ``benchmarks/data/gavel/`` (Gavel in /tmp/gavel-src, its venv in
/work/gavel-venv)::

    cd /tmp/gavel-src/scheduler
    /work/gavel-venv/bin/python /path/to/instances/derive/gavel_fifo.py --gavel . \\
        trace --jobs 3000 --lam 1900 --seed 0 --out fifo-l1900-s0.trace
    /work/gavel-venv/bin/python /path/to/instances/derive/gavel_fifo.py --gavel . \\
        simulate --trace fifo-l1900-s0.trace --jobs 1000 --gpus 64 --per-server 8 \\
        --out gavel-l1900-n1000.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import random
import sys
import time
from pathlib import Path


def write_trace(jobs: int, lam: float, seed: int, out: Path) -> None:
    """Gavel's generated jobs (module docstring) as a trace file."""
    import utils  # Gavel's scheduler/utils.py

    rates = utils.read_all_throughputs_json_v2("simulation_throughputs.json")
    job_rng, gap_rng = random.Random(seed + 2), random.Random(seed + 3)
    t = 0.0
    with out.open("w") as f:
        for _ in range(jobs):
            job = utils.generate_job(throughputs=rates, reference_worker_type="v100",
                                     rng=job_rng, job_id=None, generate_multi_gpu_jobs=True)
            f.write(f"{job}\t{t:f}\n")
            t += -math.log(1.0 - gap_rng.random()) * lam


def simulate(trace: Path, jobs: int, gpus: int, per_server: int, seed: int) -> dict:
    """Gavel's FIFO on the first ``jobs`` jobs of ``trace``; the summary (docstring)."""
    import scheduler  # Gavel's scheduler/scheduler.py
    import utils

    specs, arrivals = utils.parse_trace(str(trace))
    specs, arrivals = specs[:jobs], arrivals[:jobs]
    sched = scheduler.Scheduler(utils.get_policy("fifo", solver="ECOS", seed=seed),
                                throughputs_file="simulation_throughputs.json",
                                simulate=True, seed=seed, time_per_iteration=360)
    rounds: list[tuple[float, int, int, int, int]] = []
    resets: list[float] = []
    place, reset = sched._schedule_jobs_on_workers, sched._reset_time_run_so_far

    def placed_round():
        placed = place()
        alloc = sched._allocation or {}
        size = {j: sched._jobs[j].scale_factor for j in sched._jobs}
        allocated = [j for j in alloc if j in size and alloc[j].get("v100", 0.0) > 0]
        rounds.append((sched.get_current_timestamp(), sum(size.values()),
                       sum(size[j] for j in allocated),
                       sum(len(w) for w in placed.values()),
                       sum(1 for j in allocated if j not in placed)))
        return placed

    def reset_round():
        resets.append(sched.get_current_timestamp())
        return reset()

    sched._schedule_jobs_on_workers, sched._reset_time_run_so_far = placed_round, reset_round
    start = time.process_time()
    logging.disable(logging.CRITICAL)
    with open("/dev/null", "w") as sink, contextlib.redirect_stdout(sink):
        sched.simulate({"v100": gpus, "p100": 0, "k80": 0}, arrivals, specs,
                       num_gpus_per_server={"v100": per_server, "p100": 1, "k80": 1})
        mean_jct = float(sched.get_average_jct(None))
        utilization = float(sched.get_cluster_utilization())
    cpu = time.process_time() - start
    makespan = float(sched.get_current_timestamp())
    return summary(trace, jobs, gpus, per_server, seed, mean_jct, utilization, makespan,
                   rounds, resets, cpu)


def summary(trace, jobs, gpus, per_server, seed, mean_jct, utilization, makespan,
            rounds, resets, cpu) -> dict:
    """The JSON written by ``simulate``."""
    ends = [r[0] for r in rounds[1:]] + [makespan]
    deciles = [[0.0, 0.0, 0.0] for _ in range(10)]  # busy GPU-s, idle-while-waiting, span
    over = unplaced = 0
    for (t, active, allocated, placed, left), end in zip(rounds, ends, strict=True):
        span = end - t
        k = min(9, int(10 * t / makespan))
        deciles[k][0] += placed * span
        deciles[k][1] += (gpus - placed) * span if active > placed else 0.0
        deciles[k][2] += span
        over += allocated > gpus
        unplaced += left > 0
    gaps = sorted(b - a for a, b in zip(resets, resets[1:], strict=False))
    return {
        "gavel_commit": "c4fa400", "trace": Path(trace).name, "jobs": jobs, "gpus": gpus,
        "gpus_per_server": per_server, "policy": "fifo", "seed": seed, "round_s": 360,
        "mean_jct_s": mean_jct, "gavel_utilization": utilization, "makespan_s": makespan,
        "rounds": len(rounds), "rounds_allocation_over_cluster": over,
        "rounds_allocated_job_unplaced": unplaced,
        "allocation_resets": len(resets),
        "median_reset_gap_s": gaps[len(gaps) // 2] if gaps else None,
        "utilization_by_decile": [round(b / gpus / s, 4) if s else None
                                  for b, _, s in deciles],
        "idle_gpus_while_waiting_by_decile": [round(w / s, 3) if s else None
                                              for _, w, s in deciles],
        "cpu_s": round(cpu, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel", type=Path, required=True,
                    help="Gavel's scheduler/ folder (RPC stubs built)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    tr = sub.add_parser("trace")
    tr.add_argument("--jobs", type=int, default=3000)
    tr.add_argument("--lam", type=float, default=1900.0, help="mean inter-arrival, s")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--out", type=Path, required=True)
    sm = sub.add_parser("simulate")
    sm.add_argument("--trace", type=Path, required=True)
    sm.add_argument("--jobs", type=int, default=3000)
    sm.add_argument("--gpus", type=int, default=64)
    sm.add_argument("--per-server", type=int, default=8)
    sm.add_argument("--seed", type=int, default=0)
    sm.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    out = args.out.resolve()
    trace = args.trace.resolve() if args.cmd == "simulate" else None
    sys.path.insert(0, str(args.gavel.resolve()))
    with contextlib.chdir(args.gavel):
        if args.cmd == "trace":
            write_trace(args.jobs, args.lam, args.seed, out)
        else:
            result = simulate(trace, args.jobs, args.gpus, args.per_server, args.seed)
            out.write_text(json.dumps(result, indent=1) + "\n")
            print(json.dumps({k: v for k, v in result.items() if "decile" not in k}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
