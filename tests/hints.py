"""Is a model's warm start one of its solutions? (Solvers drop a hint that is not.)"""

from __future__ import annotations

from ortools.sat.python import cp_model


def hint_is_a_solution(model: cp_model.CpModel, seconds: float = 30.0) -> bool:
    """Solve ``model`` with every hinted variable fixed to its hint: feasible or not."""
    solver = cp_model.CpSolver()
    # CP-SAT's own SIGINT handler would outlive this solve and turn a later Ctrl-C test in
    # this worker into a killed process (the package's solves switch it off too)
    solver.parameters.catch_sigint_signal = False
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = seconds
    return solver.Solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
