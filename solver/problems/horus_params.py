"""Horus instance parameters: the interference functions f (Sec. 3.2 and its footnotes)
and the ``params`` object of a Horus instance, validated (docs/formats.md).

Our reading of f's linear part: the line through the origin and the quadratic's value at
100 %, which keeps f continuous, increasing and convex (``InterferenceFunction.check_convex``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from .params_cache import kept_per_object

COST_MODELS = ("paper", "colocation")


@dataclass(frozen=True)
class InterferenceFunction:
    """Slowdown f(x) on a GPU whose cumulative utilization is x (1.0 = 100 %).

    ``quadratic`` = (a2, a1, a0) applies above 100 %; ``linear`` = (slope, intercept)
    applies up to 100 %. ``linear=None`` means the line through the origin and the
    quadratic's value at 1.0.
    """

    quadratic: tuple[float, float, float]
    linear: tuple[float, float] | None = None

    @property
    def line(self) -> tuple[float, float]:
        if self.linear is not None:
            return self.linear
        a2, a1, a0 = self.quadratic
        return (a2 + a1 + a0, 0.0)

    def __call__(self, x: np.ndarray | float) -> np.ndarray | float:
        a2, a1, a0 = self.quadratic
        slope, intercept = self.line
        x = np.asarray(x, dtype=float)
        out = np.where(x > 1.0, (a2 * x + a1) * x + a0, slope * x + intercept)
        return float(out) if out.ndim == 0 else out

    def check_convex(self) -> str | None:
        """None when f is continuous-enough, non-negative, increasing and convex on [0, inf)."""
        a2, a1, a0 = self.quadratic
        slope, intercept = self.line
        left, right = slope + intercept, a2 + a1 + a0
        if a2 < 0:
            return "the quadratic part must open upwards (a2 >= 0)"
        if slope < 0 or intercept < 0:
            return "the linear part must be non-negative and non-decreasing"
        if right < left - 1e-9:
            return "f must not drop at 100 % (quadratic(1) >= linear(1))"
        if 2 * a2 + a1 < slope - 1e-9:
            return "f must be convex: the quadratic's slope at 100 % must be >= the linear slope"
        return None


# Footnotes 3 and 4 of the Horus paper (fits of JCT slowdown above 100 % utilization).
BUILTIN_INTERFERENCE: dict[str, InterferenceFunction] = {
    "gtx1080": InterferenceFunction((1.32198, -0.00728, 6e-5)),
    "rtx2080": InterferenceFunction((1.16664, -0.00302, 4e-5)),
}


@dataclass(frozen=True)
class HorusParams:
    """Parameters of a Horus instance (see docs/formats.md for the file keys)."""

    w_mem: float = 1.0
    w_util: float = 1.0
    cost_model: str = "paper"
    unplaced_penalty: float | None = None
    beta: int | None = None
    queues: int = 3
    interference: Mapping[str, InterferenceFunction] = field(
        default_factory=lambda: dict(BUILTIN_INTERFERENCE)
    )


@kept_per_object
def parse_horus_params(params: Mapping[str, Any]) -> HorusParams:
    """Validate the ``params`` object of a Horus instance (kept per object: a simulated
    policy parses its workload's params at every call)."""
    known = {"w_mem", "w_util", "cost_model", "unplaced_penalty", "beta", "queues", "interference"}
    for key in params:
        if key not in known:
            raise InputError(
                f"unknown parameter {key!r}",
                field=f"params.{key}",
                fix=f"use only {', '.join(sorted(known))}",
            )
    for key in ("w_mem", "w_util"):
        value = params.get(key, 1.0)
        if not isinstance(value, int | float) or value < 0:
            raise InputError(
                f"{key} = {value!r}", field=f"params.{key}", fix="weights are numbers >= 0"
            )
    cost_model = params.get("cost_model", "paper")
    if cost_model not in COST_MODELS:
        raise InputError(
            f"cost_model = {cost_model!r}",
            field="params.cost_model",
            fix=f"use one of {COST_MODELS}",
        )
    penalty = params.get("unplaced_penalty")
    if penalty is not None and (not isinstance(penalty, int | float) or penalty <= 0):
        raise InputError(
            f"unplaced_penalty = {penalty!r}",
            field="params.unplaced_penalty",
            fix="a number > 0, or null for the default",
        )
    beta = params.get("beta")
    if beta is not None and (not isinstance(beta, int) or beta < 1):
        raise InputError(f"beta = {beta!r}", field="params.beta", fix="an integer >= 1 or null")
    queues = params.get("queues", 3)
    if not isinstance(queues, int) or queues < 1:
        raise InputError(f"queues = {queues!r}", field="params.queues", fix="an integer >= 1")
    functions = dict(BUILTIN_INTERFERENCE)
    for gpu_type, spec in params.get("interference", {}).items():
        where = f"params.interference.{gpu_type}"
        try:
            quad = tuple(float(v) for v in spec["quadratic"])
            lin = spec.get("linear")
            lin = None if lin is None else tuple(float(v) for v in lin)
            if len(quad) != 3 or (lin is not None and len(lin) != 2):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise InputError(
                "malformed interference function",
                field=where,
                fix='write {"quadratic": [a2, a1, a0], "linear": [slope, intercept] or null}',
            ) from None
        fn = InterferenceFunction(quad, lin)  # type: ignore[arg-type]
        problem = fn.check_convex()
        if problem:
            raise InputError(problem, field=where, fix="fit f as a convex function")
        functions[gpu_type] = fn
    return HorusParams(
        w_mem=float(params.get("w_mem", 1.0)),
        w_util=float(params.get("w_util", 1.0)),
        cost_model=cost_model,
        unplaced_penalty=None if penalty is None else float(penalty),
        beta=beta,
        queues=queues,
        interference=functions,
    )
