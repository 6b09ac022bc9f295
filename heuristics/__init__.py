"""Heuristics and the papers' baselines; importing the package registers them all."""

# each module registers its methods
from . import genie, horus, horus_pab, liquid, liquid_jobwise, sched2, sched2_dqn, sched2_priority  # noqa: F401
