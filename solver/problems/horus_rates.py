"""The simulator's rate models of Horus workloads: ``"horus"`` (f fitted to the JCT
slowdown of co-located jobs) and ``"horus-linear"`` (the paper's own simulator)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..instance import Instance
from .horus import HorusProblem, parse_horus_params
from .horus_params import BUILTIN_INTERFERENCE
from .rates import Interference, register_interference


class FittedInterference(Interference):
    """Rate model ``"horus"``, our reading of f: fitted to the JCT slowdown of co-located
    jobs, so ``1 + f(U)`` is a GPU's time inflation, normalized by the job's solo value:
    on GPU g, ``(1 + f(u_j)) / (1 + f(U_g))`` (a job alone keeps rate 1); the job takes
    the smallest over its GPUs. f: a Horus workload's ``params.interference``, else
    ``BUILTIN_INTERFERENCE``. GTX 1080: two 50 % jobs slow down 1.40x, two 80 % jobs
    2.13x, inside the paper's 1-1.5x and 1.5-3x (Sec. 3.2)."""

    def __init__(self, workload: Instance) -> None:
        super().__init__(workload)
        functions = (parse_horus_params(workload.params).interference
                     if workload.problem == HorusProblem.name else BUILTIN_INTERFERENCE)
        gpu_type = workload.cluster.gpu_type
        missing = sorted(set(gpu_type) - set(functions))
        if missing:
            raise InputError(f"no interference function for GPU type {missing[0]!r}",
                             field="params.interference",
                             fix=f"use GPU types {sorted(functions)}")
        self._coef = [(*functions[t].quadratic, *functions[t].line) for t in gpu_type]
        # one function for every GPU (one GPU type): f(u_j) is then the same on each
        self._single = self._coef[0] if len(set(self._coef)) == 1 else None

    def factor(self, own_util: float, gpus: np.ndarray, cum_util: np.ndarray) -> float:
        u = own_util / 100.0
        best = 1.0
        if self._single is not None:  # the loop below with f(u_j) taken once
            a2, a1, a0, slope, intercept = self._single
            own = 1.0 + ((a2 * u + a1) * u + a0 if u > 1.0 else slope * u + intercept)
            for g in gpus:
                x = cum_util[g] / 100.0
                rate = own / (1.0 + ((a2 * x + a1) * x + a0 if x > 1.0
                                     else slope * x + intercept))
                if rate < best:  # min(best, rate): a NaN never replaces best
                    best = rate
            return best
        coef = self._coef
        for g in gpus:
            a2, a1, a0, slope, intercept = coef[g]
            # f on a scalar, the same float operations as InterferenceFunction.__call__
            fu = (a2 * u + a1) * u + a0 if u > 1.0 else slope * u + intercept
            x = cum_util[g] / 100.0
            fx = (a2 * x + a1) * x + a0 if x > 1.0 else slope * x + intercept
            best = min(best, (1.0 + fu) / (1.0 + fx))
        return best


class LinearInterference(Interference):
    """Rate model ``"horus-linear"``, the paper's own simulator (Sec. 6: "interference
    overheads scale linearly w.r.t. the sum of the jobs GPU utilization"), our reading: a
    GPU of summed utilization U_g ≤ 100 % runs its jobs at full speed, above at
    ``100 / U_g``; the job takes the smallest over its GPUs (two 80 % jobs: 1.6x slower)."""

    def factor(self, own_util: float, gpus: np.ndarray, cum_util: np.ndarray) -> float:
        best = 1.0
        for g in gpus:
            x = cum_util[g]
            if x > 100.0:
                best = min(best, 100.0 / x)
        return best


register_interference("horus", FittedInterference)
register_interference("horus-linear", LinearInterference)
