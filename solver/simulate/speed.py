"""The simulator's rate models: the problems' own (:mod:`dlsched.problems.rates`).

The engine binds a :class:`SpeedModel` to its workload (:meth:`SpeedModel.bind`) and asks
the bound models for each job's work, its rate on a placement and the interference
factor of shared GPUs. Which models exist is the problems' business: each problem module
registers its locality and interference models and names its defaults
(docs/simulator.md, "Rate models"); this package names no problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from ..problems.rates import BoundSpeed, SpeedModel

__all__ = ["BoundSpeed", "SpeedModel", "describe"]


def describe(model: SpeedModel) -> Mapping[str, Any]:
    """The model as plain data (written next to simulation results)."""
    return asdict(model)
