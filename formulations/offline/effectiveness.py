"""Mean execution effectiveness (SCHED² Eq. 2) as an exact objective of the offline model.

A job's effectiveness is ``E_j = work_j / (end_j − submit_j)``: its ideal run time (its
``duration``, the simulator's ``ideal`` column) over its time in the system (wait + run,
the run slowed by its placement's locality). ``offline-effectiveness`` maximizes the mean
over all jobs (:meth:`dlsched.problems.sched2.Sched2Problem.evaluate_schedule`). E is not
linear in the end times, so the CP-SAT model scales it to integers:

    q_j = ⌊K_j / T_j⌋  (CP-SAT's division constraint),   maximize Σ q_j,

with ``T_j = end_j − release_j`` in grid units and ``K_j = ⌊SCALE · work_j / u⌋ − 1``
(u the grid unit; the −1 absorbs the float rounding of the product, so K_j ≤ SCALE ·
work_j / u always). For every schedule, ``SCALE · ΣE − SLACK · n ≤ Σ q_j ≤ SCALE · ΣE``
(``K_j ≥ SCALE · work_j / u − 2.25`` and the floor loses < 1, T_j ≥ 1), so the model's
proven bound z gives the proven bound ``(z + SLACK · n) / (SCALE · n)`` on the real mean
E, off by at most ``SLACK / SCALE`` (4e-8) from its schedule's value.

Optimal schedules exist on the grid: E is non-increasing in every end time (a *regular*
objective), so some optimal schedule is active (every start is a release or an end), and
on an exact grid (:mod:`.data`) its times are grid points. On a fine grid, rounding a real
schedule onto the grid (start rank k of n: ends at most k + 2 units later, release rounded
up by < 1 unit) lowers E_j by at most ``(k + 3) · u / d_j`` (d_j the job's shortest run
time: ``E(T) − E(T + δ) ≤ δ / T`` and T ≥ d_j); :func:`grid_loss` sums that bound with the
largest ranks on the shortest jobs, and :func:`fine_unit` picks u so the loss of the mean
is at most half :data:`dlsched.gaps.OPTIMALITY_ABS`.
"""

from __future__ import annotations

import math

from dlsched.errors import InputError
from dlsched.gaps import OPTIMALITY_ABS
from dlsched.instance import Instance

SCALE = 10**8
"""E = 1 is SCALE model units (so the mean is resolved to 1e-8)."""
SLACK = 4
"""Most model units one job's q_j falls below SCALE · E_j (see the module docstring)."""
MAX_GAIN = 2**62
"""Largest K_j (CP-SAT's 64-bit integers)."""


def work(workload: Instance) -> list[float]:
    """Each job's ideal run time in seconds (its ``duration``: Eq. 2's numerator)."""
    return [float(j.duration) for j in workload.jobs]


def gains(workload: Instance, unit: float) -> tuple[int, ...]:
    """K_j = ⌊SCALE · work_j / u⌋ − 1 of every job (an InputError when it overflows)."""
    out = []
    for i, w in enumerate(work(workload)):
        k = math.floor(SCALE * w / unit) - 1
        if k > MAX_GAIN:
            raise InputError(f"job {workload.jobs[i].id!r}: {w:g} s on a grid of {unit:g} s "
                             "overflows CP-SAT's integers", field="options.time_unit",
                             fix="use a coarser time_unit, or leave it out")
        out.append(max(k, 0))
    return tuple(out)


def grid_loss(shortest: list[float], unit: float) -> float:
    """Worst loss of Σ E_j from rounding a real schedule onto a grid of ``unit`` seconds
    (``shortest``: each job's shortest run time in seconds, any mode)."""
    n = len(shortest)
    return unit * sum((n + 2 - i) / d for i, d in enumerate(sorted(shortest)))


def fine_unit(shortest: list[float]) -> float:
    """A power of ten of seconds whose :func:`grid_loss` on the mean E is at most half
    :data:`OPTIMALITY_ABS`."""
    per_unit = grid_loss(shortest, 1.0) / len(shortest)
    return 10.0 ** math.floor(math.log10(0.5 * OPTIMALITY_ABS / per_unit))


def real_bound(model_bound: float, n_jobs: int, loss: float) -> float:
    """A proven upper bound on the real mean E from the model's proven bound on Σ q_j
    (``loss``: :func:`grid_loss` of the grid, 0 on an exact grid)."""
    raw = math.floor(model_bound + 1e-6)  # the objective is integral
    return ((raw + SLACK * n_jobs) / SCALE + loss) / n_jobs
