"""``dqn``'s simulator fast form picks as the snapshot method: its folded network
(:class:`LiveQ`) gives the network's Q-values on :func:`q_rows` up to float64 rounding on
random states, the tie rule (:func:`greedy_pick`) makes the picks the same, and whole
simulations with every decision checked against the snapshot method agree."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dqn_rows_view import random_live_rows, random_moment

from dlsched.heuristics.sched2_dqn import dqn
from dlsched.heuristics.sched2_dqn_policy import (
    WAIT_SCALE_S,
    LiveQ,
    _drift_gains,
    dqn_decision,
    greedy_pick,
    load_network,
    q_rows,
    shipped_weights,
)
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.problems.sched2 import parse_sched2_params
from dlsched.simulate import Policy, simulate
from dlsched.simulate.view import snapshot


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


@pytest.mark.parametrize("moves", ["idle", "wait", "both"])
def test_drift_gains_bound_how_far_each_rows_q_value_moves(moves):
    # the start guard's Lipschitz gains against the network on q_rows: random queues on
    # 32 x 8 GPUs, the idle share and/or the waiting times moved (the queue and the largest
    # idle server kept, as the guard requires); the bound must hold for every row and come
    # within a factor of ten somewhere, or a dropped or halved term would go unnoticed
    network, _ = load_network(shipped_weights())
    rng = np.random.default_rng(7)
    total, jobs = 256, 120
    ratios = []
    for _ in range(40):
        gpus = rng.choice([1.0, 2.0, 4.0, 8.0, 16.0], jobs)
        duration = rng.lognormal(8.0, 1.5, jobs)
        sensitivity = rng.uniform(1.0, 3.0, jobs)
        wait0 = rng.exponential(3600.0, jobs)
        idle0 = rng.integers(0, 8, 32)
        idle0[0] = 8
        idle1, wait1 = idle0.copy(), wait0.copy()
        if moves != "wait":
            idle1[1:] = np.minimum(8, idle0[1:] + rng.integers(0, 5, 31))
        if moves != "idle":
            wait1 = wait0 + rng.exponential(1800.0)
        before = network(q_rows(gpus, duration, wait0, sensitivity, idle0, total, jobs))
        after = network(q_rows(gpus, duration, wait1, sensitivity, idle1, total, jobs))
        per_idle, per_idle_phi, per_wait, per_wait_load = _drift_gains(network, np.log2(gpus))
        idle_drift = (idle1.sum() - idle0.sum()) / total
        wait_drift = np.log1p(wait1 / WAIT_SCALE_S) - np.log1p(wait0 / WAIT_SCALE_S)
        load = math.log1p(jobs / total)
        bound = idle_drift * per_idle + wait_drift * (per_wait + load * per_wait_load)
        moved = np.abs(after - before)
        assert (moved[:-1] <= bound + 1e-9).all()
        assert moved[-1] <= idle_drift * per_idle_phi + 1e-9
        ratios.append((moved[:-1] / np.maximum(bound, 1e-300)).max())
    assert max(ratios) > 0.1


def _q_now(view, network) -> np.ndarray:
    """The network's Q-values on the view's queue (arrival order), φ last: q_rows on the
    jobs as the snapshot method reads them."""
    jobs = view.queue_jobs()
    params = parse_sched2_params(view.params)
    idle = np.array([len(gpus) for gpus in view.idle_lists()])
    rows = q_rows(np.array([float(j.num_gpus) for j in jobs]),
                  np.array([float(j.duration) for j in jobs]),
                  np.array([view.time - j.submit_time for j in jobs]),
                  np.array([params.sensitivity(j.model) for j in jobs]),
                  idle, view.cluster.num_gpus, len(jobs))
    return network(rows)


def test_the_start_guards_bounds_hold_the_networks_values(monkeypatch):
    # each bound (a job's Lipschitz rise with the idle share and its waiting time, φ's
    # fall) against the Q-values recomputed from the definition wherever the guard had one
    w = generate_sched2(seed=1, jobs=150, servers=32, gpus_per_server=8, interarrival=10.0,
                        median_duration=3600.0)
    network, _ = load_network(shipped_weights())
    bounds = LiveQ.wait_bounds
    gaps = []

    def checked(live, view):
        found = bounds(live, view)
        if found is not None:
            q = _q_now(view, network)
            gaps.append((found[0] - q[:-1].max(), q[-1] - found[1]))
        return found

    monkeypatch.setattr(LiveQ, "wait_bounds", checked)
    simulate(w, Policy("dqn"), check="fast")
    gaps = np.array(gaps)
    assert len(gaps) >= 50
    assert (gaps >= -1e-9).all()  # both bounds hold
    assert (gaps[:, 0] > 1e-6).any()  # and were tested where the jobs' values moved


def test_every_call_the_start_guard_skips_would_start_nothing(monkeypatch):
    # the guard's proof (LiveQ.still_waits) checked by the snapshot method, which shares
    # neither the folded network nor the bound: at each skipped call it starts no job (on
    # 256 GPUs a job's end moves the idle share little, so the guard skips 83 of 267 calls)
    w = generate_sched2(seed=1, jobs=150, servers=32, gpus_per_server=8, interarrival=10.0,
                        median_duration=3600.0)
    proven = LiveQ.still_waits
    asked, skipped = [], []

    def checked(live, view):
        waits = proven(live, view)
        asked.append(waits)
        if waits:
            shown = snapshot(view._state, w, view.time, None, False)
            skipped.append(dqn(shown).placements)
        return waits

    monkeypatch.setattr(LiveQ, "still_waits", checked)
    run = simulate(w, Policy("dqn"), check="fast")
    assert len(skipped) >= 20 and not all(asked)  # both answers given
    assert all(placements == () for placements in skipped)
    monkeypatch.setattr(LiveQ, "still_waits", lambda live, view: False)
    unguarded = simulate(w, Policy("dqn"), check="fast")
    assert run.policy_calls == unguarded.policy_calls - len(skipped)
    for a, b in zip(run.records, unguarded.records, strict=True):
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
