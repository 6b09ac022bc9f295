"""dlsched: exact models, heuristics and simulation for deep-learning jobs on GPU clusters.

The documented API: :func:`solve`, :func:`simulate`, :func:`load_instance`, :func:`validate`,
:func:`evaluate`, and the data types re-exported here.
"""

# First: when this process is the dlsched command, Ctrl-C while the rest loads is one
# line and exit 130 (importing the module arms it; see its docstring).
# isort: off
from . import interrupt as _interrupt  # noqa: F401
# isort: on

# The wiring: these imports declare the built-in methods and generators by name (tables
# of the modules that register them); a module is imported when first asked for.
from . import formulations as formulations
from . import heuristics as heuristics
from . import instances as instances
from .decision import Decision as Decision
from .decision import Placement as Placement
from .decision import TaskPlacement as TaskPlacement
from .errors import InputError as InputError
from .errors import MethodError as MethodError
from .gaps import is_proven_optimal as is_proven_optimal
from .gaps import relative_gap as relative_gap
from .instance import Instance as Instance
from .instance_io import check_instance as check_instance
from .instance_io import load_instance as load_instance
from .instance_io import save_instance as save_instance
from .jobs import Container as Container
from .jobs import Job as Job
from .jobs import RunningJob as RunningJob
from .result import MethodOutput as MethodOutput
from .result import Result as Result
from .result import Status as Status
from .result import results_frame as results_frame
from .simulate import simulate as simulate
from .solution_io import load_solution as load_solution
from .solution_io import save_solution as save_solution
from .solve import solve as solve
from .topology import Cluster as Cluster
from .topology import homogeneous_cluster as homogeneous_cluster
from .topology_io import load_topology as load_topology
from .validate import evaluate as evaluate
from .validate import validate as validate

__version__ = "0.1.0"
