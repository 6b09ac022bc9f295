"""Offline exact schedules (CP-SAT) against brute force on 3-5 job workloads."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.formulations.offline import check_schedule, job_modes, solve_offline
from dlsched.result import Status


def brute_force(workload: Instance, objective: str) -> float:
    """Best value over every mode choice and every order, each job placed by a serial
    schedule-generation scheme at its earliest feasible time (optimal for regular
    objectives: some order generates an optimal active schedule)."""
    modes = job_modes(workload)
    caps = workload.cluster.node_gpu_count.tolist()
    jobs = workload.jobs
    best = None
    for choice in itertools.product(*[range(len(m)) for m in modes]):
        for order in itertools.permutations(range(len(jobs))):
            placed: list[tuple[float, float, tuple[int, ...]]] = []
            ends = [0.0] * len(jobs)
            for j in order:
                mode = modes[j][choice[j]]
                cands = sorted({jobs[j].submit_time} | {e for _, e, _ in placed
                                                        if e > jobs[j].submit_time})
                for t in cands:
                    d = mode.duration
                    checks = [t] + [s for s, _, _ in placed if t < s < t + d]
                    ok = all(
                        sum(c[srv] for s, e, c in placed if s <= x < e) + k <= caps[srv]
                        for x in checks for srv, k in enumerate(mode.counts) if k)
                    if ok:
                        placed.append((t, t + d, mode.counts))
                        ends[j] = t + d
                        break
            first = min(j.submit_time for j in jobs)
            if objective == "makespan":
                value = max(ends) - first
            elif objective == "weighted_jct":
                value = sum(job.weight * (ends[i] - job.submit_time) for i, job in enumerate(jobs))
            else:
                value = -100.0 * sum(
                    job.deadline is not None and job.deadline > job.submit_time
                    and ends[i] <= job.deadline for i, job in enumerate(jobs)) / len(jobs)
            best = value if best is None else min(best, value)
    return -best if objective == "qos" else best


def workload(specs, sens=2.0) -> Instance:
    """2 servers x 2 GPUs; specs = (submit, gpus, duration[, weight, deadline])."""
    jobs = []
    for i, (submit, gpus, dur, *rest) in enumerate(specs):
        weight, deadline = (*rest, 1.0, None)[:2] if rest else (1.0, None)
        jobs.append(Job(id=f"j{i}", submit_time=submit, num_gpus=gpus, duration=dur, model="m",
                        weight=weight, deadline=deadline))
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 2, gpu_type="g"),
                    jobs=tuple(jobs), params={"locality": {"m": sens}})


# S = 2: 2 GPUs on 1 + 1 -> c = 1 -> slowdown 2.5; 3 GPUs on 2 + 1 -> c = 2/3 -> 2;
# 4 GPUs on 2 + 2 -> 2. Durations below are multiples of 2 so every mode is whole seconds.
CASES = [
    [(0, 2, 10), (0, 2, 20), (0, 1, 10)],
    [(0, 3, 10), (5, 2, 20), (6, 1, 4), (8, 1, 30)],
    [(0, 1, 40), (0, 1, 40), (0, 1, 40), (2, 2, 10), (3, 4, 10)],
    [(0, 2, 10, 3.0, 30), (1, 2, 10, 1.0, 12), (2, 1, 20, 2.0, 25), (2, 3, 6, 1.0, 40)],
]


def test_mode_durations_by_hand():
    modes = job_modes(workload([(0, 2, 10), (0, 3, 10)]))
    assert {m.counts: m.duration for m in modes[0]} == pytest.approx(
        {(2, 0): 10.0, (1, 1): 25.0, (0, 2): 10.0})  # 10 * (1 + 1 * 1.5) on 1 + 1
    assert {m.counts: m.duration for m in modes[1]} == pytest.approx(
        {(2, 1): 20.0, (1, 2): 20.0})  # c = 1 - 2/6 = 2/3 -> slowdown 2


@pytest.mark.parametrize("objective", ["makespan", "weighted_jct", "qos"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_offline_matches_brute_force(case, objective):
    w = workload(CASES[case])
    if objective == "qos" and all(len(s) < 5 for s in CASES[case]):
        # deadlines: twice the solo duration after arrival
        w = w.replace(jobs=tuple(j.replace(deadline=j.submit_time + 2 * j.duration)
                                 for j in w.jobs))
    result = solve_offline(w, objective, time_limit=20)
    assert result.status is Status.OPTIMAL
    assert check_schedule(w, result) == []
    expected = brute_force(w, objective)
    assert result.objective == pytest.approx(expected)
    assert result.bound == pytest.approx(expected)


def test_fractional_durations_bound_sandwiches_the_optimum():
    # S = 1.7: 2 GPUs on 1 + 1 -> 1 + 0.7 * 1.5 = 2.05 -> 10 s become 20.5 s (not whole)
    w = workload([(0, 2, 10), (0.5, 2, 10), (1, 1, 7.3), (1, 3, 3)], sens=1.7)
    expected = brute_force(w, "makespan")
    result = solve_offline(w, "makespan", time_limit=20)
    assert check_schedule(w, result) == []
    assert result.bound <= expected + 1e-9 <= result.objective + 2e-9
    fine = solve_offline(w, "makespan", time_limit=20, time_unit=0.05)
    assert fine.bound <= expected + 1e-9 <= fine.objective + 2e-9
    assert fine.objective - fine.bound <= result.objective - result.bound + 1e-9


def test_offline_respects_releases_and_capacity_on_random():
    rng = np.random.default_rng(3)
    specs = [(float(rng.integers(0, 20)), int(rng.choice([1, 2, 4])), float(rng.integers(1, 9) * 2))
             for _ in range(10)]
    w = workload(specs)
    result = solve_offline(w, "weighted_jct", time_limit=20)
    assert result.status.has_solution
    assert check_schedule(w, result) == []
    assert result.bound <= result.objective + 1e-9
