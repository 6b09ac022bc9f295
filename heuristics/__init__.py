"""Heuristics and the papers' baselines; importing the package registers them all."""

# each module registers its methods
from . import (  # noqa: F401
    genie,
    horus,
    horus_pab,
    inference,
    inference_pg,
    liquid,
    liquid_jobwise,
    sched2,
    sched2_dqn,
)
