"""Replay a whole real trace in the simulator: CPU time, events per CPU-second, memory.

The traces ship with the package (``instances/workloads/``: all ten ITP clusters, the whole
Philly tail, the Alibaba GPU-sharing tasks), so this runs on a fresh clone::

    python -m dlsched.benchmarks.trace_replay --trace itp --policy fifo --problem sched2
    python -m dlsched.benchmarks.trace_replay --trace philly --problem horus
    python -m dlsched.benchmarks.trace_replay --trace alibaba --policy obp
    python -m dlsched.benchmarks.trace_replay --trace genie --policy swaf

ITP clusters are independent: each is replayed on its own cluster (sized from its own
load) and the figures are summed (jobs, events, CPU) or taken over all jobs (mean JCT =
end - submit over every job of every cluster; makespan = the largest cluster makespan).
Alibaba is a Horus workload (fractional GPUs). The speed model is the workload's default
(``SpeedModel.for_workload``: trace durations are the packed placement's time);
``--reference ideal`` restores the old reading (duration = ideal time, locality slowdown
on top) for comparisons.

GENIE has no real trace (its tasks are elastic: no recorded GPU count). ``--trace genie``
replays a seeded GENIE workload of the ITP trace's size instead: the first 69,351 tasks
(``--tasks``) of ``generate_genie_workload(seed=0, density=20)`` (Poisson arrivals at the
paper's highest density, 20 tasks/hour, so about 145 days of arrivals; Table-3 tasks with
the generator's default lengths, one-GPU latency 0.7 h on average) on 7 servers x 4 K80
GPUs. The cluster is sized so that queues form but stay bounded, as the ITP clusters are
(sized at 80 % of their recorded load): the offered load at one-GPU latency is 20 x 0.70 =
14.1 GPUs, half of 28; the model-blind baselines (FIFO, Min-Min, Weighted Fair, Capacity)
give a task up to a whole server, which costs more GPU time: on the first 5,000 tasks
their tasks wait 1.1 h (FIFO), 21 min (Min-Min) and 31 min (Weighted Fair) on average,
SWAF's 1 min, Tetris+CER's 6 s, and the makespan is the last arrival's end, while on 4 x 4
GPUs FIFO's queue grows without bound. Capacity holds each of the six model types to its
4-5 GPUs, its running tasks counted (docs/genie.md): its types overload, its tasks wait
19.4 h on average on the first 5,000 tasks, its queue grows through the run (mean JCT
211 h; makespan 250 days, the last arrival's end at 146); a decision visits the tasks it
starts and one more per type, so its cost does not grow with the queue. Tetris+Perf (the highest-PR
shape, many GPUs at low efficiency) overloads every cluster tried (6, 8, 16 servers;
1,000 tasks): its queue grows through the run (tens of thousands of tasks); its decisions
look at one task per group of tasks whose shapes rank alike (``heuristics/genie_tetris.py``),
so their cost does not grow with the queue (docs/simulator.md).

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
from ..instances.genie_gen import generate_genie_workload
from ..simulate import Policy, SpeedModel, simulate, summary

TRACE_FILES = {
    "itp": tuple(f"itp-cluster{i:02d}.json.gz" for i in range(1, 11)),
    "philly": ("philly-tail.json.gz",),
    "alibaba": ("alibaba-openb-dense.json.gz",),
}

GENIE_TASKS = 69_351
"""Tasks of the GENIE replay: as many as the whole ITP trace has jobs."""
GENIE_SETTING = {"seed": 0, "nodes": 7, "gpus_per_node": 4, "density": 20.0}
"""The GENIE replay's workload and cluster (module docstring)."""


def genie_workload(tasks: int = GENIE_TASKS) -> Instance:
    """The first ``tasks`` tasks of the seeded GENIE workload of the replay."""
    if tasks < 1:
        raise InputError(f"tasks = {tasks}", field="--tasks", fix="a number of tasks >= 1")
    hours = tasks / GENIE_SETTING["density"] * 1.1 + 24.0  # > 10 standard deviations more
    w = generate_genie_workload(duration=hours, **GENIE_SETTING)
    if len(w.jobs) < tasks:  # not with this margin; guarded all the same
        raise InputError(f"the generator drew {len(w.jobs)} tasks, fewer than {tasks}",
                         field="--tasks", fix="ask for fewer tasks")
    return w.replace(jobs=w.jobs[:tasks], name=f"genie-replay-{tasks}")


def each_workload(trace: str, problem: str, tasks: int = GENIE_TASKS
                  ) -> Iterator[tuple[str, Instance]]:
    """(name, workload) of the whole trace ``trace`` from the package data, as workloads
    of ``problem``, loaded one at a time (``genie``: the seeded GENIE workload of
    ``tasks`` tasks, module docstring)."""
    if trace == "genie":
        if problem != "genie":
            raise InputError("the GENIE replay is a GENIE workload (elastic tasks)",
                             field="--problem", fix="leave --problem out or use genie")
        yield "genie-replay", genie_workload(tasks)
        return
    if problem == "genie":
        raise InputError(f"the {trace} trace has fixed GPU demands, GENIE tasks are elastic",
                         field="--problem", fix="replay GENIE with --trace genie")
    if trace not in TRACE_FILES:
        raise InputError(f"unknown trace {trace!r}", field="--trace",
                         fix=f"use one of {sorted(TRACE_FILES) + ['genie']}")
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
           check: str = "fast", tasks: int = GENIE_TASKS) -> dict:
    """Replay every workload of ``trace``; the figures as a dict (module docstring)."""
    workloads = each_workload(trace, problem, tasks)  # one cluster in memory at a time
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
    parser.add_argument("--trace", default="itp", choices=sorted(TRACE_FILES) + ["genie"])
    parser.add_argument("--problem", default=None, choices=["sched2", "horus", "genie"],
                        help="sched2 (default), horus; genie for --trace genie (its default)")
    parser.add_argument("--tasks", type=int, default=GENIE_TASKS,
                        help=f"--trace genie: tasks of the workload ({GENIE_TASKS:,})")
    parser.add_argument("--policy", default="fifo", help="a method of the problem (fifo)")
    parser.add_argument("--reference", default="default", choices=["default", "ideal", "packed"],
                        help="duration reading (default: the workload's, i.e. packed)")
    parser.add_argument("--check", default="fast", choices=["fast", "full"])
    args = parser.parse_args(argv)
    try:
        problem = args.problem or ("genie" if args.trace == "genie" else "sched2")
        row = replay(args.trace, problem, args.policy, reference=args.reference,
                     check=args.check, tasks=args.tasks)
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
