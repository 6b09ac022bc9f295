"""Exact models checked against each other on instances too large for a brute force,
and (``--sweep``) against brute force on more tiny seeds than the test suite runs.

Three checks, each two exact runs that must agree (the tests check the same rules against
brute force on tiny instances; these are their large cases, moved here from the test
suite because their size, not their rule, made them slow):

- ``horus-forms``: the pattern form (``form="patterns"``, CBC) and the pair form (SCIP)
  of the exact Horus model on a tight snapshot (``--tight-nodes`` × 8 GPUs, 90 % busy,
  β = ``--beta`` = 15 pending jobs, seed 1: the issue's hard case at 16): both proven, the
  same optimum.
- ``horus-reduction``: the reduced pair model with symmetry breaking (CP-SAT) and the full
  one (CBC, ``reduce=False, symmetry=False``) on a ``--paper-nodes`` × 8 snapshot (90 %
  busy, β = 15, seed 4; 128 is the paper's scale): the same proven optimum, and the
  certificate holds with over ``--min-reduction`` (10) times fewer candidate pairs than
  feasible ones.
- ``cbc-bound``: on each ``--liquid`` entry of the ``paper`` library, CBC stopped after
  its first solution reports a lower bound no higher than the optimum HiGHS proves
  (CBC's printed bound was once rounded past it).

With ``--sweep``, two more checks: ``horus-sweep`` and ``liquid-sweep`` solve the tiny
instances of ``dlsched.benchmarks.brute_force`` (Horus paper seeds 0 to ``--horus-seeds``
- 1, colocation 0 to ``--colocation-seeds`` - 1, Liquid 0 to ``--liquid-seeds`` - 1: the
ranges the suite ran before issue 33; it keeps the seeds that bind each constraint family)
on every backend; each run must be proven optimal (or infeasible where nothing fits) at
the brute-force optimum, its decision accepted by the validator (~7 CPU-s at load 15).

Prints a markdown table (one row per check: both runs' status, objective, CPU seconds) and
as its last line one JSON object. Exit status 1 when a check fails.

    python -m dlsched.benchmarks.exact_crosschecks [--sweep]
    python -m dlsched.benchmarks.exact_crosschecks --tight-nodes 1 --paper-nodes 1 \\
        --beta 3 --min-reduction 0 --liquid liquid-5n-s0          # tiny (the test's)
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from dlsched.benchmarks import brute_force
from dlsched.benchmarks.library import load_manifest
from dlsched.formulations.backend import BACKENDS
from dlsched.instances.horus_gen import generate_horus
from dlsched.markdown import markdown_table
from dlsched.result import Result, Status
from dlsched.solve import solve
from dlsched.validate import validate

TOLERANCE = 1e-6
"""Two objectives within this agree (the evaluator's sums)."""


def _run(result: Result) -> dict[str, Any]:
    return {"status": result.status.value, "objective": result.objective,
            "bound": result.bound, "cpu_s": round(result.cpu_time, 3)}


def horus_forms(nodes: int, beta: int, time_limit: float) -> dict[str, Any]:
    """Pattern form (CBC) and pair form (SCIP) prove the same optimum."""
    inst = generate_horus(seed=1, nodes=nodes, busy=0.9, beta=beta)
    a = solve(inst, "exact", backend="cbc", time_limit=time_limit, form="patterns")
    b = solve(inst, "exact", backend="scip", time_limit=time_limit)
    ok = (a.status is b.status is Status.OPTIMAL
          and abs(a.objective - b.objective) <= TOLERANCE)
    return {"check": "horus-forms", "instance": f"horus {nodes}x8 β {beta} busy 0.9 s1",
            "a": {"run": "patterns/cbc", **_run(a)}, "b": {"run": "pairs/scip", **_run(b)},
            "ok": ok}


def horus_reduction(nodes: int, beta: int, time_limit: float,
                    min_reduction: float) -> dict[str, Any]:
    """The reduced model (CP-SAT) and the full one (CBC) prove the same optimum, and the
    reduction keeps fewer than 1 / ``min_reduction`` of the feasible pairs."""
    inst = generate_horus(seed=4, nodes=nodes, busy=0.9, beta=beta)
    a = solve(inst, "exact", backend="cpsat", time_limit=time_limit)
    b = solve(inst, "exact", backend="cbc", time_limit=time_limit, reduce=False,
              symmetry=False)
    cert = a.extra.get("certificate", {})
    ok = (a.status is b.status is Status.OPTIMAL
          and abs(a.objective - b.objective) <= TOLERANCE and bool(cert.get("holds"))
          and cert["candidate_pairs"] * min_reduction < cert["feasible_pairs"])
    return {"check": "horus-reduction", "instance": f"horus {nodes}x8 β {beta} busy 0.9 s4",
            "a": {"run": "reduced/cpsat", **_run(a)}, "b": {"run": "full/cbc", **_run(b)},
            "candidate_pairs": cert.get("candidate_pairs"),
            "feasible_pairs": cert.get("feasible_pairs"), "ok": ok}


def cbc_bound(name: str, time_limit: float) -> dict[str, Any]:
    """CBC's bound after its first solution never passes HiGHS's proven optimum."""
    inst = load_manifest("paper").load(name)
    proof = solve(inst, method="exact", backend="highs", time_limit=time_limit)
    stopped = solve(inst, method="exact", backend="cbc", time_limit=time_limit,
                    solver_options={"maxSolutions": 1})
    ok = (proof.status is Status.OPTIMAL and stopped.bound is not None
          and stopped.bound <= proof.objective)  # a minimization: a lower bound
    return {"check": "cbc-bound", "instance": name,
            "a": {"run": "highs", **_run(proof)},
            "b": {"run": "cbc maxSolutions 1", **_run(stopped)}, "ok": ok}


def _sweep(check: str, label: str, cases: list[tuple[str, Any, float | None]],
           time_limit: float) -> dict[str, Any]:
    """Every backend on each (name, instance, brute-force optimum) case: proven at the
    optimum (infeasible where it is None) with a decision the validator accepts."""
    failures: list[str] = []
    runs = cpu = 0.0
    for name, inst, optimum in cases:
        for backend in BACKENDS:
            res = solve(inst, "exact", backend=backend, time_limit=time_limit)
            runs, cpu = runs + 1, cpu + res.cpu_time
            if optimum is None:
                good = res.status is Status.INFEASIBLE and res.decision is None
            else:
                good = (res.status is Status.OPTIMAL and res.decision is not None
                        and validate(inst, res.decision).ok
                        and abs(res.objective - optimum) <= TOLERANCE)
            if not good:
                failures.append(f"{name} {backend}: {res.status.value} {res.objective} "
                                f"(brute force {optimum})")
    return {"check": check, "instance": label,
            "a": {"run": "exact, every backend", "status": f"{int(runs) - len(failures)}/"
                  f"{int(runs)} right", "objective": None, "bound": None,
                  "cpu_s": round(cpu, 3)},
            "b": {"run": "brute force", "status": f"{len(cases)} optima", "objective": None,
                  "bound": None, "cpu_s": None},
            "failures": failures, "ok": not failures}


def _span(seeds: range) -> str:
    return f"{seeds.start}-{seeds.stop - 1}" if len(seeds) else "none"


def horus_sweep(paper: range, colocation: range, time_limit: float) -> dict[str, Any]:
    """The exact Horus model on tiny paper-cost and colocation-cost seeds."""
    cases = []
    for model, seeds in (("paper", paper), ("colocation", colocation)):
        for seed in seeds:
            inst = brute_force.horus_tiny(seed, model)
            best = brute_force.horus_brute_force(inst, families=False)[0]
            cases.append((f"{model} {seed}", inst, best))
    return _sweep("horus-sweep", f"horus tiny: paper {_span(paper)}, colocation "
                  f"{_span(colocation)}", cases, time_limit)


def liquid_sweep(seeds: range, time_limit: float) -> dict[str, Any]:
    """The exact Liquid model on tiny seeds (some infeasible)."""
    cases = []
    for seed in seeds:
        inst = brute_force.liquid_tiny(seed)
        cases.append((f"seed {seed}", inst, brute_force.liquid_brute_force(inst)))
    return _sweep("liquid-sweep", f"liquid tiny {_span(seeds)}", cases, time_limit)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tight-nodes", type=int, default=16, help="horus-forms servers (16)")
    ap.add_argument("--paper-nodes", type=int, default=128,
                    help="horus-reduction servers (128)")
    ap.add_argument("--beta", type=int, default=15, help="Horus pending jobs (15)")
    ap.add_argument("--min-reduction", type=float, default=10.0,
                    help="horus-reduction: feasible / candidate pairs must exceed this (10)")
    ap.add_argument("--liquid", default="liquid-20n-s1,liquid-20n-s2,liquid-15n-s0",
                    help="comma-separated paper-library Liquid entries for cbc-bound")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per run (120)")
    ap.add_argument("--sweep", action="store_true",
                    help="also the brute-force sweeps on tiny seeds (every backend)")
    ap.add_argument("--horus-seeds", type=int, default=30, help="sweep: paper-cost seeds (30)")
    ap.add_argument("--colocation-seeds", type=int, default=20,
                    help="sweep: colocation-cost seeds (20)")
    ap.add_argument("--liquid-seeds", type=int, default=24, help="sweep: Liquid seeds (24)")
    args = ap.parse_args(argv)
    rows = [horus_forms(args.tight_nodes, args.beta, args.time_limit),
            horus_reduction(args.paper_nodes, args.beta, args.time_limit, args.min_reduction)]
    rows += [cbc_bound(name, args.time_limit) for name in args.liquid.split(",") if name]
    if args.sweep:
        rows += [horus_sweep(range(args.horus_seeds), range(args.colocation_seeds),
                             args.time_limit),
                 liquid_sweep(range(args.liquid_seeds), args.time_limit)]
    print("# exact models against each other\n")
    print(markdown_table(
        ["check", "instance", "run a", "status", "objective", "CPU s", "run b", "status",
         "objective / bound", "CPU s", "ok"],
        [[r["check"], r["instance"], r["a"]["run"], r["a"]["status"], r["a"]["objective"],
          r["a"]["cpu_s"], r["b"]["run"], r["b"]["status"],
          r["b"]["bound"] if r["check"] == "cbc-bound" else r["b"]["objective"],
          r["b"]["cpu_s"], "yes" if r["ok"] else "NO"] for r in rows]))
    for r in rows:
        for line in r.get("failures", []):
            print(f"- {r['check']}: {line}")
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")
    print(json.dumps({"benchmark": "exact_crosschecks", "arguments": vars(args),
                      "all_ok": all(r["ok"] for r in rows), "checks": rows}))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
