"""Horus heuristics: feasibility on random snapshots, hand-checked choices, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched import solve, validate
from dlsched.heuristics.horus import fifo, greedy, obp, weighted_fair_pick
from dlsched.heuristics.kmeans import kmeans_l1
from dlsched.instances.horus_gen import generate_horus
from dlsched.result import Status
from factories import horus_instance, running

METHODS = ("greedy", "fifo", "obp")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(12))
def test_every_decision_passes_the_validator(method, seed):
    rng = np.random.default_rng(seed)
    inst = generate_horus(seed=seed, nodes=int(rng.integers(2, 6)), gpus_per_node=4,
                          beta=int(rng.integers(3, 12)), busy=float(rng.choice([0.3, 0.8, 1.0])),
                          cpu=float(rng.choice([12.0, 64.0])))
    result = solve(inst, method)
    assert result.status is Status.FEASIBLE
    assert validate(inst, result.decision).ok


def test_greedy_avoids_the_loaded_gpu():
    inst = horus_instance([("a", 1, 50.0, 1.0)], [running("r", ["n0/g0"], 90.0, 1.0)])
    # f(1.4) on g0 is far above f(0.5) on the idle g1
    assert greedy(inst).by_job["a"].gpus == ("n0/g1",)


def test_greedy_takes_cheapest_gpus_within_cpu_room():
    # 2 servers x 2 GPUs, 6 CPUs each; the job wants 2 GPUs at 4 CPUs per GPU, so each
    # server takes one share. Idle GPUs n0/g0, n0/g1, n1/g1 cost the same; n1/g0 carries a
    # 30 % job and costs more. Ascending cost, ties by index: n0/g0, then n0/g1 (no CPU
    # left on n0), then n1/g1.
    inst = horus_instance([("a", 2, 50.0, 1.0, 4.0, 0.0)],
                          [running("r", ["n1/g0"], 30.0, 1.0, 1.0)], nodes=2, cpu=6.0)
    assert greedy(inst).by_job["a"].gpus == ("n0/g0", "n1/g1")


def test_greedy_skips_job_when_too_few_servers_pass():
    inst = horus_instance([("a", 2, 50.0, 6.0)], [running("r", ["n0/g0"], 10.0, 4.0)])
    # a needs 6 GB on two GPUs; g0 has 4 free: only one GPU fits
    assert greedy(inst).placements == ()


def test_fifo_is_strict_and_exclusive():
    inst = horus_instance([("a", 1, 10.0, 1.0), ("b", 2, 10.0, 1.0), ("c", 1, 10.0, 1.0)],
                          [running("r", ["n0/g0"], 10.0, 1.0)])
    decision = fifo(inst)
    # a takes the only idle GPU g1; b cannot fit; c waits behind b (strict FIFO)
    assert [p.job for p in decision.placements] == ["a"]
    assert decision.by_job["a"].gpus == ("n0/g1",)
    backfilled = fifo(inst.replace(jobs=(inst.jobs[1], inst.jobs[2])), backfill=True)
    assert [p.job for p in backfilled.placements] == ["c"]


def test_obp_picks_most_free_memory():
    inst = horus_instance([("a", 1, 10.0, 2.0)], [running("r", ["n0/g0"], 10.0, 1.0),
                                                  running("s", ["n0/g1"], 10.0, 3.0)])
    assert obp(inst).by_job["a"].gpus == ("n0/g0",)


def test_weighted_fair_pick_by_hand():
    waits = np.array([10.0, 20.0, 30.0, 0.0, 0.0])
    # queue 0: jobs 0-2, median wait 20, weight max(3, 60) = 60; queue 1: jobs 3-4, weight 2
    # beta 3: shares 3 * 60/62 = 2.90 and 0.10 -> floors 2 and 0, remainder to queue 0
    assert weighted_fair_pick([[0, 1, 2], [3, 4]], waits, 3) == [2, 1, 0]
    # beta 4: 3.87 / 0.13 -> 3 and 0, one left: largest remainder is queue 0 (0.87) but it
    # is full, so queue 1 gets it
    assert weighted_fair_pick([[0, 1, 2], [3, 4]], waits, 4) == [2, 1, 0, 3]


def test_kmeans_separates_obvious_groups_and_is_seeded():
    points = np.array([[0, 0], [0, 0.1], [1, 1], [1, 0.9], [0.05, 0]])
    labels = kmeans_l1(points, 2, seed=7)
    assert labels[0] == labels[1] == labels[4] != labels[2] == labels[3]
    assert np.array_equal(labels, kmeans_l1(points, 2, seed=7))


def test_greedy_is_deterministic_for_a_seed():
    inst = generate_horus(seed=5, nodes=6, gpus_per_node=4, beta=12, busy=0.9)
    assert greedy(inst, seed=3) == greedy(inst, seed=3)


def test_unknown_option_is_invalid_input():
    inst = horus_instance([("a", 1, 10.0, 1.0)])
    result = solve(inst, "obp", colour="red")
    assert result.status is Status.INVALID_INPUT
    assert "colour" in result.message


def test_greedy_refills_the_buffer_until_the_queue_is_empty():
    # 1 server x 2 GPUs of 8 GB; a (waited 100 s) and b (waited 50 s) each need 5 GB, so
    # they cannot share a GPU. k = 1, beta = 1: the first buffer is {a} (longest wait), a
    # takes g0 (both idle GPUs cost the same: lower index). Alg. 1's loop then picks the
    # next buffer {b}, which takes g1 (g0 has 3 GB left). One buffer per call: b waits.
    inst = horus_instance([("a", 1, 50.0, 5.0, 0.0, 0.0, 0.0), ("b", 1, 50.0, 5.0, 0.0, 0.0, 50.0)],
                          params={"beta": 1, "queues": 1})
    both = greedy(inst)
    assert {p.job: p.gpus for p in both.placements} == {"a": ("n0/g0",), "b": ("n0/g1",)}
    one = greedy(inst, refill=False)
    assert {p.job: p.gpus for p in one.placements} == {"a": ("n0/g0",)}


def test_buffer_order_reweighs_the_queues_after_each_buffer():
    from dlsched.heuristics.horus import buffer_order

    waits = np.array([10.0, 10.0, 15.0])
    # queue 0 = jobs 0, 1 (weight max(2, 10 x 2) = 20), queue 1 = job 2 (weight 15); beta 1:
    # shares 20/35 = 0.57 and 0.43 -> the one slot goes to queue 0 (job 0). Then queue 0 =
    # job 1 (weight 10) vs 15 -> job 2; then job 1. Not the global wait order (2, 0, 1).
    assert buffer_order([[0, 1], [2]], waits, 1) == [0, 2, 1]
    assert buffer_order([[0, 1], [2]], waits, 1, refill=False) == [0]
    # beta 2: buffer 1 = shares 1.14 / 0.86 -> one each, in wait order (2, 0); then job 1
    assert buffer_order([[0, 1], [2]], waits, 2) == [2, 0, 1]
