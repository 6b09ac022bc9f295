"""``dqn``'s simulator fast form picks as the snapshot method: its folded network
(:class:`LiveQ`) gives the network's Q-values on :func:`q_rows` up to float64 rounding on
random states, the tie rule (:func:`greedy_pick`) makes the picks the same, and whole
simulations with every decision checked against the snapshot method agree."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dqn_rows_view import random_live_rows, random_moment

from dlsched.heuristics.sched2_dqn_policy import (
    dqn_decision,
    greedy_pick,
    load_network,
    q_rows,
    shipped_weights,
)
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import Policy, simulate


def close_q(got: np.ndarray, expected: np.ndarray) -> bool:
    """Equal up to float64 rounding: within 1e-12 of the largest |Q| (at least 1)."""
    scale = max(1.0, float(np.abs(expected).max()))
    return got.shape == expected.shape and bool(np.all(np.abs(got - expected) <= 1e-12 * scale))


@pytest.mark.parametrize("seed", range(6))
def test_folded_network_scores_as_the_network_on_q_rows(seed):
    rng = np.random.default_rng(seed)
    _, live, servers, per = random_live_rows(seed, rng, jobs=400, max_servers=40)
    network, _ = load_network(shipped_weights())
    total = servers * per
    a = live.arrays
    for _ in range(30):
        shown, now, idle = random_moment(rng, a.submit, servers, per, 0, 200)
        queued = len(shown) + int(rng.integers(0, 300))
        wait = now - a.submit[shown]
        expected = network(q_rows(a.gpus[shown], a.duration[shown], wait, a.sensitivity[shown],
                                  idle, total, queued))
        rows = live.start(shown, now, int(idle.max()))
        got = live.q(rows, float(idle.sum()) / total, math.log1p(queued / total))
        assert close_q(got, expected)
        assert greedy_pick(got) == greedy_pick(expected)
        got[-1] = expected[-1] = -np.inf  # nothing runs: φ is not offered
        assert greedy_pick(got) == greedy_pick(expected)


# two workloads: a line-arc trace of the library found every arc of the former seeds 3
# (5 x 4, 30 s) and 4 (2 x 8, 5 s) reached by these two (they cost ~0.3 CPU-s)
@pytest.mark.parametrize(("seed", "servers", "per_server", "interarrival"),
                         [(1, 2, 4, 20.0), (2, 3, 8, 10.0)])
def test_fast_form_picks_as_the_snapshot_method_on_random_workloads(seed, servers, per_server,
                                                                    interarrival):
    w = generate_sched2(seed=seed, jobs=120, servers=servers, gpus_per_server=per_server,
                        interarrival=interarrival, median_duration=600.0)
    full = simulate(w, Policy("dqn"), check="full")
    fast = simulate(w, Policy("dqn"), check="fast")
    for a, b in zip(sorted(full.records, key=lambda r: r.job.id),
                    sorted(fast.records, key=lambda r: r.job.id), strict=True):
        assert (a.start, a.end, a.gpu_list) == (b.start, b.end, b.gpu_list)


def test_fast_form_picks_as_the_snapshot_method_on_a_busy_queue():
    # long queues on a small cluster: many picks per call, all compared with the snapshot;
    # 150 jobs, not 250: the same library line-arcs, queues up to 91 jobs (half the CPU)
    w = generate_sched2(seed=9, jobs=150, servers=4, gpus_per_server=8, interarrival=15.0,
                        median_duration=900.0)
    seen = []

    def observe(snap):
        seen.append(len(snap.jobs))

    full = simulate(w, Policy("dqn"), check="full", observe=observe)
    fast = simulate(w, Policy("dqn"), check="fast")
    assert max(seen) >= 40  # the queue grew long
    for a, b in zip(sorted(full.records, key=lambda r: r.job.id),
                    sorted(fast.records, key=lambda r: r.job.id), strict=True):
        assert (a.start, a.end, a.gpu_list) == (b.start, b.end, b.gpu_list)


def test_one_blas_thread_gives_the_same_q_values():
    from dlsched.heuristics.blas_threads import local_thread_setter, one_blas_thread

    setter = local_thread_setter()
    if setter is None:
        pytest.skip("numpy's BLAS is not the bundled OpenBLAS")
    network, _ = load_network(shipped_weights())
    rng = np.random.default_rng(0)
    previous = setter(2)  # two threads whatever the environment set (the suite sets one)
    try:
        for n in (300, 2000, 5000):
            rows = rng.normal(size=(n, 12))
            two = network._forward(rows)
            with one_blas_thread():
                single = network._forward(rows)
            assert np.array_equal(two, single)
            assert np.array_equal(network(rows), two)
    finally:
        setter(previous)


def test_greedy_pick_takes_the_first_of_near_equal_q_values():
    q = np.array([0.5, 3.0, np.nextafter(np.nextafter(3.0, 4.0), 4.0), 2.9, -np.inf])
    assert int(np.argmax(q)) == 2  # a plain argmax takes the later, 2 ULPs larger value
    assert greedy_pick(q) == 1
    # a real difference, however small next to the Q-values' size, is not a tie
    assert greedy_pick(np.array([1.0, 1.0 + 1e-6])) == 1
    assert greedy_pick(np.array([-2e6, -2e6 + 1e-4, -2e6 + 1.0])) == 2  # relative to |qmax|
    assert greedy_pick(np.array([7.0, 7.0, -np.inf])) == 0


def test_snapshot_method_starts_the_first_of_identical_jobs_whatever_their_last_bits():
    # identical jobs (same arrival, demand, duration, model); the network's Q-values of
    # later rows are raised by a few ULPs, as a BLAS kernel's rounding may do
    w = generate_sched2(seed=4, jobs=1, servers=2, gpus_per_server=4)
    job = w.jobs[0].replace(num_gpus=2, submit_time=0.0)
    jobs = tuple(job.replace(id=f"twin{k}") for k in range(3))
    snapshot = w.replace(jobs=jobs, time=100.0)
    network, window = load_network(shipped_weights())

    def later_rows_higher(rows):
        q = network(rows)
        for k in range(len(q)):
            for _ in range(2 * k):
                q[k] = np.nextafter(q[k], np.inf)
        return q

    plain = later_rows_higher(q_rows(np.full(3, 2.0), np.full(3, job.duration), np.full(3, 100.0),
                                     np.ones(3), np.array([4, 4]), 8, 3))
    assert int(np.argmax(plain)) == 2  # without the tie rule the last twin would start first
    decision = dqn_decision(snapshot, later_rows_higher, window)
    assert [p.job for p in decision.placements][:1] == ["twin0"]
