"""Horus at the paper's simulation scale: exact model per backend vs greedy and baselines.

Protocol: instances from ``dlsched.instances.horus_gen.generate_horus`` (128 servers × 8 GTX 1080,
β = 15 pending jobs, a share ``busy`` of the GPUs already running jobs), seeds 0..N-1;
every exact backend of the backend layer (``dlsched.formulations.backend.BACKENDS``: cbc,
highs, scip, cpsat; ``--backends`` picks some) with gap tolerance 0, one thread, and a time
limit (build included); heuristics as
registered. Gaps are relative to the best proven-optimal objective of the instance, from
the evaluator's objectives: (heuristic − optimum) / |optimum|. The objective includes the
penalty per GPU request left waiting, which dominates when a method places fewer
requests than the optimum; the last column shows how many it left. Times are wall-clock on
the machine that runs the script (reported in the header); CPU s are this process's and
its children's (CBC) CPU seconds around each exact solve. The last line is one JSON
object with every figure.

    python -m dlsched.benchmarks.horus_scale --seeds 20 --busy 0.5 [--backends cbc,scip]
        [--form patterns]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time

from dlsched import solve
from dlsched.cli_support import parse_backends
from dlsched.formulations.backend import BACKENDS
from dlsched.gaps import relative_gap
from dlsched.instances.horus_gen import generate_horus
from dlsched.markdown import markdown_table
from dlsched.problems.horus import horus_breakdown
from dlsched.result import Status

EXACT = BACKENDS  # every backend of the layer: cbc, highs, scip, cpsat
HEURISTICS = ("greedy", "obp", "fifo")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (CBC runs as a child)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def run(seeds: int, busy: float, cost_model: str, time_limit: float, nodes: int,
        beta: int, backends: tuple[str, ...] = EXACT, form: str = "pairs"
        ) -> tuple[str, dict]:
    """Run the protocol; returns the markdown report and the figures (JSON-ready)."""
    rows: dict[str, list[dict]] = {name: [] for name in (*backends, *HEURISTICS)}
    for seed in range(seeds):
        inst = generate_horus(seed=seed, nodes=nodes, beta=beta, busy=busy,
                              cost_model=cost_model)
        optimum = None
        for backend in backends:
            cpu = _cpu()
            r = solve(inst, "exact", backend=backend, time_limit=time_limit, seed=seed,
                      form=form)
            rows[backend].append(dict(status=r.status, objective=r.objective,
                                      cpu=_cpu() - cpu, bound=r.bound,
                                      build=r.build_time, wall=r.wall_time,
                                      decision=r.decision,
                                      solve=r.extra.get("solve_time"),
                                      rounds=r.extra.get("rounds")))
            if r.status is Status.OPTIMAL:
                optimum = r.objective if optimum is None else min(optimum, r.objective)
        for name in HEURISTICS:
            r = solve(inst, name, seed=seed)
            rows[name].append(dict(status=r.status, objective=r.objective, wall=r.wall_time,
                                   decision=r.decision))
        for name in rows:
            last = rows[name][-1]
            if last.get("decision") is not None:
                last["unplaced"] = horus_breakdown(inst, last.pop("decision")).unplaced_gpus
            last["gap"] = (None if optimum is None or last["objective"] is None
                           else relative_gap(last["objective"], optimum, "min"))
            if last["gap"] is not None and abs(last["gap"]) < 1e-12:  # float noise
                last["gap"] = 0.0
    figures = {name: [{k: (v.value if isinstance(v, Status) else v) for k, v in r.items()}
                      for r in runs] for name, runs in rows.items()}
    return _table(rows, seeds, busy, cost_model, time_limit, nodes, beta, form), figures


def _fmt(values: list[float], scale: float = 1.0, digits: int = 3) -> str:
    if not values:
        return "-"
    return (f"{statistics.mean(values) * scale:.{digits}f} / "
            f"{max(values) * scale:.{digits}f}")


def _table(rows, seeds, busy, cost_model, time_limit, nodes, beta, form) -> str:
    head = (f"Horus {nodes}×8, β = {beta}, busy = {busy}, cost model {cost_model}, "
            f"exact form {form}, "
            f"{seeds} seeds, time limit {time_limit:g} s; {platform.processor() or 'cpu'}, "
            f"{os.cpu_count()} cores\n\n")
    table = []
    for name, runs in rows.items():
        opt = sum(r["status"] is Status.OPTIMAL for r in runs)
        gaps = [r["gap"] for r in runs if r["gap"] is not None]
        build = [r["build"] for r in runs if r.get("build") is not None]
        solve_t = [r["solve"] for r in runs if r.get("solve") is not None]
        wall = [r["wall"] for r in runs]
        cpu = [r["cpu"] for r in runs if r.get("cpu") is not None]
        unplaced = [r["unplaced"] for r in runs if "unplaced" in r]
        label = name if name in HEURISTICS else f"exact ({name})"
        mean_unplaced = f"{statistics.mean(unplaced):.2f}" if unplaced else "-"
        table.append([label, f"{opt}/{len(runs)}", _fmt(build), _fmt(solve_t), _fmt(wall),
                      _fmt(cpu), _fmt(gaps, 100, 2), sum(g > 1e-9 for g in gaps),
                      mean_unplaced])
    return head + "\n" + markdown_table(
        ["method", "optimal", "build s (mean / max)", "solve s (mean / max)",
         "wall s (mean / max)", "CPU s (mean / max)", "gap % (mean / max)", "gap > 0",
         "unplaced GPU requests (mean)"], table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--busy", type=float, default=0.5)
    parser.add_argument("--cost-model", default="paper", choices=["paper", "colocation"])
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--beta", type=int, default=15)
    parser.add_argument("--backends", type=parse_backends, default=EXACT,
                        help=f"comma-separated exact backends ({','.join(EXACT)})")
    parser.add_argument("--form", default="pairs", choices=["pairs", "patterns"],
                        help="exact model form (default pairs; patterns: docs/horus.md)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    text, figures = run(args.seeds, args.busy, args.cost_model, args.time_limit, args.nodes,
                        args.beta, args.backends, args.form)
    print(text)
    wall = time.perf_counter() - start
    print(f"\ntotal {wall:.0f} s")
    print(json.dumps({"benchmark": "horus_scale", "arguments": {**vars(args),
                      "backends": list(args.backends)}, "wall_s": wall,
                      "load_average": list(os.getloadavg()), "methods": figures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
