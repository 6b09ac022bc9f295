"""What ``solve`` returns: neutral data, never a backend type.

A :class:`Result` prints as a readable summary (``print(result)``), turns into a JSON-safe
dict (:meth:`Result.to_dict`), and a list of results turns into one pandas DataFrame
(:func:`results_frame`, also :meth:`Result.frame`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from numbers import Number
from typing import TYPE_CHECKING, Any

from .decision import Decision
from .gaps import relative_gap

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FRAME_COLUMNS", "ModelSize", "Result", "Status", "relative_gap", "results_frame"]


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


@dataclass(frozen=True, kw_only=True)
class Result:
    """A solve's outcome, built by keyword. ``objective`` always comes from the evaluator.

    Parameters
    ----------
    status
        The outcome; :attr:`Status.OPTIMAL` only when a proven bound meets the objective
        (:func:`dlsched.gaps.is_proven_optimal`).
    decision
        The validated decision, or ``None`` when the method found none.
    objective
        The problem evaluator's value of ``decision`` (``None`` without a decision).
    bound
        A proven bound on the optimum (lower for minimization, upper for maximization)
        when the method has one, else ``None``.
    gap
        :func:`dlsched.gaps.relative_gap` of ``objective`` and ``bound`` (``None`` when
        either is missing).
    wall_time
        Wall-clock seconds of the method's run (model build and solve).
    cpu_time
        CPU seconds of the same run: this process (all its threads) plus the solver
        processes it started and waited for (CBC); ``None`` when not measured. Unlike
        ``wall_time`` it does not grow when the machine is busy.
    method
        The registered method's name.
    backend
        The solver backend of an exact method (``cbc``, ``highs``, ``cpsat``), else ``None``.
    model_size
        Size of the exact model handed to the solver, if any.
    build_time
        Seconds spent building the model, if measured.
    message
        A one-line note (why no solution, an input error, a downgraded claim).
    log
        The solver's log text, if captured.
    extra
        Method-specific figures (for example ``solve_time``).

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
    cpu_time: float | None = None
    message: str = ""
    log: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """A readable multi-line summary (what ``dlsched solve`` prints).

        Returns
        -------
        str
            One ``label  value`` line each for method, status, objective, bound, gap,
            wall time and CPU time (when measured), then the model size and the
            message when present.
        """
        gap = "-" if self.gap is None else f"{100 * self.gap:.4f}%"
        lines = [
            f"method     {self.method}" + (f" ({self.backend})" if self.backend else ""),
            f"status     {self.status.value}",
            f"objective  {_num(self.objective)}",
            f"bound      {_num(self.bound)}",
            f"gap        {gap}",
            f"wall time  {self.wall_time:.3f} s",
        ]
        if self.cpu_time is not None:
            lines.append(f"cpu time   {self.cpu_time:.3f} s")
        if self.model_size:
            size = self.model_size
            lines.append(f"model      {size.variables} variables ({size.integer_variables} "
                         f"integer), {size.constraints} constraints")
        if self.message:
            lines.append(f"note       {self.message}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self, *, decision: bool = True, log: bool = True) -> dict[str, Any]:
        """The result as plain JSON-safe data (``json.dumps(..., allow_nan=False)`` works).

        Parameters
        ----------
        decision
            Include the decision's placements (the solution file's ``placements`` list).
        log
            Include the solver log text.

        Returns
        -------
        dict
            Every field by name; ``status`` as its string value, ``model_size`` as a dict
            (or ``None``), non-finite floats in ``extra`` as the strings ``"inf"``,
            ``"-inf"``, ``"nan"`` and values JSON cannot hold as their ``repr``.
        """
        out: dict[str, Any] = {
            "status": self.status.value,
            "method": self.method,
            "backend": self.backend,
            "objective": _json_safe(self.objective),
            "bound": _json_safe(self.bound),
            "gap": _json_safe(self.gap),
            "wall_time": _json_safe(self.wall_time),
            "cpu_time": _json_safe(self.cpu_time),
            "build_time": _json_safe(self.build_time),
            "model_size": None if self.model_size is None else {
                "variables": self.model_size.variables,
                "integer_variables": self.model_size.integer_variables,
                "constraints": self.model_size.constraints,
                "nonzeros": self.model_size.nonzeros,
            },
            "message": self.message,
            "extra": _json_safe(self.extra),
        }
        if decision:
            out["decision"] = None if self.decision is None else self.decision.to_dict()
        if log:
            out["log"] = self.log
        return out

    @staticmethod
    def frame(results: Iterable[Result]) -> pd.DataFrame:
        """One DataFrame row per result; see :func:`results_frame`."""
        return results_frame(results)


FRAME_COLUMNS: tuple[str, ...] = (
    "method", "backend", "status", "objective", "bound", "gap", "wall_time", "cpu_time",
    "build_time", "placed", "variables", "integer_variables", "constraints", "nonzeros", "message",
)
"""Columns of :func:`results_frame`, in order (then one ``extra.<key>`` column per scalar
extra figure)."""


def results_frame(results: Iterable[Result]) -> pd.DataFrame:
    """A pandas DataFrame with one row per result.

    Parameters
    ----------
    results
        Any iterable of :class:`Result` (for example one per instance or per method).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`FRAME_COLUMNS` (``status`` as its string, ``placed`` = number of
        placed jobs, model-size columns ``None`` without a model), then ``extra.<key>``
        for every scalar (number, string, bool) entry of any result's ``extra``, in order
        of first appearance; a result without that key has NaN/None there.
    """
    import pandas as pd

    rows = []
    extra_keys: dict[str, None] = {}
    for res in results:
        size = res.model_size
        row: dict[str, Any] = {
            "method": res.method,
            "backend": res.backend,
            "status": res.status.value,
            "objective": res.objective,
            "bound": res.bound,
            "gap": res.gap,
            "wall_time": res.wall_time,
            "cpu_time": res.cpu_time,
            "build_time": res.build_time,
            "placed": None if res.decision is None else len(res.decision.placements),
            "variables": None if size is None else size.variables,
            "integer_variables": None if size is None else size.integer_variables,
            "constraints": None if size is None else size.constraints,
            "nonzeros": None if size is None else size.nonzeros,
            "message": res.message,
        }
        for key, value in res.extra.items():
            if isinstance(value, Number | str):
                row[f"extra.{key}"] = value
                extra_keys.setdefault(f"extra.{key}")
        rows.append(row)
    return pd.DataFrame(rows, columns=[*FRAME_COLUMNS, *extra_keys])


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _json_safe(value: Any) -> Any:
    """``value`` with containers converted to lists/dicts and non-JSON leaves made safe."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Enum):
        return _json_safe(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_json_safe(v) for v in items]
    if callable(getattr(value, "tolist", None)):  # numpy scalars and arrays
        return _json_safe(value.tolist())
    return repr(value)


@dataclass
class MethodOutput:
    """What a registered method hands back to :func:`solve`.

    ``status`` is the method's own claim (OPTIMAL only with a proof); ``bound`` is in the
    evaluator's units, already corrected for any coefficient scaling the backend used.
    """

    decision: Decision | None
    status: Status
    bound: float | None = None
    model_size: ModelSize | None = None
    build_time: float | None = None
    log: str = ""
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
