"""Problem definitions: what a valid decision is and what it costs, independent of any model.

A problem declares the job fields it needs, whether GPUs are exclusive, its objective
sense, its own extra feasibility rules and its evaluator. Formulations and heuristics
read these definitions; none of them is trusted to check itself.

The built-in problems are the modules imported below; each registers itself.
"""

# each registers its problem (horus_rates, sched2_rates: the simulator's rate models)
from . import genie, horus, horus_rates, inference, liquid, sched2, sched2_rates  # noqa: F401
from .base import Problem, Violation, get_problem, problem_names, register_problem

__all__ = ["Problem", "Violation", "get_problem", "problem_names", "register_problem"]
