"""SCHED²'s learned agents and rules against the exact optimum of their own objective, mean E.

On small workloads (2 × 4 GPUs, ``--jobs`` jobs, mean inter-arrival 60 s, seeds 5000 on:
no agent was trained, validated or tested on them; the training seeds are 0-29) the
offline optimum of mean execution effectiveness E (SCHED² Eq. 2, ``offline-effectiveness``)
is solved, and every policy is simulated: ``learned-priority`` (the shipped weights),
``dqn`` (the shipped 15 × 8 weights), the six rules and the tuned composite rule
(smallest ``num_gpus × duration^a`` first, ``a`` from :mod:`.sched2_rl`). Each simulated
schedule is checked by the one validator as a timed decision and priced by the problem's
schedule evaluator, which must agree with the simulator's mean E.

Gap = :func:`dlsched.gaps.relative_gap` of the policy's mean E to the proven optimum
(sense max: (opt − E) / opt), averaged over the instances proven optimal;
``gap_to_bound``: the same to the proven bound, over every instance (an upper bound on
the mean gap, unproven instances included). The optimum is
*clairvoyant*: it knows every arrival in advance (it may keep GPUs free for a job that has
not arrived yet), while the agents and rules decide online at arrivals and completions;
a gap is therefore an upper bound on what a better online policy could gain.

    python -m dlsched.benchmarks.sched2_optimum [--workloads 20] [--jobs 10]
                                                [--exponent 0.5] [--effort 60]

``--effort``: CP-SAT's deterministic time limit per optimum (load-independent, so the
proven count does not depend on the machine's load); a wall-clock guard of 900 s stays.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError, MethodError
from dlsched.gaps import relative_gap
from dlsched.heuristics.sched2 import RULES
from dlsched.heuristics.sched2_priority import FEATURES
from dlsched.instance import Instance
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.markdown import markdown_table
from dlsched.result import Status
from dlsched.simulate import Policy, SimulationError, job_table, simulate
from dlsched.solve import solve
from dlsched.validate import evaluate

FIRST_SEED = 5000
"""Seeds FIRST_SEED, FIRST_SEED + 1, ...: outside the training (0-29), test (1000-1029)
and validation (2000-2009) seeds of :mod:`dlsched.rl.sched2_train`."""
INTERARRIVAL_S = 60.0
WALL_GUARD_S = 900.0


def composite_weights(exponent: float) -> np.ndarray:
    """Learned-priority weights whose order is ``num_gpus × duration^exponent``."""
    return np.array([np.log(2.0), exponent, *([0.0] * (len(FEATURES) - 2))])


def workloads(count: int, jobs: int) -> list[Instance]:
    return [generate_sched2(seed=FIRST_SEED + k, jobs=jobs, servers=2, gpus_per_server=4,
                            interarrival=INTERARRIVAL_S) for k in range(count)]


def policy_effectiveness(workload: Instance, policy: Policy) -> float:
    """Mean E of the policy's simulated schedule, priced by the problem's evaluator after
    the validator accepted it as a timed decision (and checked against the simulator's)."""
    table = job_table(simulate(workload, policy, record_events=False))
    if table["end"].isna().any():
        raise RuntimeError(f"{policy.method} left jobs unfinished on {workload.name}")
    decision = Decision(tuple(Placement(row.job, tuple(row.gpus.split()), start=row.start,
                                        end=row.end) for row in table.itertuples()))
    value = evaluate(workload, decision, "effectiveness")
    if not abs(value - float(table["effectiveness"].mean())) <= 1e-9:
        raise RuntimeError(f"evaluator {value} != simulator {table['effectiveness'].mean()}")
    return value


def _spread(values: list[float]) -> dict:
    return {"min": min(values), "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0}


def optimum_gaps(composite: str, exponent: float, count: int = 20, jobs: int = 10,
                 effort: float = 60.0) -> dict:
    """Gaps of the agents, the rules and the composite rule (``composite``: its weights
    file, of :func:`composite_weights` with ``exponent``) to the proven optima (see the
    module docstring); prints a table and returns the ``optimum`` JSON object."""
    start = time.process_time()
    policies = {"learned-priority": Policy("learned-priority"), "dqn": Policy("dqn"),
                **{r: Policy(r) for r in RULES},
                "composite": Policy("learned-priority", options={"weights": composite})}
    refused: dict[str, str] = {}
    rows = []
    solve_cpu = 0.0
    for w in workloads(count, jobs):
        t = time.process_time()
        r = solve(w, "offline-effectiveness", time_limit=WALL_GUARD_S,
                  solver_options={"max_deterministic_time": effort})
        solve_cpu += time.process_time() - t
        row = {"seed": w.provenance["seed"], "status": r.status.value,
               "optimum_E": r.objective, "bound_E": r.bound, "E": {}}
        for name, policy in policies.items():
            if name in refused:
                continue
            try:
                row["E"][name] = policy_effectiveness(w, policy)
            except (SimulationError, InputError, MethodError) as err:
                refused[name] = str(err)
                continue
            if r.bound is not None and row["E"][name] > r.bound + 1e-6:
                raise RuntimeError(f"{name} beats the proven bound on {w.name} (a bug)")
        rows.append(row)
    proven = [row for row in rows if row["status"] == Status.OPTIMAL.value]
    names = [n for n in policies if n not in refused]
    gaps = {n: [relative_gap(row["E"][n], row["optimum_E"], "max") for row in proven]
            for n in names}
    mean_e = {n: statistics.fmean(row["E"][n] for row in rows) for n in names}
    best = max(RULES, key=lambda n: mean_e[n])

    def gap(name: str) -> float | None:
        return statistics.fmean(gaps[name]) if name in gaps and gaps[name] else None

    out = {"agent": "learned-priority", "agent_gap": gap("learned-priority"),
           "dqn_gap": gap("dqn"), "dqn_refused": refused.get("dqn"),
           "best_rule": best, "best_rule_gap": gap(best), "composite_gap": gap("composite"),
           "composite_exponent": exponent,
           "rule_gaps": {n: gap(n) for n in RULES if n in gaps},
           "gap_to_bound": {n: statistics.fmean(
               relative_gap(row["E"][n], row["bound_E"], "max") for row in rows)
               for n in names},
           "gap_spread": {n: _spread(v) for n, v in gaps.items() if v},
           "mean_E": mean_e,
           "optimum_E_mean": (statistics.fmean(row["optimum_E"] for row in proven)
                              if proven else None),
           "instances": len(rows), "proven": len(proven), "jobs": jobs,
           "cluster": "2x4", "interarrival_s": INTERARRIVAL_S,
           "seeds": [row["seed"] for row in rows], "effort": effort,
           "solve_cpu_s": round(solve_cpu, 1),
           "cpu_s": round(time.process_time() - start, 1),
           "clairvoyant_optimum": True, "workloads": rows}
    print(f"\n### gap to the offline optimum of mean E: 2 x 4 GPUs, {jobs} jobs, "
          f"{len(proven)} of {len(rows)} proven (clairvoyant optimum; policies online)\n")
    print(markdown_table(["policy", "mean E", "mean gap", "worst gap"],
                         [[n, f"{mean_e[n]:.4f}", f"{gap(n):.4f}" if gap(n) is not None else "",
                           f"{max(gaps[n]):.4f}" if gaps[n] else ""] for n in names]
                         + [["optimum (proven ones)", f"{out['optimum_E_mean']:.4f}"
                             if proven else "", "0", "0"]]))
    for name, reason in refused.items():
        print(f"\n{name}: refused ({reason})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=20, help="workloads (20)")
    parser.add_argument("--jobs", type=int, default=10, help="jobs per workload (10)")
    parser.add_argument("--exponent", type=float, default=0.5,
                        help="composite rule's exponent a (0.5, what sched2_rl tunes)")
    parser.add_argument("--effort", type=float, default=60.0,
                        help="CP-SAT deterministic time limit per optimum (60)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "composite.safetensors")
        save_file({"weights": composite_weights(args.exponent)}, path,
                  metadata={"features": json.dumps(list(FEATURES))})
        result = {"benchmark": "sched2_optimum",
                  **optimum_gaps(path, args.exponent, args.workloads, args.jobs, args.effort)}
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
