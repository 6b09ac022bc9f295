"""The integer scale S of ``inference`` qualities: Σ Q · S is an integer for every schedule.

Q = κ_m · V, and V is 1, 0 or (hard − end) / (hard − soft) with integer ms; so S κ_m / Δ_q
integral for every model m and span Δ_q > 0 (and S κ_m integral) makes S · Q integral.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dlsched.gaps import is_proven_optimal
from dlsched.problems.inference import InferenceData

MAX_EXACT_SCALE = 10_000_000


def quality_scale(data: InferenceData) -> tuple[int, bool]:
    """(S, exact): the least S with S κ_m / Δ_q integral, or (10^6, False) if too large."""
    scale = 1
    spans = {int(x) for x in (data.hard - data.soft) if x > 0}
    for k in data.kappa:
        kf = Fraction(float(k)).limit_denominator(1_000_000)
        if float(kf) != float(k):
            return 1_000_000, False
        for span in spans or {1}:
            f = kf / span
            scale = math.lcm(scale, f.denominator)
            if scale > MAX_EXACT_SCALE:
                return 1_000_000, False
    if not spans:
        for k in data.kappa:
            scale = math.lcm(scale, Fraction(float(k)).limit_denominator(1_000_000).denominator)
    return max(scale, 1), True


def proven_optimal(value: float, bound: float, scale: int, exact_scale: bool) -> bool:
    """True when no schedule beats ``value``: the package's one proof
    (:func:`dlsched.gaps.is_proven_optimal`), or, with an exact scale S, integrality: every
    Σ Q is a multiple of 1/S, so OPT <= floor(S · bound) / S, optimal when that is <=
    ``value`` (a proof the tolerance-based one cannot make when the gap exceeds it)."""
    if is_proven_optimal(value, bound):
        return True
    return exact_scale and math.floor(bound * scale + 1e-6) <= round(value * scale)
