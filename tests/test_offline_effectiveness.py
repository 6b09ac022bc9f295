"""``offline-effectiveness``: the exact offline optimum of SCHED²'s mean E (Eq. 2).

Checked against the brute force of ``test_offline_exact`` on generated SCHED² workloads
(2 × 4 GPUs, the paper's locality sensitivities), against the simulator's own E column
(the same definition), and for honest status and bound when the search is cut short.
"""

from __future__ import annotations

import pytest
from test_offline_exact import brute_force, check, workload

from dlsched import Status, evaluate, solve, validate
from dlsched.decision import Decision, Placement
from dlsched.formulations.offline.effectiveness import SCALE, SLACK, grid_loss, real_bound
from dlsched.heuristics.sched2 import RULES
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import Policy, job_table, simulate


def small(seed: int, jobs: int = 4):
    """2 × 4 GPUs, jobs arriving 10 s apart, 60 % multi-GPU: they wait (optimum E < 1)."""
    return generate_sched2(seed=seed, jobs=jobs, servers=2, gpus_per_server=4,
                           interarrival=10.0, median_duration=300.0, single_share=0.4)


@pytest.mark.parametrize("seed", [5006, 5007, 5008, 5009])
def test_generated_workloads_match_brute_force(seed):
    w = small(seed)
    result = solve(w, "offline-effectiveness", time_limit=30)
    assert result.status is Status.OPTIMAL, result.message
    check(w, result, "effectiveness")
    expected = brute_force(w, "effectiveness")
    assert result.objective == pytest.approx(expected, rel=1e-9)
    assert expected <= result.bound <= expected + SLACK / SCALE + 1e-12
    assert expected < 1.0  # some job waits or runs spread: the case is not trivial


def test_optimum_by_hand():
    # three 2-GPU jobs on 2 x 2 GPUs, each packed on one server (no slowdown): two run at
    # once, the third waits 10 s, E = (1 + 1 + 10 / 20) / 3; spreading a job over both
    # servers only slows it down (S = 2: 25 s)
    w = workload([(0, 2, 10), (0, 2, 10), (0, 2, 10)])
    result = solve(w, "offline-effectiveness", time_limit=10)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(2.5 / 3, rel=1e-12)
    assert evaluate(w, result.decision, "effectiveness") == result.objective


def simulated_schedule(w, method: str) -> tuple[Decision, float]:
    table = job_table(simulate(w, Policy(method), record_events=False))
    decision = Decision(tuple(Placement(r.job, tuple(r.gpus.split()), start=r.start,
                                        end=r.end) for r in table.itertuples()))
    return decision, float(table["effectiveness"].mean())


def test_simulated_schedules_are_valid_and_never_beat_the_optimum():
    # the simulator and the offline model share the rate model: every rule's run is a
    # valid timed decision, the problem's evaluator gives the simulator's mean E, and the
    # proven optimum is at least as good
    for seed in (5005, 5006):
        w = small(seed, jobs=6)
        best = solve(w, "offline-effectiveness", time_limit=30)
        assert best.status is Status.OPTIMAL, best.message
        for rule in RULES:
            decision, sim_e = simulated_schedule(w, rule)
            assert validate(w, decision).ok
            assert evaluate(w, decision, "effectiveness") == pytest.approx(sim_e, rel=1e-12)
            assert sim_e <= best.bound + 1e-12


def test_cut_short_is_feasible_with_a_bound_above_every_schedule():
    # 10 jobs that CP-SAT does not prove within a small deterministic effort (no wall clock;
    # 0.1 gave the same schedule and bound as 0.5 did, for 0.3 CPU-s less; 0.02 the same
    # bound and a worse schedule, for half the CPU of 0.1)
    w = generate_sched2(seed=5007, jobs=10, servers=2, gpus_per_server=4, interarrival=60.0)
    result = solve(w, "offline-effectiveness", time_limit=60,
                   solver_options={"max_deterministic_time": 0.02})
    assert result.status is Status.FEASIBLE
    check(w, result, "effectiveness")
    assert result.bound > result.objective + 1e-3
    for rule in RULES:
        assert simulated_schedule(w, rule)[1] <= result.bound


def test_bound_and_grid_loss_by_hand():
    # model bound z on Σ q_j: (z + SLACK n) / SCALE, plus the grid loss, over n jobs
    assert real_bound(2 * SCALE - 10, 2, 0.0) == pytest.approx((2 * SCALE - 2) / SCALE / 2)
    # shortest jobs carry the largest ranks: n = 2, d = (10, 20): u (4/10 + 3/20)
    assert grid_loss([20.0, 10.0], 0.5) == pytest.approx(0.5 * (4 / 10 + 3 / 20))


def test_a_grid_too_fine_for_the_scaled_objective_is_a_one_line_input_error():
    # K_j = 1e8 · 10 s / 1e-10 s overflows CP-SAT's 64-bit integers
    result = solve(workload([(0, 2, 10), (0, 2, 10)]), "offline-effectiveness",
                   time_limit=5, time_unit=1e-10)
    assert result.status is Status.INVALID_INPUT
    assert "overflows" in result.message and "\n" not in result.message
