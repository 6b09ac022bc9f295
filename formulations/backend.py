"""The backend layer: one model text, several solvers.

A formulation writes its variables, each constraint family and its objective **once**,
against :class:`LinearModel` (a minimization with binary, integer and continuous variables
and linear constraints). Each backend maps those calls to its solver:

* :func:`dlsched.formulations.backends.new_model` picks the adapter;
* :class:`dlsched.formulations.pulp_backend.PulpModel` — CBC, HiGHS and SCIP through PuLP
  (real coefficients as written);
* :class:`dlsched.formulations.cpsat_backend.CpSatModel` — CP-SAT (integer coefficients:
  real ones are scaled by ``SCALE`` and rounded *conservatively*, see that module).

Linear expressions are plain sequences of ``(coefficient, variable)`` pairs, so a model
never touches a solver's expression type. Solver parameters travel in one
:class:`SolverParams` (time left, seed, ``num_workers``, solver-specific ``options``), a warm
start through :meth:`LinearModel.hint`, and every solve returns a :class:`SolveRun` in the
model's real units with a *proven* lower bound (or ``None``). Models that need a backend's
own constructs (CP-SAT interval variables in the offline schedules) use the backend class
directly; they still share :class:`SolverParams`, :class:`SolveRun` and :class:`Deadline`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.registry import OptionRule, check_option_values
from dlsched.result import ModelSize, Status

PULP_BACKENDS = ("cbc", "highs", "scip")
"""MILP solvers reached through PuLP."""
BACKENDS = (*PULP_BACKENDS, "cpsat")
"""Every backend a :class:`LinearModel` runs on."""

Terms = Iterable[tuple[float, Any]]
"""A linear expression: ``(coefficient, variable)`` pairs."""


class TimeUp(Exception):
    """The deadline passed before the model was built; nothing to hand to the solver."""


class Deadline:
    """The end of a call's time budget, shared by building and solving.

    ``Deadline(None)`` never expires.
    """

    def __init__(self, time_limit: float | None, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.end = None if time_limit is None else self.start + float(time_limit)

    def remaining(self, floor: float = 0.01) -> float | None:
        """Seconds left (at least ``floor``), ``None`` without a limit."""
        if self.end is None:
            return None
        return max(floor, self.end - time.perf_counter())

    def expired(self) -> bool:
        return self.end is not None and time.perf_counter() >= self.end

    def check(self, stage: str) -> None:
        """Raise :class:`TimeUp` when the deadline has passed (called between families)."""
        if self.expired():
            raise TimeUp(f"time limit reached while {stage}")


@dataclass(frozen=True)
class SolverParams:
    """What a solver is told, the same for every backend.

    ``time_limit`` is the time *left* for the solver (seconds, ``None``: no limit);
    ``num_workers`` threads (1: reproducible for a seed); ``options`` solver-specific
    settings passed through unchanged (CP-SAT: ``CpSolver.parameters`` fields; HiGHS and
    SCIP: option names; CBC: command-line options such as ``{"cuts": "off"}``).
    """

    time_limit: float | None = None
    seed: int = 0
    num_workers: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)
    deadline: Deadline | None = None

    def seconds_left(self) -> float | None:
        """The time left *now* (adapters call it right before the solver starts, after
        any model conversion of their own); ``time_limit`` without a deadline."""
        return self.time_limit if self.deadline is None else self.deadline.remaining()


@dataclass(frozen=True)
class SolveRun:
    """One solve in the model's real units.

    ``status`` is OPTIMAL only when the solver proved it (gap tolerance 0); ``bound`` is a
    proven lower bound on the minimum (already corrected for any rounding the backend did),
    ``None`` when the solver has none.
    """

    status: Status
    objective: float | None
    bound: float | None
    solve_time: float
    log: str = ""
    message: str = ""


class LinearModel(ABC):
    """A minimization MILP on one backend (see the module docstring).

    ``deadline``: building raises :class:`TimeUp` once it passes (checked every
    ``CHECK_EVERY`` constraints), so a large model cannot eat the solver's time unseen.
    """

    backend: str
    deadline: Deadline
    CHECK_EVERY = 200
    _added = 0

    def _tick(self) -> None:
        self._added += 1
        if self._added % self.CHECK_EVERY == 0:
            self.deadline.check(f"building the {self.backend} model")

    # ------------------------------------------------------------------ variables
    @abstractmethod
    def binary(self, name: str) -> Any:
        """A 0/1 variable."""

    @abstractmethod
    def integer(self, name: str, lb: int, ub: int) -> Any:
        """An integer variable in ``[lb, ub]``."""

    @abstractmethod
    def continuous(self, name: str, lb: float = 0.0, ub: float | None = None) -> Any:
        """A real variable. On CP-SAT it may carry only integer coefficients."""

    # ---------------------------------------------------------------- constraints
    @abstractmethod
    def add(self, terms: Terms, sense: str, rhs: float, name: str = "",
            relax: bool = False) -> None:
        """Add ``Σ coefficient · variable  sense  rhs`` (sense ``<=``, ``>=`` or ``==``).

        Backends that round real coefficients round a constraint so that it gets harder
        to satisfy (every solution stays feasible for the real constraint), or, with
        ``relax=True``, easier (for constraints that only price the objective from below:
        the bound stays valid).
        """

    def at_most_one(self, variables: Iterable[Any], name: str = "") -> None:
        """At most one of the binaries is 1."""
        self.add([(1, v) for v in variables], "<=", 1, name)

    # ------------------------------------------------------------------ objective
    @abstractmethod
    def minimize(self, terms: Terms, constant: float = 0.0, *,
                 rounding_slack: float = 0.0) -> None:
        """Set the objective ``Σ terms + constant``.

        ``rounding_slack``: for backends that round real coefficients (CP-SAT), an upper
        bound, in scaled units, on how far rounding the objective's coefficients can move
        a solution's objective (e.g. half a unit per term that can be active at once);
        the backend also computes the sum of every term's rounding error and lowers the
        reported bound by the smaller of the two, so that it stays valid (0: computed).
        """

    # ------------------------------------------------------------------ solving
    @abstractmethod
    def hint(self, values: Mapping[Any, float]) -> None:
        """Warm start: a (partial) assignment handed to the solver before it starts."""

    @abstractmethod
    def solve(self, params: SolverParams) -> SolveRun:
        """Solve to gap 0 within ``params.time_limit``."""

    @abstractmethod
    def value(self, var: Any) -> float:
        """A variable's value in the incumbent (after :meth:`solve` found one)."""

    def is_one(self, var: Any) -> bool:
        """A binary's value read with tolerance."""
        return self.value(var) > 0.5

    @abstractmethod
    def size(self) -> ModelSize:
        """Variables, integer variables, constraints and nonzeros as handed over."""

    @abstractmethod
    def write(self, path: str | Path, fmt: str, *, maximize: bool = False) -> None:
        """Write the model (``mps``/``lp`` for PuLP models, ``proto`` text for CP-SAT) so
        that its optimum is the method's objective: the objective constant kept (a variable
        fixed at 1 in MPS and LP, which have no offset; the proto's ``offset``), the
        coefficient scale undone (the proto's ``scaling_factor``) and, with ``maximize``,
        written as the maximization of the negated objective (a problem whose objective
        the model minimizes the negation of, e.g. GENIE's F)."""


EXACT_OPTION_RULES: dict[str, OptionRule] = {"num_workers": ("int", 1, 1024)}
"""Values of the number options every exact method takes (with ``solver_options`` and
``initial_solution``, checked by :func:`check_exact_options`)."""


def check_exact_options(values: Mapping[str, Any], rules: Mapping[str, OptionRule] | None = None,
                        nullable: Iterable[str] = ()) -> None:
    """Refuse, before any work, option values of the wrong type or range.

    Parameters
    ----------
    values
        The options as the method received them (its defaults included, or only those
        given): ``num_workers``, ``solver_options`` (a mapping from parameter names to
        values), ``initial_solution`` (a :class:`~dlsched.decision.Decision`) and the
        method's own.
    rules, nullable
        The method's own rules (they override :data:`EXACT_OPTION_RULES`) and the options
        that may be null (:func:`~dlsched.registry.check_option_values`).

    Raises
    ------
    InputError
        Naming ``options.<name>``.
    """
    check_option_values(values, {**EXACT_OPTION_RULES, **(rules or {})}, nullable)
    given = values.get("solver_options")
    if given is not None and not (isinstance(given, Mapping)
                                  and all(isinstance(key, str) for key in given)):
        raise InputError(f"solver_options = {given!r}"[:80], field="options.solver_options",
                         fix="a mapping from solver parameter names to values, e.g. "
                             '{"max_time_in_seconds": 10}')
    hint = values.get("initial_solution")
    if hint is not None and not isinstance(hint, Decision):
        raise InputError(f"initial_solution = {hint!r}"[:80],
                         field="options.initial_solution",
                         fix="pass a dlsched.Decision, e.g. a heuristic's result.decision")


def solver_params(deadline: Deadline, seed: int, num_workers: int = 1,
                  solver_options: Mapping[str, Any] | None = None) -> SolverParams:
    """The parameters for a solve started now: the time left on ``deadline``."""
    if not isinstance(num_workers, int) or num_workers < 1:
        raise InputError(f"num_workers = {num_workers!r}", field="num_workers",
                         fix="an integer >= 1")
    return SolverParams(deadline.remaining(), seed, num_workers, dict(solver_options or {}),
                        deadline)
