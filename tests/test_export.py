"""Exported models have the optimum `dlsched solve` reports, read by solvers that share no
code with the writers: HiGHS reads the MPS and LP files, CP-SAT parses the proto text."""

from __future__ import annotations

import highspy
import pytest
from ortools.sat.python import cp_model

from dlsched import solve
from dlsched.instances.genie_gen import generate_genie_workload, genie_snapshot
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.registry import get_method


def instance(problem: str):
    """A tiny snapshot of ``problem`` that HiGHS proves in well under a second."""
    if problem == "horus":  # a large unplaced-GPU penalty constant in its objective
        return generate_horus(seed=1, nodes=2, beta=4, busy=0.5)
    if problem == "liquid":  # a constant and a negative optimum
        return generate_liquid(seed=1, nodes=5)
    base = generate_genie_workload(seed=3, nodes=2, gpus_per_node=2, density=20.0,
                                   duration=2.0)
    return genie_snapshot(base, seed=0, waiting=3, busy=0.25)  # a maximization


def highs_optimum(path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


def cpsat_optimum(path) -> float:
    model = cp_model.CpModel()
    model.proto.parse_text_format(path.read_text(encoding="utf-8"))
    solver = cp_model.CpSolver()
    # CP-SAT's own SIGINT handler would outlive this solve and turn a later Ctrl-C test in
    # this worker into a killed process (the package's solves switch it off too)
    solver.parameters.catch_sigint_signal = False
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return solver.objective_value


@pytest.mark.parametrize("problem", ["horus", "liquid", "genie"])
def test_every_export_has_the_solved_optimum(tmp_path, problem):
    inst = instance(problem)
    solved = solve(inst, "exact", backend="highs", time_limit=30)
    assert solved.status.value == "optimal"
    export = get_method(problem, "exact").export
    for fmt in ("mps", "lp", "proto"):
        path = tmp_path / f"{problem}.{fmt}"
        export(inst, path, fmt)
        value = cpsat_optimum(path) if fmt == "proto" else highs_optimum(path)
        # the proto's coefficients are the CP-SAT model's, x 1e6 and rounded
        assert value == pytest.approx(solved.objective, rel=1e-9, abs=1e-4), fmt
