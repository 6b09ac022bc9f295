"""Run a PuLP model on CBC or HiGHS and read back status, values and a proven bound.

PuLP 3.3 reports a run stopped by its time limit with an incumbent as "Optimal"; only
``sol_status`` tells integer-feasible from optimal, so that is what is read here. Models
are minimizations; the objective constant is added back to the solver's bound.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pulp

from dlsched.result import ModelSize, Status

PULP_BACKENDS = ("cbc", "highs")


@dataclass(frozen=True)
class PulpRun:
    """Outcome of one PuLP solve, in the model's own objective units."""

    status: Status
    objective: float | None
    bound: float | None
    solve_time: float
    log: str


def model_size(prob: pulp.LpProblem) -> ModelSize:
    variables = prob.variables()
    constraints = prob.constraints()
    nonzeros = sum(len(c) for c in constraints)
    integer = sum(1 for v in variables if v.cat == pulp.LpInteger)
    return ModelSize(len(variables), integer, len(constraints), nonzeros)


def run_pulp(prob: pulp.LpProblem, backend: str, time_limit: float | None, seed: int = 0,
             threads: int = 1) -> PulpRun:
    """Solve ``prob`` (a minimization) with gap tolerance 0 on ``cbc`` or ``highs``."""
    if prob.sense != pulp.LpMinimize:
        raise ValueError("dlsched PuLP models are minimizations")
    constant = float(prob.objective.constant) if prob.objective is not None else 0.0
    start = time.perf_counter()
    if backend == "cbc":
        fd, log_path = tempfile.mkstemp(suffix=".log", prefix="dlsched-cbc-")
        os.close(fd)
        try:
            with warnings.catch_warnings():
                # PuLP 3.3 deprecates its bundled CBC for 4.0; 3.3 is pinned (Python 3.11)
                warnings.simplefilter("ignore", DeprecationWarning)
                solver = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=0.0,
                                           gapAbs=0.0, threads=threads, logPath=log_path,
                                           options=[f"randomCbcSeed {seed + 1}"])
            prob.solve(solver)
            with open(log_path, encoding="utf-8", errors="replace") as fh:
                log = fh.read()
        finally:
            os.unlink(log_path)
        bound = _cbc_bound(log)
    elif backend == "highs":
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=0.0, gapAbs=0.0,
                            threads=threads, random_seed=seed)
        prob.solve(solver)
        info = prob.solverModel.getInfo()
        bound = float(info.mip_dual_bound) if prob.sol_status in (1, 2) else None
        log = f"HiGHS model status {prob.solverModel.getModelStatus()}"
    else:
        raise ValueError(f"unknown PuLP backend {backend!r}")
    elapsed = time.perf_counter() - start

    if prob.status == pulp.LpStatusInfeasible:
        return PulpRun(Status.INFEASIBLE, None, None, elapsed, log)
    if prob.sol_status == pulp.LpSolutionOptimal:
        objective = float(pulp.value(prob.objective))
        return PulpRun(Status.OPTIMAL, objective, objective, elapsed, log)
    if prob.sol_status == pulp.LpSolutionIntegerFeasible:
        objective = float(pulp.value(prob.objective))
        if bound is not None and abs(bound) < 1e29:
            bound += constant
        else:
            bound = None
        return PulpRun(Status.FEASIBLE, objective, bound, elapsed, log)
    if prob.status == pulp.LpStatusUnbounded:
        raise RuntimeError("model is unbounded: a formulation bug")
    return PulpRun(Status.NO_SOLUTION, None, None, elapsed, log)


_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.MULTILINE)


def _cbc_bound(log: str) -> float | None:
    match = _BOUND.search(log)
    if not match:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


def write_model(prob: pulp.LpProblem, path: str | Path, fmt: str) -> None:
    """Write ``prob`` as an MPS or LP file."""
    if fmt == "mps":
        prob.writeMPS(str(path))
    elif fmt == "lp":
        prob.writeLP(str(path))
    else:
        raise ValueError(f"unknown export format {fmt!r}")


def is_one(var: pulp.LpVariable) -> bool:
    """A binary variable's value read with tolerance."""
    value = var.value()
    return value is not None and value > 0.5
