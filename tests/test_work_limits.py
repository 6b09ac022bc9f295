"""Deterministic work limits: a budget counted in the solver's own work (CP-SAT
deterministic time, CBC, HiGHS and SCIP branch-and-bound nodes), given through the exact
methods' ``solver_options``, stops the solver at the same point on any machine and any
load: the same status, objective and bound run after run, never a false ``optimal``.

The instance is a small, full Horus snapshot (10 × 8 GPUs, 90 % busy, 15 jobs waiting,
seed 5) that no backend proves at its root node (docs/benchmarks.md, "Work limits"); it
replaced a 16 × 8 one (seed 0) on which HiGHS's one node cost three times the CPU.
"""

from __future__ import annotations

import pytest

from dlsched import solve
from dlsched.registry import generators

BUDGETS = {
    "cpsat": {"max_deterministic_time": 0.2},
    "cbc": {"maxNodes": 1},
    "highs": {"mip_max_nodes": 1},
    "scip": {"limits/nodes": 1},
}


@pytest.fixture(scope="module")
def hard():
    return generators()["horus"].build(seed=5, nodes=10, busy=0.9, beta=15)


def test_a_work_limit_gives_the_same_answer_every_time(hard, backend):
    runs = [solve(hard, "exact", backend=backend, time_limit=600,
                  solver_options=BUDGETS[backend]) for _ in range(2)]
    first, second = runs
    assert first.status.value == "feasible", first.message  # stopped by the budget
    assert first.bound is not None and first.bound <= first.objective
    assert (second.status, second.objective, second.bound) == (
        first.status, first.objective, first.bound)
    assert first.decision == second.decision
