"""Replay a whole real trace in the simulator: CPU time, events per CPU-second, memory.

The traces ship with the package (``instances/workloads/``: all ten ITP clusters, the whole
Philly tail, the Alibaba GPU-sharing tasks), so this runs on a fresh clone::

    python -m dlsched.benchmarks.trace_replay --trace itp --policy fifo --problem sched2
    python -m dlsched.benchmarks.trace_replay --trace philly --problem horus
    python -m dlsched.benchmarks.trace_replay --trace alibaba --policy obp

ITP clusters are independent: each is replayed on its own cluster (sized from its own
load) and the figures are summed (jobs, events, CPU) or taken over all jobs (mean JCT =
end - submit over every job of every cluster; makespan = the largest cluster makespan).
Alibaba is a Horus workload (fractional GPUs). The speed model is the workload's default
(``SpeedModel.for_workload``: trace durations are the packed placement's time);
``--reference ideal`` restores the old reading (duration = ideal time, locality slowdown
on top) for comparisons.

``cpu_s`` is the CPU time of the simulations (process time, loading excluded; loading is
``load_cpu_s``); ``peak_rss_mb`` is the process's peak resident memory, loading included.
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from importlib import resources

from ..errors import InputError
from ..instance import Instance
from ..instance_io import load_instance
from ..simulate import Policy, SpeedModel, simulate, summary

TRACE_FILES = {
    "itp": tuple(f"itp-cluster{i:02d}.json.gz" for i in range(1, 11)),
    "philly": ("philly-tail.json.gz",),
    "alibaba": ("alibaba-openb-dense.json.gz",),
}


def each_workload(trace: str, problem: str) -> Iterator[tuple[str, Instance]]:
    """(name, workload) of the whole trace ``trace`` from the package data, as workloads
    of ``problem``, loaded one at a time."""
    if trace not in TRACE_FILES:
        raise InputError(f"unknown trace {trace!r}", field="--trace",
                         fix=f"use one of {sorted(TRACE_FILES)}")
    if trace == "alibaba" and problem != "horus":
        raise InputError("the Alibaba trace shares GPUs (fractional demands)", field="--problem",
                         fix="replay it with --problem horus")
    for name in TRACE_FILES[trace]:
        ref = resources.files("dlsched.instances").joinpath("workloads", name)
        with resources.as_file(ref) as path:
            w = load_instance(path)
        if w.problem != problem:
            w = w.replace(problem=problem, params={})
        yield name.split(".")[0], w


def replay(trace: str, problem: str, policy: str, *, reference: str = "default",
           check: str = "fast") -> dict:
    """Replay every workload of ``trace``; the figures as a dict (module docstring)."""
    workloads = each_workload(trace, problem)  # one cluster in memory at a time
    load_cpu = 0.0
    row = {"trace": trace, "problem": problem, "policy": policy, "check": check, "jobs": 0,
           "events": 0, "policy_calls": 0, "cpu_s": 0.0, "wall_s": 0.0, "gpus": 0}
    jct_sum = 0.0
    makespan = 0.0
    per = {}
    while True:
        c0 = time.process_time()
        item = next(workloads, None)
        load_cpu += time.process_time() - c0
        if item is None:
            break
        name, w = item
        speed = SpeedModel.for_workload(w)
        if reference != "default":
            speed = replace(speed, reference=reference)
        c, t = time.process_time(), time.perf_counter()
        run = simulate(w, Policy(policy), speed, record_events=False, check=check)
        cpu, wall = time.process_time() - c, time.perf_counter() - t
        s = summary(run)
        row["jobs"] += len(w.jobs)
        row["events"] += run.event_count
        row["policy_calls"] += run.policy_calls
        row["cpu_s"] += cpu
        row["wall_s"] += wall
        row["gpus"] += w.cluster.num_gpus
        jct_sum += s["jct_mean"] * s["completed"]
        makespan = max(makespan, s["makespan"])
        per[name] = {"gpus": w.cluster.num_gpus, "jobs": len(w.jobs), "events": run.event_count,
                     "cpu_s": round(cpu, 3), "jct_mean_h": round(s["jct_mean"] / 3600, 3),
                     "wait_mean_h": round(s["wait_mean"] / 3600, 3),
                     "makespan_d": round(s["makespan"] / 86400, 3),
                     "util": round(s["gpu_utilization"], 4),
                     "frag": round(s["fragmentation_mean"], 4)}
        del run, w  # before the next cluster loads
    row["cpu_s"] = round(row["cpu_s"], 3)
    row["wall_s"] = round(row["wall_s"], 3)
    row["events_per_cpu_s"] = round(row["events"] / row["cpu_s"]) if row["cpu_s"] else None
    row["load_cpu_s"] = round(load_cpu, 3)
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    row["jct_mean_s"] = jct_sum / row["jobs"]
    row["makespan_s"] = makespan
    row["reference"] = reference
    row["loadavg_1m"] = round(os.getloadavg()[0], 2)
    row["per_workload"] = per
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="itp", choices=sorted(TRACE_FILES))
    parser.add_argument("--problem", default="sched2", choices=["sched2", "horus"])
    parser.add_argument("--policy", default="fifo", help="a method of the problem (fifo)")
    parser.add_argument("--reference", default="default", choices=["default", "ideal", "packed"],
                        help="duration reading (default: the workload's, i.e. packed)")
    parser.add_argument("--check", default="fast", choices=["fast", "full"])
    args = parser.parse_args(argv)
    try:
        row = replay(args.trace, args.problem, args.policy, reference=args.reference,
                     check=args.check)
    except InputError as exc:
        print(f"trace_replay: {exc.one_line()}", file=sys.stderr)
        return 2
    per = row.pop("per_workload")
    print(f"{'workload':<22}{'GPUs':>6}{'jobs':>7}{'events':>8}{'CPU s':>8}{'JCT h':>9}"
          f"{'wait h':>9}{'span d':>8}{'util':>7}{'frag':>7}")
    for name, p in per.items():
        print(f"{name:<22}{p['gpus']:>6}{p['jobs']:>7}{p['events']:>8}{p['cpu_s']:>8.2f}"
              f"{p['jct_mean_h']:>9.2f}{p['wait_mean_h']:>9.2f}{p['makespan_d']:>8.2f}"
              f"{p['util']:>7.3f}{p['frag']:>7.3f}")
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
