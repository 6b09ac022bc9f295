"""A capacity ceiling on the mean quality any schedule can reach on an inference stream.

Cut the stream into windows of ``w`` ms by arrival. The queries of window k arrive in
[a_k, a_k + w) and score 0 after their hard deadline, so whatever serves them runs inside
[a_k, h_k] (h_k = their latest hard deadline) and uses at most ``|G_t| · (h_k − a_k)`` ms
of the GPUs of type t. A query served by model m on type t costs at least
``c[m, t] = min_b D[m, t, b] / b`` ms of GPU time (a batch of n <= b queries runs at size b
and lasts D[m, t, b]), and earns at most κ_m. So the queries of window k earn at most the
optimum of the linear programme

    max Σ_{m,t} κ_m x[m,t]   s.t.  Σ x <= n_k,   Σ_m c[m,t] x[m,t] <= |G_t| (h_k − a_k),  x >= 0,

and the sum of these optima over the windows bounds Σ Q from above (each window's queries'
share of any schedule is feasible for its programme). Every window width gives a valid
bound; :func:`quality_ceiling` returns the smallest over the widths given, divided by the
number of queries. It uses the delay table's values: with delay noise (``delay_cv`` > 0) a
batch may run faster than its table entry, and the ceiling is an estimate, not a bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import linprog

from ..instance import Instance
from ..problems.inference import inference_data

WINDOWS_MS = (5_000, 10_000, 30_000, 60_000)


def quality_ceiling(instance: Instance, windows_ms: Sequence[int] = WINDOWS_MS) -> float:
    """Upper bound on the mean Q (Eq. 1, unserved = 0) of any schedule of ``instance``.

    Parameters
    ----------
    instance
        An ``inference`` instance.
    windows_ms
        Window widths (ms) to try; the smallest bound wins.

    Returns
    -------
    float
        The ceiling in [0, max κ] (0 for an empty stream); exact delay tables assumed
        (see the module docstring).
    """
    data = inference_data(instance)
    n = data.num_queries
    if n == 0:
        return 0.0
    models, types = len(data.models), len(data.gpu_types)
    cost = np.zeros((models, types))
    for m in range(models):
        for t in range(types):
            per = [data.delay[m, t, s] / b for s, b in enumerate(data.batch_sizes)
                   if data.delay[m, t, s] >= 0]
            cost[m, t] = min(per)
    gpus = np.bincount(data.gpu_type, minlength=types).astype(float)
    gain = -np.repeat(data.kappa, types)  # variables x[m, t], m-major
    a_ub = np.zeros((1 + types, models * types))
    a_ub[0] = 1.0
    for t in range(types):
        for m in range(models):
            a_ub[1 + t, m * types + t] = cost[m, t]
    best = np.inf
    for width in windows_ms:
        if width < 1:
            raise ValueError("window widths must be >= 1 ms")
        k = (data.arrival - data.arrival[0]) // int(width)  # non-decreasing: sorted arrivals
        windows, first, counts = np.unique(k, return_index=True, return_counts=True)
        latest = np.maximum.reduceat(data.hard, first)
        total, cache = 0.0, {}
        for w, count, last in zip(windows.tolist(), counts.tolist(), latest.tolist(),
                                  strict=True):
            start = int(data.arrival[0]) + w * int(width)
            span = max(0, int(last) - start)
            key = (count, span)
            if key not in cache:
                b_ub = np.concatenate(([count], gpus * span))
                res = linprog(gain, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
                if res.status != 0:
                    raise RuntimeError(f"ceiling LP failed: {res.message}")
                cache[key] = -res.fun
            total += cache[key]
        best = min(best, total)
    return float(best / n)
