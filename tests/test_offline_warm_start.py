"""The offline model's warm start is a schedule the model accepts: on its grid and in the
order its symmetry rules demand."""

from __future__ import annotations

import pytest
from hints import hint_is_a_solution

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.decision import Decision, Placement
from dlsched.formulations.offline.methods import _hint, build_model
from dlsched.formulations.offline.schedule import greedy_schedule, timed_decision
from dlsched.formulations.offline.warm_start import grid_hint
from dlsched.instances.sched2_gen import generate_sched2


def _two_identical_jobs() -> Instance:
    jobs = tuple(Job(id=f"j{i}", submit_time=0.0, num_gpus=1, duration=10.0, model="m")
                 for i in range(2))
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 2, gpu_type="g"),
                    jobs=jobs, params={"locality": {"m": 2.0}})


def test_identical_jobs_and_servers_by_hand():
    # j0 on server 1 from 10 s, j1 on server 0 from 0 s. Re-timed, both start at 0 (their
    # GPUs are free); the servers are then swapped so server 0's column (GPUs of j0, j1)
    # (1, 0) is lexicographically >= server 1's (0, 1).
    w = _two_identical_jobs()
    dec = Decision(placements=(Placement(job="j0", gpus=("n1/g0",), start=10.0, end=20.0),
                               Placement(job="j1", gpus=("n0/g0",), start=0.0, end=10.0)))
    data = build_model(w, "weighted_jct").data
    mode = {m.counts: k for k, m in enumerate(data.modes[0])}
    assert grid_hint(data, dec) == {0: (mode[(1, 0)], 0), 1: (mode[(0, 1)], 0)}


def test_a_shape_that_is_no_mode_is_left_out():
    w = _two_identical_jobs()
    dec = Decision(placements=(Placement(job="j0", gpus=("n0/g0", "n0/g1"), start=0.0,
                                         end=10.0),))
    assert grid_hint(build_model(w, "weighted_jct").data, dec) == {}


@pytest.mark.parametrize("seed", range(5))
def test_the_greedy_warm_start_is_a_solution_of_the_model(seed):
    # seed 4 lies on a fine grid: rounded naively, its greedy schedule overlapped itself;
    # seeds 1-4 broke the symmetry rules (measured before grid_hint: 4 of 5 rejected)
    w = generate_sched2(seed=seed, jobs=20, servers=2, gpus_per_server=4, interarrival=60.0,
                        median_duration=300.0)
    model = build_model(w, "weighted_jct")
    dec = timed_decision(w, greedy_schedule(w, [list(ms) for ms in model.data.modes]))
    hint = grid_hint(model.data, dec)
    assert sorted(hint) == list(range(model.data.num_jobs))  # every job hinted
    _hint(model, dec)
    assert hint_is_a_solution(model.model)
