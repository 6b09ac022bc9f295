"""Tuning the Eq. 2 heuristic on training workloads (the paper: "the training data is also
used to optimize the parameters of the heuristic scheduler", Sec. 4.1).

A grid over α and β; the pair with the highest mean Q over the given workloads wins
(ties: the first in grid order). Deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..instance import Instance
from ..problems.inference.policies import HeuristicPolicy
from .engine import serve
from .metrics import mean_quality

ALPHAS = (0.25, 0.5, 0.75)
BETAS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def tune_heuristic(workloads: Sequence[Instance], alphas: Sequence[float] = ALPHAS,
                   betas: Sequence[float] = BETAS) -> tuple[dict[str, float], list[dict]]:
    """Best ``{"alpha", "beta"}`` by mean Q over ``workloads`` and the whole grid."""
    grid = []
    best: dict[str, float] | None = None
    best_q = -1.0
    for a in alphas:
        for b in betas:
            q = [mean_quality(serve(w, HeuristicPolicy(alpha=a, beta=b))) for w in workloads]
            mean = sum(q) / len(q)
            grid.append({"alpha": a, "beta": b, "mean_q": mean})
            if mean > best_q + 1e-12:
                best, best_q = {"alpha": a, "beta": b}, mean
    assert best is not None
    return best, grid
