"""Every stage of the offline schedules keeps the one deadline (issue 32, item 11):
building the model, the warm start, CP-SAT, the LP bound and the branch and bound.

Measured in CPU seconds (tests/cpu_time.py): a method that keeps its wall-clock limit
uses at most that much CPU (one CP-SAT worker), loaded machine or not; before the fix,
building the model of the 226-job GENIE workload alone took ~4 CPU-s and its LP bound
~4 more past a 1 s limit.
"""

from __future__ import annotations

import pytest
from cpu_time import cpu_seconds

from dlsched.formulations.backend import Deadline
from dlsched.formulations.offline.data import job_modes
from dlsched.formulations.offline.lp_bound import lp_bound
from dlsched.registry import generators
from dlsched.result import Status
from dlsched.solve import solve


def genie_workload(hours: float, seed: int):
    return generators()["genie"].build(seed=seed, nodes=4, gpus_per_node=4, duration=hours,
                                       density=10.0)


@pytest.mark.parametrize("method", ["offline-wct", "offline-makespan", "offline-qos"])
def test_a_large_genie_workload_keeps_a_1_s_limit(method):
    w = genie_workload(24.0, 0)  # 226 jobs, 13,560 placement modes
    start = cpu_seconds()
    result = solve(w, method, time_limit=1.0)
    assert cpu_seconds() - start <= 1.1 * 1.0 + 1.0
    assert result.status is Status.NO_SOLUTION and "time limit reached" in result.message


@pytest.mark.parametrize(("hours", "seed"), [(4.0, 2), (6.0, 1)])
def test_offline_wct_keeps_its_limit_through_every_stage(hours, seed):
    # 46 and 58 jobs: the model builds in time, then CP-SAT, the LP and the search share
    # what is left
    w = genie_workload(hours, seed)
    start = cpu_seconds()
    result = solve(w, "offline-wct", time_limit=2.0)
    assert cpu_seconds() - start <= 1.1 * 2.0 + 1.0
    assert result.status is not Status.OPTIMAL


def test_lp_bound_gives_up_on_an_expired_deadline_or_a_huge_lp():
    w = genie_workload(24.0, 0)
    modes = job_modes(w)
    start = cpu_seconds()
    assert lp_bound(w, modes, deadline=Deadline(0.0)) is None
    assert lp_bound(w, modes, time_limit=60.0) is None  # > MAX_COLUMNS: not built
    assert cpu_seconds() - start <= 1.0
