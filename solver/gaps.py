"""One gap, one proof: the relative gap and the "proven optimal" test used everywhere.

``solve``, every exact method, the instance library, the benchmark runner and the
performance profiles call these two functions; nothing else restates the formula.

The relative gap of a value ``objective`` to a reference (a proven bound, or a best known
objective) is::

    |objective − reference| / max(|objective|, |reference|)        (0 when both are 0)

and, when a ``sense`` is given, the signed version: the difference is taken in the
direction "how much worse ``objective`` is than ``reference``" (``objective − reference``
for minimization, ``reference − objective`` for maximization), so a negative gap means
``objective`` beats ``reference``. The value lies in [0, 1] when both share a sign.
"""

from __future__ import annotations

from typing import Literal

OPTIMALITY_GAP = 1e-6
"""Largest relative gap at which a bound proves an objective optimal."""
OPTIMALITY_ABS = 1e-4
"""Largest absolute difference at which a bound proves an objective optimal (absorbs
CP-SAT's rounding of scaled coefficients on objectives near 0)."""

Sense = Literal["min", "max"]


def relative_gap(
    objective: float | None, reference: float | None, sense: Sense | None = None
) -> float | None:
    """Relative gap of ``objective`` to ``reference`` (a bound or a best known value).

    Parameters
    ----------
    objective
        The value to judge (the evaluator's objective of a decision), or ``None``.
    reference
        A proven bound on the optimum, or a best known objective, or ``None``.
    sense
        ``None`` (default): the unsigned gap ``|objective − reference| / scale``.
        ``"min"`` or ``"max"``: the signed gap, positive when ``objective`` is worse than
        ``reference`` in that sense and negative when it is better.

    Returns
    -------
    float or None
        The gap (``scale = max(|objective|, |reference|)``; 0 when both are 0), or ``None``
        when either value is missing.
    """
    if objective is None or reference is None:
        return None
    scale = max(abs(objective), abs(reference))
    if sense is None:
        diff = abs(objective - reference)
    elif sense == "min":
        diff = objective - reference
    elif sense == "max":
        diff = reference - objective
    else:
        raise ValueError(f"sense must be 'min', 'max' or None, not {sense!r}")
    if scale == 0:
        return 0.0
    return diff / scale


def is_proven_optimal(objective: float | None, bound: float | None) -> bool:
    """True when the proven ``bound`` shows that ``objective`` is optimal.

    Parameters
    ----------
    objective
        The evaluator's objective of a validated decision, or ``None``.
    bound
        A proven bound on the optimum (lower for minimization, upper for maximization),
        or ``None``.

    Returns
    -------
    bool
        ``True`` when both are known and their :func:`relative_gap` is at most
        :data:`OPTIMALITY_GAP` or their absolute difference at most :data:`OPTIMALITY_ABS`.
    """
    if objective is None or bound is None:
        return False
    gap = relative_gap(objective, bound)
    return gap is not None and (gap <= OPTIMALITY_GAP or abs(objective - bound) <= OPTIMALITY_ABS)
