"""Event-driven simulation of DL-job workloads under any registered policy."""

from ..problems.rates import SpeedModel as SpeedModel
from .engine import simulate as simulate
from .metrics import job_table as job_table
from .metrics import summary as summary
from .records import JobRecord as JobRecord
from .records import Policy as Policy
from .records import SimRun as SimRun
from .records import SimulationError as SimulationError
from .results import save_results as save_results

__all__ = ["JobRecord", "Policy", "SimRun", "SimulationError", "SpeedModel", "job_table",
           "save_results", "simulate", "summary"]
