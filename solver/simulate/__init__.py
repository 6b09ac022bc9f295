"""Event-driven simulation of DL-job workloads under any registered policy."""

from .engine import JobRecord as JobRecord
from .engine import Policy as Policy
from .engine import SimRun as SimRun
from .engine import SimulationError as SimulationError
from .engine import simulate as simulate
from .metrics import job_table as job_table
from .metrics import summary as summary
from .results import save_results as save_results
from .speed import SpeedModel as SpeedModel

__all__ = ["JobRecord", "Policy", "SimRun", "SimulationError", "SpeedModel", "job_table",
           "save_results", "simulate", "summary"]
