"""Liquid on the Fig. 19 batches: exact optimum per backend, and the heuristics' gaps to it.

For each size (5, 10, 15, 20 servers × 2 T4) one generated instance (``--instance-seed``):
the exact model on every backend of the backend layer
(``dlsched.formulations.backend.BACKENDS``: cbc, highs, scip, cpsat; ``--backends`` picks
some; ``--time-limit`` each, build included, one thread), then best-fit
(deterministic), the GA over ``--seeds`` seeds (stopped by its stall limit, capped by
``--gga-time-limit``), the GA seeded with best-fit, and the baselines. Every objective
comes from the problem's evaluator (through ``dlsched.solve``). The reference is the best
objective any backend found; "proven" says whether a backend proved it optimal. Gaps are
absolute (objective - reference) and relative, |objective - reference| / max(|objective|,
|reference|) (:func:`dlsched.gaps.relative_gap`, the one gap of the package). The last
line is one JSON object with the figures.

    python -m dlsched.benchmarks.liquid_fig19 --time-limit 120 --seeds 10 > liquid_fig19.md
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
from dlsched.gaps import relative_gap
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.markdown import markdown_row, markdown_table

BASELINES = ("random", "spread", "firstfit", "pack")


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def run(nodes: list[int], time_limit: float, seeds: int, instance_seed: int,
        gga_time_limit: float, backends: tuple[str, ...] = BACKENDS,
        figures: dict | None = None) -> str:
    """Run the protocol; returns the markdown report (``figures``, when given, receives
    the exact runs: servers, backend, status, objective, bound, wall seconds)."""
    exact_rows, heur_rows = [], []
    exact_figs: list[dict] = []
    for n in nodes:
        inst = generate_liquid(seed=instance_seed, nodes=n)
        best, proven = None, False
        for b in backends:
            r = solve(inst, "exact", backend=b, time_limit=time_limit)
            size = sum(len(j.containers) for j in inst.jobs)
            exact_rows.append([n, len(inst.jobs), size, b, r.status.value, _fmt(r.objective),
                               _fmt(r.bound), f"{r.wall_time:.2f}"])
            exact_figs.append({"servers": n, "backend": b, "status": r.status.value,
                               "objective": r.objective, "bound": r.bound,
                               "wall_s": r.wall_time})
            if r.objective is not None and (best is None or r.objective < best):
                best = r.objective
            proven |= r.status.value == "optimal"
            print(markdown_row(exact_rows[-1]), file=sys.stderr, flush=True)
        methods = [("bestfit", {}, [0]), ("gga", {}, range(seeds)),
                   ("gga", {"seed_bestfit": True}, range(seeds)),
                   ("random", {}, range(seeds))] + [(m, {}, [0]) for m in BASELINES[1:]]
        for name, opts, seed_list in methods:
            objs, times, gens = [], [], []
            for s in seed_list:
                limit = gga_time_limit if name == "gga" else None
                r = solve(inst, name, seed=s, time_limit=limit, **opts)
                if r.objective is None:
                    continue
                objs.append(r.objective)
                times.append(r.wall_time)
                gens.append(r.extra.get("generations"))
            label = name + ("+bestfit" if opts else "")
            if not objs:
                heur_rows.append([n, label, f"0/{len(seed_list)}", "—", "—", "—", "—", ""])
                continue
            mean = statistics.fmean(objs)
            gap = mean - best
            rel = 100 * (relative_gap(mean, best, "min") or 0.0)
            heur_rows.append([n, label, f"{len(objs)}/{len(seed_list)}", _fmt(mean), _fmt(gap),
                              f"{rel:.2f}", f"{max(o - best for o in objs):.4f}",
                              f"{statistics.fmean(times):.3f}"])
            print(markdown_row(heur_rows[-1]), file=sys.stderr, flush=True)
        proof = "proven" if proven else "not proven"
        heur_rows.append([n, "reference", "", _fmt(best), "", proof, "", ""])
    if figures is not None:
        figures["exact"] = exact_figs
    out = ["### Exact model", "",
           markdown_table(["servers", "jobs", "containers", "backend", "status", "objective",
                           "bound", "time s"], exact_rows), "",
           "### Heuristics (gap to the best exact objective)", "",
           markdown_table(["servers", "method", "runs with a plan", "mean objective",
                           "mean gap", "mean gap %", "worst gap", "mean time s"], heur_rows)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[5, 10, 15, 20])
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--instance-seed", type=int, default=0)
    parser.add_argument("--gga-time-limit", type=float, default=60.0)
    parser.add_argument("--backends", nargs="+", type=parse_backends, default=[BACKENDS],
                        help=f"exact backends, comma- or space-separated ({','.join(BACKENDS)})")
    args = parser.parse_args(argv)
    backends = tuple(b for group in args.backends for b in group)
    figures: dict = {}
    print(run(args.nodes, args.time_limit, args.seeds, args.instance_seed,
              args.gga_time_limit, backends, figures))
    print(json.dumps({"benchmark": "liquid_fig19",
                      "arguments": {**vars(args), "backends": list(backends)},
                      "load_average": list(os.getloadavg()), **figures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
