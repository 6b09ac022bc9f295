"""What ``solve`` returns: neutral data, never a backend type."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .decision import Decision


class Status(StrEnum):
    """Outcome of a solve. Only OPTIMAL claims optimality, and only with a proving bound."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"  # nothing found within the time limit
    INVALID_INPUT = "invalid_input"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass(frozen=True)
class ModelSize:
    """Size of an exact model as handed to the solver."""

    variables: int
    integer_variables: int
    constraints: int
    nonzeros: int | None = None


@dataclass(frozen=True)
class Result:
    """A solve's outcome. ``objective`` always comes from the problem's evaluator.

    ``bound`` is a proven bound on the optimum (lower for minimization, upper for
    maximization) when the method has one; ``gap`` is :func:`relative_gap` of the two.
    Missing values are ``None``, never infinities.
    """

    status: Status
    decision: Decision | None
    objective: float | None
    bound: float | None
    gap: float | None
    wall_time: float
    method: str
    backend: str | None = None
    model_size: ModelSize | None = None
    build_time: float | None = None
    message: str = ""
    log: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|objective − bound| / max(|objective|, |bound|), 0 when both are 0.

    One formula for every backend (solvers disagree on theirs); it lies in [0, 1] when
    objective and bound share a sign.
    """
    if objective is None or bound is None:
        return None
    scale = max(abs(objective), abs(bound))
    if scale == 0:
        return 0.0
    return abs(objective - bound) / scale
