"""Run a CP-SAT model deterministically and read back status and bound.

CP-SAT needs integer coefficients: models scale real costs by ``SCALE`` and round, and
report the bound in real units minus the largest rounding error a solution can carry.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from dlsched.result import ModelSize, Status

SCALE = 1_000_000
"""Real costs are multiplied by this and rounded to integers for CP-SAT (6 decimals)."""


@dataclass(frozen=True)
class CpSatRun:
    status: Status
    solver: cp_model.CpSolver
    objective: float | None  # scaled units
    bound: float | None  # scaled units
    solve_time: float
    log: str


def model_size(model: cp_model.CpModel) -> ModelSize:
    proto = model.Proto()
    nonzeros = sum(len(c.linear.vars) for c in proto.constraints if c.has_linear())
    return ModelSize(len(proto.variables), len(proto.variables), len(proto.constraints),
                     nonzeros)


def run_cpsat(model: cp_model.CpModel, time_limit: float | None, seed: int = 0,
              workers: int = 1) -> CpSatRun:
    """Solve with ``num_workers`` (1 by default: reproducible for a seed)."""
    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.relative_gap_limit = 0.0
    solver.parameters.absolute_gap_limit = 0.0
    start = time.perf_counter()
    code = solver.Solve(model)
    elapsed = time.perf_counter() - start
    log = solver.ResponseStats()
    if code == cp_model.OPTIMAL:
        status = Status.OPTIMAL
    elif code == cp_model.FEASIBLE:
        status = Status.FEASIBLE
    elif code == cp_model.INFEASIBLE:
        status = Status.INFEASIBLE
    elif code == cp_model.MODEL_INVALID:
        raise RuntimeError(f"CP-SAT rejected the model: {model.Validate()}")
    else:
        status = Status.NO_SOLUTION
    has = status in (Status.OPTIMAL, Status.FEASIBLE)
    objective = solver.ObjectiveValue() if has else None
    bound = solver.BestObjectiveBound() if has else None
    return CpSatRun(status, solver, objective, bound, elapsed, log)
