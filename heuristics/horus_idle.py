"""Greedy's choice when enough GPUs are idle, without pricing every GPU (``CheapestLive``).

Eq. 7 prices a GPU share as ``w_mem · (used + m_j) / cap + w_util · f((util + u_j) / 100)``
(``problems.horus.job_share_costs``; computed in that order of IEEE operations). On a
cluster whose GPUs all hold the same memory C, an idle GPU (memory in use 0.0, utilization
0.0: the simulator resets both when a GPU empties) has the smallest cost c0 of all, and
every idle GPU has the same, so the λ cheapest GPUs (ties: lower index) are the λ idle
GPUs of lowest index, provided that no busy GPU's computed cost equals c0 or falls below
it. That holds when:

* f's computed values never fall as x grows (:func:`idle_first`): ``a2 >= 0``,
  ``slope >= 0``, ``a2 + a1 >= 0`` (so ``a2·x + a1 >= 0`` above 1) and the quadratic's
  value at 1 at least the line's. Each correctly rounded operation is then monotone
  (a sum in both terms, a product or quotient by a non-negative number), so a busy GPU's
  memory term and interference term are each at least an idle GPU's (its loads are sums
  of non-negative shares; a float residue of 1e-14 moves its terms by as little);
* every busy GPU has at least ``eps = 1e-6 · C / w_mem`` GB in use (checked per job on
  the free-memory order: the GPUs with at least ``C - eps`` GB free are the idle ones);
  its memory term then exceeds an idle GPU's by at least ~1e-6, while rounding the final
  sum moves either cost by at most 2^-53 of its size, far less while ``|c0| < 1e8``.

Otherwise, and when fewer than λ GPUs are idle, greedy prices the GPUs as before.
``tests/test_horus_fast_paths.py`` compares the two choices on random loads.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dlsched.problems.horus import HorusParams, single_function
from dlsched.state import EPS

_BOUND = 1e8  # the largest |c0| the margin argument above covers
_KEPT: dict[int, tuple[Any, Any, tuple[float, float, Any] | None]] = {}


def idle_first(p: HorusParams, cluster: Any) -> tuple[float, float, Any] | None:
    """``(C, eps, f)`` when the shortcut applies on ``cluster`` under ``p`` (module
    docstring), else None; kept per (params, cluster) pair."""
    hit = _KEPT.get(id(p))
    if hit is not None and hit[0] is p and hit[1] is cluster:
        return hit[2]
    out = _conditions(p, cluster)
    if len(_KEPT) > 64:
        _KEPT.clear()
    _KEPT[id(p)] = (p, cluster, out)
    return out


def _conditions(p: HorusParams, cluster: Any) -> tuple[float, float, Any] | None:
    cap = cluster.gpu_mem_gb
    if not len(cap) or not (cap == cap[0]).all() or (np.diff(cluster.gpu_node) < 0).any():
        return None
    f = single_function(p, cluster.gpu_type, cap)
    if f is None or not (0 < p.w_mem <= 1e6) or not p.w_util >= 0:
        return None
    a2, a1, a0 = f.quadratic
    slope, intercept = f.line
    if not (a2 >= 0 and slope >= 0 and a2 + a1 >= 0):
        return None
    # f at 1 as both branches compute it (x * 1.0 is x)
    if not ((a2 + a1) + a0 >= slope + intercept):
        return None
    c = float(cap[0])
    return c, 1e-6 * c / p.w_mem, f


def idle_cost_ok(p: HorusParams, f: Any, c: float, mem: float, util: float) -> bool:
    """An idle GPU's cost for a job (``mem`` GB, ``util`` %) is finite and below the
    bound of the margin argument."""
    x = util / 100.0
    a2, a1, a0 = f.quadratic
    slope, intercept = f.line
    inter = (a2 * x + a1) * x + a0 if x > 1.0 else slope * x + intercept
    c0 = p.w_mem * (mem / c) + p.w_util * inter
    return math.isfinite(c0) and abs(c0) < _BOUND


def lowest_idle(view: Any, n: int, taken: set[int]) -> list[int]:
    """The ``n`` idle GPUs of lowest index not in ``taken`` (servers hold ascending ranges
    of GPU indices; at least ``n`` such GPUs are idle)."""
    out: list[int] = []
    lists = view.idle_lists()
    for s in view.open_servers():
        for g in lists[s]:
            if g not in taken:
                out.append(g)
                if len(out) == n:
                    return out
    return out


def fits_idle(job: Any, keys: Any, idle: int, c: float, eps: float) -> bool:
    """Whether the shortcut gives ``job`` its GPUs: at least ``num_gpus`` GPUs are idle
    (``idle``: idle now, less those taken earlier in the call), the job's share fits C,
    and no other GPU has ``C - eps`` GB free or more (``keys``: the free-memory order of
    the call, ``(-free, g)`` ascending)."""
    if idle < job.num_gpus or c < (job.gpu_mem_gb or 0.0) - EPS:
        return False
    return idle >= len(keys) or -keys[idle][0] < c - eps
