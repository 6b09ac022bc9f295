"""Event-driven serving simulator for the ``inference`` problem (Fang et al., CIKM'17).

:func:`serve` replays a query stream on the instance's GPUs under a batch policy
(:mod:`dlsched.serve.policies`); :mod:`dlsched.serve.metrics` turns the run into a
per-query table, a summary and plots.
"""

from .engine import ServeRun, serve
from .policies import FixedPolicy, HeuristicPolicy, make_policy

__all__ = ["FixedPolicy", "HeuristicPolicy", "ServeRun", "make_policy", "serve"]
