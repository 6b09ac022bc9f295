"""Offline exact schedules of whole workloads (CP-SAT), registered as exact methods.

``data`` (modes, time grid), ``model`` (variables, constraint families, objective),
``schedule`` (solution → timed decision), ``methods`` (``solve`` methods
``offline-makespan``, ``offline-wct``, ``offline-qos`` of ``sched2`` and ``genie``,
``offline-effectiveness`` of ``sched2``), ``effectiveness`` (SCHED²'s mean E scaled to
integers, its bound and grid loss),
``bnb`` (an exact branch and bound for ``weighted_jct`` that ``offline-wct`` runs after
CP-SAT), ``lp_bound`` (the time-indexed LP lower bound of ``weighted_jct``), ``scale``
(how far the models prove).
"""

from . import methods  # noqa: F401  (registers the methods)
from .data import Mode, job_modes
from .methods import METHODS, build_model, solve_schedule

__all__ = ["METHODS", "Mode", "build_model", "job_modes", "solve_schedule"]
