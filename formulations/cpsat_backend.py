"""The CP-SAT backend: integer coefficients, deterministic runs, bounds in real units.

CP-SAT needs integer coefficients. :class:`CpSatModel` keeps a constraint whose
coefficients and right-hand side are whole numbers as written; any other constraint is
multiplied by ``SCALE`` and rounded *conservatively* (``<=``: coefficients up, right-hand
side down; ``>=`` the other way; ``==`` must be exact), so every CP-SAT solution satisfies
the real constraint. A continuous variable is an integer variable counting ``1/SCALE``
units and may carry only integer coefficients. Objective coefficients are rounded to the
nearest unit; the model states (``rounding_slack``) how far that can move a solution's
objective, and the bound handed back is lowered by it, then divided back to real units.

Models with CP-SAT-only constructs (interval variables) use ``CpSatModel.cp`` directly
and the same :func:`run_cpsat`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortools.sat.python import cp_model

from dlsched.interrupt import stopping_on_interrupt
from dlsched.result import ModelSize, Status

from .backend import Deadline, LinearModel, SolverParams, SolveRun, Terms

SCALE = 1_000_000
"""Real coefficients are multiplied by this and rounded to integers (6 decimals)."""
CONTINUOUS_MAX = 10**13
"""Upper end of an unbounded continuous variable's domain, in 1/SCALE units."""
_TOL = 1e-6


@dataclass(frozen=True)
class CpSatRun:
    """A raw CP-SAT solve: status, the solver (to read values), objective and bound in the
    model's own (integer) units."""

    status: Status
    solver: cp_model.CpSolver
    objective: float | None
    bound: float | None
    solve_time: float
    log: str


def model_size(model: cp_model.CpModel) -> ModelSize:
    proto = model.Proto()
    nonzeros = sum(len(c.linear.vars) for c in proto.constraints if c.has_linear())
    return ModelSize(len(proto.variables), len(proto.variables), len(proto.constraints),
                     nonzeros)


def _is_int(value: float) -> bool:
    return abs(value - round(value)) <= 1e-9


class CpSatModel(LinearModel):
    """A :class:`~dlsched.formulations.backend.LinearModel` on CP-SAT."""

    backend = "cpsat"

    def __init__(self, name: str = "") -> None:
        self.cp = cp_model.CpModel()
        self.cp.name = name
        self._scaled: set[int] = set()  # indices of continuous variables
        self._constant = 0.0
        self._slack = 0.0
        self._solver: cp_model.CpSolver | None = None
        self.deadline = Deadline(None)

    def binary(self, name: str) -> cp_model.IntVar:
        return self.cp.new_bool_var(name)

    def integer(self, name: str, lb: int, ub: int) -> cp_model.IntVar:
        return self.cp.new_int_var(int(lb), int(ub), name)

    def continuous(self, name: str, lb: float = 0.0, ub: float | None = None
                   ) -> cp_model.IntVar:
        hi = CONTINUOUS_MAX if ub is None else math.floor(ub * SCALE + _TOL)
        var = self.cp.new_int_var(math.ceil(lb * SCALE - _TOL), hi, name)
        self._scaled.add(var.index)
        return var

    def _merge(self, terms: Terms) -> dict[int, tuple[Any, float]]:
        merged: dict[int, tuple[Any, float]] = {}
        for coef, var in terms:
            if coef:
                old = merged.get(var.index)
                merged[var.index] = (var, coef + (old[1] if old else 0.0))
        return merged

    def add(self, terms: Terms, sense: str, rhs: float, name: str = "",
            relax: bool = False) -> None:
        self._tick()
        up = (sense == "<=") != relax  # round coefficients up (and the right side down)
        merged = self._merge(terms)
        scaled = any(i in self._scaled for i in merged) or not _is_int(rhs) or not all(
            _is_int(c) for _, c in merged.values())
        variables, coefs = [], []
        for i, (var, coef) in merged.items():
            variables.append(var)
            if not scaled or i in self._scaled:
                if not _is_int(coef):
                    raise ValueError(f"continuous variable {var} needs an integer coefficient")
                coefs.append(round(coef))
            elif sense == "==":
                value = coef * SCALE
                if not _is_int(value):
                    raise ValueError("an equality with coefficients finer than 1/SCALE")
                coefs.append(round(value))
            elif up:
                coefs.append(math.ceil(coef * SCALE - _TOL))
            else:
                coefs.append(math.floor(coef * SCALE + _TOL))
        bound = rhs * SCALE if scaled else rhs
        expr = cp_model.LinearExpr.weighted_sum(variables, coefs)
        if sense in ("<=", ">="):
            rounded = math.floor(bound + _TOL) if up else math.ceil(bound - _TOL)
            ct = self.cp.add(expr <= rounded if sense == "<=" else expr >= rounded)
        elif sense == "==":
            if not _is_int(bound):
                raise ValueError("an equality with a right-hand side finer than 1/SCALE")
            ct = self.cp.add(expr == round(bound))
        else:
            raise ValueError(f"unknown sense {sense!r}")
        if name:
            ct.with_name(name)

    def at_most_one(self, variables, name: str = "") -> None:
        self.cp.add_at_most_one(list(variables))

    def minimize(self, terms: Terms, constant: float = 0.0, *,
                 rounding_slack: float = 0.0) -> None:
        variables, coefs = [], []
        error = 0.0  # the most the rounding can move any solution's objective (units)
        for i, (var, coef) in self._merge(terms).items():
            variables.append(var)
            if i in self._scaled:
                if not _is_int(coef):
                    raise ValueError(f"continuous variable {var} needs an integer coefficient")
                coefs.append(round(coef))
            else:
                coefs.append(round(coef * SCALE))
                domain = list(var.proto.domain)  # (negative indexing fails on it)
                lo, hi = domain[0], domain[-1]
                error += abs(coefs[-1] - coef * SCALE) * max(abs(lo), abs(hi))
        self.cp.minimize(cp_model.LinearExpr.weighted_sum(variables, coefs))
        self._constant = float(constant)
        # the model's own bound (few terms active at once) or the sum over all terms
        error = math.ceil(error * (1 + 1e-9))
        self._slack = float(min(rounding_slack, error) if rounding_slack > 0 else error)

    def hint(self, values: Mapping[Any, float]) -> None:
        self.cp.clear_hints()
        for var, value in values.items():
            factor = SCALE if var.index in self._scaled else 1
            self.cp.add_hint(var, round(value * factor))

    def solve(self, params: SolverParams) -> SolveRun:
        run = run_cpsat(self.cp, params.seconds_left(), params.seed, params.num_workers,
                        params.options)
        self._solver = run.solver
        if not run.status.has_solution:
            return SolveRun(run.status, None, None, run.solve_time, run.log)
        objective = run.objective / SCALE + self._constant
        bound = (run.bound - self._slack) / SCALE + self._constant
        return SolveRun(run.status, objective, min(bound, objective), run.solve_time, run.log)

    def value(self, var: cp_model.IntVar) -> float:
        if self._solver is None:
            raise RuntimeError("solve the model first")
        raw = self._solver.value(var)
        return raw / SCALE if var.index in self._scaled else float(raw)

    def size(self) -> ModelSize:
        return model_size(self.cp)

    def write(self, path: str | Path, fmt: str, *, maximize: bool = False) -> None:
        proto = self.cp.clone()
        objective = proto.proto.objective
        # value = scaling_factor × (Σ coefficient × variable + offset); a negative factor
        # is CP-SAT's maximization of the negated sum
        objective.scaling_factor = (-1.0 if maximize else 1.0) / SCALE
        objective.offset = self._constant * SCALE
        write_proto(proto, path, fmt)


def write_proto(model: cp_model.CpModel, path: str | Path, fmt: str = "proto") -> None:
    """Write the CP-SAT model proto as text (``fmt`` ``proto``)."""
    if fmt != "proto":
        raise ValueError(f"unknown export format {fmt!r} for a CP-SAT model (proto)")
    Path(path).write_text(str(model.Proto()), encoding="utf-8")


def run_cpsat(model: cp_model.CpModel, time_limit: float | None, seed: int = 0,
              workers: int = 1, options: Mapping[str, Any] | None = None) -> CpSatRun:
    """Solve with gap 0, ``num_workers`` (1 by default: reproducible for a seed) and any
    ``CpSolver.parameters`` fields in ``options``."""
    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.relative_gap_limit = 0.0
    solver.parameters.absolute_gap_limit = 0.0
    # CP-SAT's own SIGINT handler outlives the solve (a later Ctrl-C then kills the process
    # with no clean-up) and turns a Ctrl-C during it into an ordinary "feasible" result;
    # Python's handler stays instead, and the search stops at once on a Ctrl-C
    solver.parameters.catch_sigint_signal = False
    for key, value in (options or {}).items():
        setattr(solver.parameters, key, value)
    start = time.perf_counter()
    with stopping_on_interrupt(solver.stop_search):
        code = solver.solve(model)
    elapsed = time.perf_counter() - start
    log = solver.response_stats()
    if code == cp_model.OPTIMAL:
        status = Status.OPTIMAL
    elif code == cp_model.FEASIBLE:
        status = Status.FEASIBLE
    elif code == cp_model.INFEASIBLE:
        status = Status.INFEASIBLE
    elif code == cp_model.MODEL_INVALID:
        raise RuntimeError(f"CP-SAT rejected the model: {model.validate()}")
    else:
        status = Status.NO_SOLUTION
    has = status in (Status.OPTIMAL, Status.FEASIBLE)
    objective = solver.objective_value if has else None
    bound = solver.best_objective_bound if has else None
    return CpSatRun(status, solver, objective, bound, elapsed, log)
