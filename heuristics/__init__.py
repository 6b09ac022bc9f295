"""Heuristics and the papers' baselines; importing the package registers them all."""

from . import genie, horus, liquid, liquid_jobwise, sched2  # noqa: F401  (each registers its methods)
