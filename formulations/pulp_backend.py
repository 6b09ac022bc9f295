"""The PuLP backend: CBC, HiGHS and SCIP, with one status and bound reading.

PuLP 3.3 reports a run stopped by its time limit with an incumbent as "Optimal"; only
``sol_status`` tells integer-feasible from optimal, so that is what is read here (for
SCIP too: PuLP maps SCIP's ``timelimit`` with a solution to integer-feasible and only
SCIP's ``optimal``, reached with gap limits 0, to optimal). Bounds: CBC's "Lower bound"
log line (printed rounded, so lowered by one unit of its last digit), HiGHS's
``mip_dual_bound``, SCIP's ``getDualbound()``; PuLP hands none of the three the objective
constant, so it is added back here. Models are minimizations.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pulp

from dlsched.interrupt import stopping_on_interrupt
from dlsched.result import ModelSize, Status

from .backend import PULP_BACKENDS, Deadline, LinearModel, SolverParams, SolveRun, Terms

__all__ = ["PULP_BACKENDS", "PulpModel", "run_pulp", "write_model", "model_size"]

HANDOVER_SHARE = 1.0
"""PuLP's hand-over of a model to a solver costs about this share of the model's build
time (measured: 0.7-1.2 on the Liquid and Horus models)."""

_SENSE = {"<=": pulp.LpConstraintLE, ">=": pulp.LpConstraintGE, "==": pulp.LpConstraintEQ}


def _expression(terms: Terms, constant: float = 0.0) -> pulp.LpAffineExpression:
    merged: dict[pulp.LpVariable, float] = {}
    for coef, var in terms:
        if coef:
            merged[var] = merged.get(var, 0.0) + coef
    return pulp.LpAffineExpression(merged, constant=constant)


class PulpModel(LinearModel):
    """A :class:`~dlsched.formulations.backend.LinearModel` on CBC, HiGHS or SCIP."""

    def __init__(self, name: str, backend: str) -> None:
        if backend not in PULP_BACKENDS:
            raise ValueError(f"unknown PuLP backend {backend!r}")
        self.backend = backend
        self.prob = pulp.LpProblem(name, pulp.LpMinimize)
        self._hinted = False
        self.deadline = Deadline(None)
        self._counts = [0, 0, 0, 0]  # variables, integer variables, constraints, nonzeros
        self._created = time.perf_counter()

    def binary(self, name: str) -> pulp.LpVariable:
        self._counts[0] += 1
        self._counts[1] += 1
        return self.prob.add_variable(name, cat=pulp.LpBinary)

    def integer(self, name: str, lb: int, ub: int) -> pulp.LpVariable:
        self._counts[0] += 1
        self._counts[1] += 1
        return self.prob.add_variable(name, lowBound=lb, upBound=ub, cat=pulp.LpInteger)

    def continuous(self, name: str, lb: float = 0.0, ub: float | None = None
                   ) -> pulp.LpVariable:
        self._counts[0] += 1
        return self.prob.add_variable(name, lowBound=lb, upBound=ub)

    def add(self, terms: Terms, sense: str, rhs: float, name: str = "",
            relax: bool = False) -> None:
        self._tick()
        expr = _expression(terms)
        self._counts[2] += 1
        self._counts[3] += len(expr)
        self.prob.addConstraint(pulp.LpConstraint(expr, _SENSE[sense], rhs=rhs), name or None)

    def minimize(self, terms: Terms, constant: float = 0.0, *,
                 rounding_slack: float = 0.0) -> None:
        self.prob.setObjective(_expression(terms, constant))

    def hint(self, values: Mapping[Any, float]) -> None:
        for var, value in values.items():
            var.setInitialValue(value)
        self._hinted = True

    def solve(self, params: SolverParams) -> SolveRun:
        # PuLP then hands the model over (an MPS file for CBC, a model built row by row for
        # HiGHS and SCIP), which takes about as long as building it did and cannot be
        # interrupted: do not start it without that much time left.
        left = params.seconds_left()
        built = time.perf_counter() - self._created
        if left is not None and left < HANDOVER_SHARE * built:
            return SolveRun(Status.NO_SOLUTION, None, None, 0.0, message=(
                f"time limit: {left:.2f} s left, too little to hand a model built in "
                f"{built:.2f} s to {self.backend}"))
        return run_pulp(self.prob, self.backend, params, warm_start=self._hinted)

    def value(self, var: pulp.LpVariable) -> float:
        return var.value() or 0.0

    def size(self) -> ModelSize:
        return ModelSize(*self._counts)

    def write(self, path: str | Path, fmt: str, *, maximize: bool = False) -> None:
        write_model(_faithful(self.prob, maximize), path, fmt)


def model_size(prob: pulp.LpProblem) -> ModelSize:
    variables = prob.variables()
    constraints = prob.constraints()
    nonzeros = sum(len(c) for c in constraints)
    integer = sum(1 for v in variables if v.cat == pulp.LpInteger)
    return ModelSize(len(variables), integer, len(constraints), nonzeros)


def run_pulp(prob: pulp.LpProblem, backend: str, params: SolverParams,
             warm_start: bool = False) -> SolveRun:
    """Solve ``prob`` (a minimization) with gap tolerance 0 on ``cbc``, ``highs`` or ``scip``.

    ``warm_start``: hand the variables' initial values (``setInitialValue``) to the solver.
    """
    if prob.sense != pulp.LpMinimize:
        raise ValueError("dlsched PuLP models are minimizations")
    constant = float(prob.objective.constant) if prob.objective is not None else 0.0
    if not prob.variables():
        return _run_empty(prob, constant)
    start = time.perf_counter()
    if backend == "cbc":
        bound, log = _run_cbc(prob, params, warm_start)
    elif backend == "highs":
        bound, log = _run_highs(prob, params, warm_start)
    elif backend == "scip":
        bound, log = _run_scip(prob, params, warm_start)
    else:
        raise ValueError(f"unknown PuLP backend {backend!r}")
    elapsed = time.perf_counter() - start

    if prob.status == pulp.LpStatusInfeasible:
        return SolveRun(Status.INFEASIBLE, None, None, elapsed, log)
    if prob.sol_status == pulp.LpSolutionOptimal:
        objective = float(pulp.value(prob.objective))
        return SolveRun(Status.OPTIMAL, objective, objective, elapsed, log)
    if prob.sol_status == pulp.LpSolutionIntegerFeasible:
        objective = float(pulp.value(prob.objective))
        if bound is not None and math.isfinite(bound) and abs(bound) < 1e29:
            bound = min(bound + constant, objective)
        else:
            bound = None
        return SolveRun(Status.FEASIBLE, objective, bound, elapsed, log)
    if prob.status == pulp.LpStatusUnbounded:
        raise RuntimeError("model is unbounded: a formulation bug")
    return SolveRun(Status.NO_SOLUTION, None, None, elapsed, log)


def _run_empty(prob: pulp.LpProblem, constant: float) -> SolveRun:
    """A model without variables (nothing to decide, e.g. no idle GPU): its constant rows
    decide it, without a solver (PuLP's CBC read of such a model fails)."""
    if all(row.valid(0.0) for row in prob.constraints()):
        return SolveRun(Status.OPTIMAL, constant, constant, 0.0,
                        message="the model has no variables")
    return SolveRun(Status.INFEASIBLE, None, None, 0.0,
                    message="the model has no variables and a constant row fails")


CBC_GRACE = 0.25
"""Seconds CBC may overrun its own limit before it is interrupted (it does not check the
clock during preprocessing), and again before it is killed."""


STOPPED = "stopped-by-time-limit"
"""A file the CBC wrapper leaves in its folder when it interrupted or killed CBC."""


def _run_cbc(prob: pulp.LpProblem, params: SolverParams, warm: bool
             ) -> tuple[float | None, str]:
    extra = [f"{key} {value}" for key, value in params.options.items()]
    with tempfile.TemporaryDirectory(prefix="dlsched-cbc-") as tmp:
        log_path = os.path.join(tmp, "cbc.log")
        path, limit = _cbc_path(tmp, params.seconds_left())
        # CBC's "-threads 1" is one worker thread beside the main one, not serial search;
        # its hand-over races and then sleeps out a 10-s timed wait (seen on 3 of 20 tiny
        # models), so one worker means no "-threads" at all: CBC's serial search
        threads = params.num_workers if params.num_workers > 1 else None
        solver = pulp.COIN_CMD(
            path=path, msg=False, timeLimit=limit, gapRel=0.0, gapAbs=0.0,
            threads=threads, logPath=log_path, warmStart=warm,
            timeMode="elapsed", options=[f"randomCbcSeed {params.seed + 1}", *extra])
        solver.tmpDir = tmp
        try:
            prob.solve(solver)
        except pulp.PulpSolverError:  # stopped by the hard time limit without a solution
            prob.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
        except (IndexError, ValueError):
            # PuLP read a solution file that CBC was writing when the wrapper stopped it
            if not os.path.exists(os.path.join(tmp, STOPPED)):
                raise
            prob.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
        with open(log_path, encoding="utf-8", errors="replace") as fh:
            log = fh.read()
    return _cbc_bound(log), log


def _cbc_path(tmp: str, left: float | None) -> tuple[str, float | None]:
    """PuLP's bundled CBC and the limit to hand PuLP, or a wrapper that enforces the limit.

    Where coreutils ``timeout`` exists, the wrapper computes the time left when CBC
    starts (after PuLP wrote the MPS file), passes it to CBC as ``-sec``, interrupts CBC
    ``CBC_GRACE`` seconds after that and kills it as much later again (a run stopped that
    way has no solution: ``no_solution``; the wrapper leaves :data:`STOPPED` in ``tmp``,
    so a solution file cut short by the stop is read as none); PuLP then gets no limit of
    its own.
    """
    with warnings.catch_warnings():
        # PuLP 3.3 deprecates its bundled CBC for 4.0; 3.3 is pinned (Python 3.11)
        warnings.simplefilter("ignore", DeprecationWarning)
        cbc = pulp.PULP_CBC_CMD().path
    timeout = shutil.which("timeout")
    if left is None or timeout is None:
        return cbc, left
    end = time.time() + left
    wrapper = os.path.join(tmp, "cbc")
    with open(wrapper, "w", encoding="utf-8") as fh:
        fh.write(
            "#!/bin/sh\n"
            f"left=$(awk -v end={end:.3f} -v now=\"$(date +%s.%N)\" "
            "'BEGIN{l = end - now; if (l < 0.01) l = 0.01; printf \"%.3f\", l}')\n"
            f"hard=$(awk -v l=\"$left\" 'BEGIN{{printf \"%.3f\", l + {CBC_GRACE}}}')\n"
            "first=$1\nshift\n"
            f'"{timeout}" -s INT -k {CBC_GRACE} "$hard" "{cbc}" "$first" -sec "$left" "$@"\n'
            "rc=$?\n"
            f'if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then : > "{os.path.join(tmp, STOPPED)}"; '
            "exit 0; fi\nexit $rc\n")
    os.chmod(wrapper, 0o700)
    return wrapper, None


class _HiGHS(pulp.HiGHS):
    """PuLP's HiGHS, handing the variables' initial values to HiGHS as a start (when
    ``warm``), with HiGHS's process-wide thread pool reset so that runs with different
    ``threads`` can follow each other in one process (HiGHS otherwise refuses to run)."""

    warm = False
    params = SolverParams()

    def buildSolverModel(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        """Hand the model to HiGHS in two batch calls (PuLP adds it column by column and
        row by row, several times slower than building it)."""
        import highspy

        inf = highspy.kHighsInf
        variables = lp.variables()
        n = len(variables)
        cost, lower, upper = np.zeros(n), np.empty(n), np.empty(n)
        integer = []
        for i, var in enumerate(variables):
            var.index = i
            lower[i] = -inf if var.lowBound is None else var.lowBound
            upper[i] = inf if var.upBound is None else var.upBound
            if var.cat == pulp.LpInteger:
                integer.append(i)
        for var, coef in lp.objective.items():
            cost[var.index] += coef
        model = lp.solverModel
        none = np.zeros(0, dtype=np.int32)
        model.addCols(n, cost, lower, upper, 0, none, none, np.zeros(0))
        if integer:
            kinds = np.full(len(integer), highspy.HighsVarType.kInteger)
            model.changeColsIntegrality(len(integer), np.asarray(integer, dtype=np.int32),
                                        kinds)
        starts, index, value, row_lo, row_hi = [], [], [], [], []
        for i, con in enumerate(lp._constraints.values()):
            con.index = i
            starts.append(len(index))
            for var, coef in con.items():
                if coef:
                    index.append(var.index)
                    value.append(coef)
            lb, ub = con.getLb(), con.getUb()
            row_lo.append(-inf if lb is None else lb)
            row_hi.append(inf if ub is None else ub)
        if starts:
            model.addRows(len(starts), np.asarray(row_lo), np.asarray(row_hi), len(index),
                          np.asarray(starts, dtype=np.int32), np.asarray(index, dtype=np.int32),
                          np.asarray(value, dtype=float))

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        import highspy

        if self.warm:
            start = [v.varValue for v in lp.variables()]
            solution = highspy.HighsSolution()
            solution.col_value = [0.0 if value is None else float(value) for value in start]
            solution.value_valid = True
            lp.solverModel.setSolution(solution)
        highspy.Highs.resetGlobalScheduler(True)
        left = self.params.seconds_left()  # the conversion above took time too
        if left is not None:
            lp.solverModel.setOptionValue("time_limit", float(left))
        lp.solverModel.run()


    def findSolutionValues(self, lp: pulp.LpProblem) -> tuple[int, int]:  # noqa: N802
        """PuLP's mapping, plus the stops PuLP 3.3 does not map (a work limit such as
        ``mip_max_nodes``: ``kSolutionLimit``; a memory limit): read as a time limit is,
        the incumbent if HiGHS has one, else no solution."""
        import highspy

        stops = (highspy.HighsModelStatus.kSolutionLimit, highspy.HighsModelStatus.kMemoryLimit)
        if lp.solverModel.getModelStatus() in stops:
            incumbent = math.isfinite(lp.solverModel.getInfo().objective_function_value) and (
                lp.solverModel.getInfo().primal_solution_status == 2)
            if not incumbent:
                return pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound
            values = list(lp.solverModel.getSolution().col_value)
            for var in lp.variables():
                var.varValue = values[var.index]
            return pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible
        return super().findSolutionValues(lp)


def _run_highs(prob: pulp.LpProblem, params: SolverParams, warm: bool
               ) -> tuple[float | None, str]:
    solver = _HiGHS(msg=False, timeLimit=params.time_limit, gapRel=0.0, gapAbs=0.0,
                    threads=params.num_workers, random_seed=params.seed, **params.options)
    solver.warm, solver.params = warm, params
    prob.solve(solver)
    info = prob.solverModel.getInfo()
    bound = float(info.mip_dual_bound) if prob.sol_status in (1, 2) else None
    return bound, f"HiGHS model status {prob.solverModel.getModelStatus()}"


class _SCIP(pulp.SCIP_PY):
    """PuLP's SCIP, given the time left when it starts (after PuLP's model conversion)."""

    params = SolverParams()

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        left = self.params.seconds_left()
        if left is not None:
            lp.solverModel.setParam("limits/time", float(left))
        # Python's SIGINT handler stays (SCIP's own would turn a Ctrl-C into an ordinary
        # result), and the solve runs without the interpreter's lock, so that a Ctrl-C
        # stops the search at once (interrupt.stopping_on_interrupt), not at its time limit
        lp.solverModel.setParam("misc/catchctrlc", False)
        with stopping_on_interrupt(lp.solverModel.interruptSolve):
            lp.solverModel.optimizeNogil()


def _run_scip(prob: pulp.LpProblem, params: SolverParams, warm: bool
              ) -> tuple[float | None, str]:
    options = [f"randomization/randomseedshift={params.seed}",
               *(f"{key}={value}" for key, value in params.options.items())]
    if params.num_workers > 1:
        options.append(f"parallel/maxnthreads={params.num_workers}")
    solver = _SCIP(msg=False, timeLimit=params.time_limit, gapRel=0.0, gapAbs=0.0,
                   warmStart=warm, options=options)
    solver.params = params
    prob.solve(solver)
    model = prob.solverModel
    if model.getNSols() == 0 and prob.status != pulp.LpStatusInfeasible:
        prob.assignStatus(pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound)
    bound = float(model.getDualbound()) if model.getNSols() > 0 else None
    return bound, f"SCIP status {model.getStatus()}, {model.getNNodes()} nodes"


_BOUND = re.compile(r"^Lower bound:\s+(\S+)", re.MULTILINE)


def _cbc_bound(log: str) -> float | None:
    """CBC's lower bound, lowered by one unit of its last printed digit.

    CBC prints the bound rounded to a few significant digits ("-62.368" for -62.36825), so
    the printed number may lie above the true bound; one unit below it never does.
    """
    match = _BOUND.search(log)
    if not match:
        return None
    try:
        printed = Decimal(match.group(1))
    except InvalidOperation:
        return None
    if not printed.is_finite() or abs(printed) >= Decimal("1e29"):  # CBC's "no bound"
        return None
    return float(printed - Decimal(1).scaleb(printed.as_tuple().exponent))


OBJECTIVE_CONSTANT = "objective_constant"
"""The variable fixed at 1 that carries the objective constant in MPS and LP files."""


def _faithful(prob: pulp.LpProblem, maximize: bool) -> pulp.LpProblem:
    """``prob`` as written: the objective constant on a variable fixed at 1 (PuLP's MPS
    and LP writers drop constants), negated and maximized with ``maximize``."""
    sign = -1.0 if maximize else 1.0
    objective = prob.objective or pulp.LpAffineExpression()
    out = pulp.LpProblem(prob.name, pulp.LpMaximize if maximize else pulp.LpMinimize)
    terms = pulp.LpAffineExpression({v: sign * c for v, c in objective.items()})
    if objective.constant:
        one = out.add_variable(OBJECTIVE_CONSTANT, lowBound=1, upBound=1)
        terms += sign * float(objective.constant) * one
    out.setObjective(terms)
    for constraint in prob.constraints():
        out.addConstraint(constraint, constraint.name)
    return out


def write_model(prob: pulp.LpProblem, path: str | Path, fmt: str) -> None:
    """Write ``prob`` as an MPS or LP file."""
    if fmt == "mps":  # OBJSENSE written: the sense is not a comment a reader may skip
        prob.writeMPS(str(path), mpsSense=prob.sense, with_objsense=True)
    elif fmt == "lp":
        prob.writeLP(str(path))
    else:
        raise ValueError(f"unknown export format {fmt!r} for a PuLP model (mps or lp)")

