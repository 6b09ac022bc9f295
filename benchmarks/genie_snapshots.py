"""SWAF and the Sec. 7.1 baselines against the exact optimum on generated GENIE snapshots.

Protocol: snapshots ``generate_genie(seed=s, snapshot=True)`` for s = 0 .. n-1 (4 × 4 K80
platform, Table-3 workload at ``--density`` tasks/hour (10), 10-20 waiting tasks, 25-75 %
of GPUs busy, all drawn from the seed); the exact model on every backend of the backend
layer (``dlsched.formulations.backend.BACKENDS``: CBC, HiGHS, SCIP, CP-SAT; ``--backends``
picks some; one thread each, gap 0, ``--time-limit`` seconds, build included); every
heuristic; on-time counts and CER from the evaluator, the exact reference from the first
backend that proved its snapshot optimal.
Writes markdown tables to stdout; the last line is one JSON object with the figures.

    python -m dlsched.benchmarks.genie_snapshots [--snapshots 50] [--time-limit 60] [--density 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from dlsched import solve
from dlsched.cli_support import parse_backends
from dlsched.formulations.backend import BACKENDS
from dlsched.instances.genie_gen import generate_genie
from dlsched.markdown import markdown_table
from dlsched.problems.genie import genie_breakdown, genie_table

HEURISTICS = (
    ("swaf", {}), ("swaf", {"backfill": True}), ("swaf", {"fit": "free"}),
    ("swaf", {"late_last": True}), ("swaf", {"late_last": True, "fit": "free"}),
    ("fifo", {}), ("capacity", {}), ("minmin", {}), ("wfair", {}),
    ("fifo", {"request": 1}), ("minmin", {"request": 1}),
    ("tetris-perf", {}), ("tetris-cer", {}),
)


def _label(name: str, options: dict) -> str:
    return name + "".join(f" {k}={v}" for k, v in options.items())


def run(snapshots: int, time_limit: float, density: float = 10.0,
        backends: tuple[str, ...] = BACKENDS, figures: dict | None = None) -> str:
    """Run the protocol; returns the markdown report (``figures``, when given, receives
    the numbers)."""
    exact_on, exact_cer, possible = [], [], []
    times: dict[str, list[float]] = {b: [] for b in backends}
    statuses: dict[str, list[str]] = {b: [] for b in backends}
    heur: dict[str, list[tuple[int, float, int]]] = {_label(*h): [] for h in HEURISTICS}
    sizes = []
    for seed in range(snapshots):
        inst = generate_genie(seed=seed, snapshot=True, density=density)
        sizes.append((len(inst.jobs), int((~inst.gpu_busy).sum())))
        table = genie_table(inst)
        possible.append(sum(any(o.on_time for o in row) for row in table.options))
        objectives, reference = [], None
        for b in backends:
            r = solve(inst, "exact", backend=b, time_limit=time_limit)
            times[b].append(r.wall_time)
            statuses[b].append(r.status.value)
            if r.status.value == "optimal":
                objectives.append(r.objective)
                reference = reference or r
        if reference is None:
            raise SystemExit(f"seed {seed}: no backend proved the snapshot optimal in "
                             f"{time_limit:g} s: raise --time-limit")
        br = genie_breakdown(inst, reference.decision)
        exact_on.append(br.on_time)
        exact_cer.append(br.cer_sum)
        spread = max(objectives) - min(objectives)
        if spread > 1e-6 * max(1.0, abs(max(objectives))):
            print(f"seed {seed}: proven optima disagree: {objectives}", file=sys.stderr)
        for name, options in HEURISTICS:
            r = solve(inst, name, **options)
            br = genie_breakdown(inst, r.decision)
            heur[_label(name, options)].append((br.on_time, br.cer_sum, br.started))

    total = sum(exact_on)
    lines = [
        f"Snapshots: {snapshots} (4 x 4 K80, {density:g} tasks/hour, waiting "
        f"{min(s[0] for s in sizes)}-{max(s[0] for s in sizes)} tasks, idle GPUs "
        f"{min(s[1] for s in sizes)}-{max(s[1] for s in sizes)}); "
        f"tasks with at least one on-time shape: {sum(possible)}; "
        f"exact optimum on-time: {total} (mean {total / snapshots:.2f}).",
        "",
    ]
    table = [["exact", total, "100.0", snapshots, "0.00", 0, "(see CER)", "100.0"]]
    for label, rows in heur.items():
        on = [r[0] for r in rows]
        gaps = [e - h for e, h in zip(exact_on, on, strict=True)]
        cer = sum(r[1] for r in rows) / sum(exact_cer) * 100
        table.append([label, sum(on), f"{100 * sum(on) / max(total, 1):.1f}",
                      sum(g == 0 for g in gaps), f"{statistics.mean(gaps):.2f}", max(gaps),
                      f"{statistics.mean(r[2] for r in rows):.2f}", f"{cer:.1f}"])
    lines += [markdown_table(["method", "on-time (sum)", "% of exact", "snapshots = exact",
                              "mean gap (tasks)", "max gap", "mean started",
                              "CER % of exact"], table), "",
              markdown_table(["backend", "statuses", "mean time (s)", "max time (s)"],
                             [[b, {s: statuses[b].count(s) for s in sorted(set(statuses[b]))},
                               f"{statistics.mean(times[b]):.3f}", f"{max(times[b]):.3f}"]
                              for b in backends])]
    if figures is not None:
        figures.update(exact_on_time=exact_on, possible=possible,
                       backends={b: {"statuses": statuses[b], "wall_s": times[b]}
                                 for b in backends},
                       heuristics={label: [list(r) for r in rows]
                                   for label, rows in heur.items()})
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--density", type=float, default=10.0, help="tasks per hour (10)")
    parser.add_argument("--backends", type=parse_backends, default=BACKENDS,
                        help=f"comma-separated exact backends ({','.join(BACKENDS)})")
    args = parser.parse_args(argv)
    figures: dict = {}
    print(run(args.snapshots, args.time_limit, args.density, args.backends, figures))
    print(json.dumps({"benchmark": "genie_snapshots",
                      "arguments": {**vars(args), "backends": list(args.backends)},
                      "load_average": list(os.getloadavg()), **figures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
