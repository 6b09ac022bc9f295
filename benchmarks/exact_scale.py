"""Exact models at the papers' scales on every backend: build and solve time, status, gap.

Families (one generated instance each per seed, seeds 0 .. ``--seeds`` − 1):

* ``horus-{paper,colocation}-{0.5,0.9,0.97}``: Horus, 128 servers × 8 GTX 1080, β = 15,
  ``busy`` share of GPUs running jobs (``dlsched.instances.horus_gen.generate_horus``);
* ``genie-128x50``, ``genie-256x100``: GENIE snapshots, 32 / 64 servers × 4 GPUs, 50 / 100
  waiting tasks, half the GPUs busy (``generate_genie(..., waiting=, busy=0.5)``);
* ``liquid-{5,10,15,20}``: Liquid Fig. 19 batches (``generate_liquid(nodes=n)``);
* ``offline-{makespan,wct}-{8,20}``: SCHED² workloads of 8 / 20 jobs on 2 × 4 GPUs
  solved by the registered offline methods (CP-SAT only).

Every run goes through ``dlsched.solve`` (one thread, gap 0, ``--time-limit`` covering build
and solve). Columns: build s (the method's model building), solve s (the solvers' own
time), CPU s (this process plus finished child processes — CBC runs as one — for the
whole ``solve`` call), wall s, status, gap (the one relative gap of ``dlsched.gaps``).
Means over seeds; status counts. The machine load (``os.getloadavg``) is printed with the
table: CPU seconds are the figure to compare on a shared machine.

    python -m dlsched.benchmarks.exact_scale [--seeds 1] [--time-limit 60]
        [--families horus,genie,liquid,offline] [--backends cbc,highs,scip,cpsat]

The last line is one JSON object: per family, per backend: build_s, solve_s, cpu_s,
wall_s, status (counts), gap (mean, max).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from dlsched import solve
from dlsched.cli_support import parse_backends
from dlsched.formulations.backend import BACKENDS
from dlsched.instance import Instance
from dlsched.instances.genie_gen import generate_genie
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.markdown import markdown_table
from dlsched.registry import methods_for

Family = tuple[str, str, Callable[[int], Instance]]
"""(family name, method, instance builder taking a seed)."""


def families(groups: list[str]) -> Iterator[Family]:
    if "horus" in groups:
        for cost_model in ("paper", "colocation"):
            for busy in (0.5, 0.9, 0.97):
                yield (f"horus-{cost_model}-{busy}", "exact",
                       lambda s, c=cost_model, b=busy: generate_horus(
                           seed=s, nodes=128, beta=15, busy=b, cost_model=c))
    if "genie" in groups:
        for nodes, waiting in ((32, 50), (64, 100)):
            yield (f"genie-{4 * nodes}x{waiting}", "exact",
                   lambda s, n=nodes, w=waiting: generate_genie(
                       seed=s, nodes=n, gpus_per_node=4, waiting=w, busy=0.5))
    if "liquid" in groups:
        for nodes in (5, 10, 15, 20):
            yield (f"liquid-{nodes}", "exact",
                   lambda s, n=nodes: generate_liquid(seed=s, nodes=n))
    if "offline" in groups:
        offline = methods_for("sched2")
        for method, tag in (("offline-makespan", "makespan"), ("offline-wct", "wct")):
            if method not in offline:  # not registered in this build: leave the row out
                continue
            for jobs in (8, 20):
                yield (f"offline-{tag}-{jobs}", method,
                       lambda s, j=jobs: generate_sched2(seed=s, jobs=j, servers=2,
                                                         gpus_per_server=4))


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_one(instance: Instance, method: str, backend: str, time_limit: float) -> dict:
    c0, w0 = _cpu(), time.perf_counter()
    r = solve(instance, method, backend=backend, time_limit=time_limit)
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    return {"build_s": r.build_time, "solve_s": r.extra.get("solve_time"), "cpu_s": cpu,
            "wall_s": wall, "status": r.status.value, "gap": r.gap}


def _mean(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def summarize(runs: list[dict]) -> dict[str, Any]:
    gaps = [r["gap"] for r in runs if r["gap"] is not None]
    status: dict[str, int] = {}
    for r in runs:
        status[r["status"]] = status.get(r["status"], 0) + 1
    return {"build_s": _mean([r["build_s"] for r in runs]),
            "solve_s": _mean([r["solve_s"] for r in runs]),
            "cpu_s": _mean([r["cpu_s"] for r in runs]),
            "wall_s": _mean([r["wall_s"] for r in runs]),
            "status": status, "gap_mean": _mean(gaps), "gap_max": max(gaps, default=None)}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table(results: dict[str, dict[str, dict]], seeds: int, time_limit: float) -> str:
    load = os.getloadavg()
    lines = [f"Exact models at scale: {seeds} seed(s) per family, time limit {time_limit:g} s "
             f"(build + solve), 1 thread; {platform.processor() or 'cpu'}, "
             f"{os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / "
             f"{load[2]:.2f} (1/5/15 min) at the end\n"]
    rows = [[family, backend, ", ".join(f"{k} {v}" for k, v in sorted(s["status"].items())),
             _fmt(s["build_s"]), _fmt(s["solve_s"]), _fmt(s["cpu_s"]), _fmt(s["wall_s"]),
             f"{_fmt(s['gap_mean'], 6)} / {_fmt(s['gap_max'], 6)}"]
            for family, per_backend in results.items() for backend, s in per_backend.items()]
    lines.append(markdown_table(["family", "backend", "status", "build s", "solve s", "CPU s",
                                 "wall s", "gap (mean / max)"], rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="instances per family (1)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per solve, build included (60)")
    parser.add_argument("--families", default="horus,genie,liquid,offline",
                        help="comma-separated groups (horus,genie,liquid,offline)")
    parser.add_argument("--backends", type=parse_backends, default=BACKENDS,
                        help=f"comma-separated ({','.join(BACKENDS)})")
    parser.add_argument("--only", default="",
                        help="comma-separated family names to keep (default: all)")
    args = parser.parse_args(argv)
    backends = list(args.backends)
    only = {f for f in args.only.split(",") if f}
    results: dict[str, dict[str, dict]] = {}
    for name, method, build in families(args.families.split(",")):
        if only and name not in only:
            continue
        instances = [build(seed) for seed in range(args.seeds)]
        allowed = methods_for(instances[0].problem)[method].backends
        results[name] = {}
        for backend in backends:
            if backend not in allowed:
                continue
            runs = [run_one(inst, method, backend, args.time_limit) for inst in instances]
            results[name][backend] = summarize(runs)
            s = results[name][backend]
            print(f"{name} {backend}: {s['status']} cpu {_fmt(s['cpu_s'])} s", flush=True,
                  file=sys.stderr)
    print(table(results, args.seeds, args.time_limit))
    load = os.getloadavg()
    print(json.dumps({"benchmark": "exact_scale", "seeds": args.seeds,
                      "time_limit": args.time_limit, "load_average": list(load),
                      "families": results}, allow_nan=False))


if __name__ == "__main__":
    main()
