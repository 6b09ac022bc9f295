"""``dqn``'s simulator fast form scores exactly as the snapshot method: its Q-network rows
(built from per-job columns computed once) equal :func:`q_rows` bit for bit on random
states, and so do the Q-values and the picks."""

from __future__ import annotations

import numpy as np
import pytest
from dqn_rows_view import random_live_rows

from dlsched.heuristics.sched2_dqn_policy import (
    load_network,
    q_rows,
    shipped_weights,
)
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import Policy, simulate


@pytest.mark.parametrize("seed", range(6))
def test_live_rows_equal_q_rows(seed):
    rng = np.random.default_rng(seed)
    w, live, servers, per = random_live_rows(seed, rng, jobs=400, max_servers=40)
    network, _ = load_network(shipped_weights())
    total = servers * per
    a = live.arrays
    for _ in range(30):
        n = int(rng.integers(0, 200))
        shown = rng.choice(len(w.jobs), size=n, replace=False)
        now = float(a.submit.max()) + float(rng.exponential(5000.0))
        idle = rng.integers(0, per + 1, size=servers)
        queued = n + int(rng.integers(0, 300))
        wait = now - a.submit[shown]
        expected = q_rows(a.gpus[shown], a.duration[shown], wait, a.sensitivity[shown], idle,
                          total, queued)
        got = live.rows(live.block(shown, now), idle, total, queued)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        assert np.array_equal(network(got), network(expected))


def test_fast_form_picks_as_the_snapshot_method_on_a_busy_queue():
    # long queues on a small cluster: many picks per call, all compared with the snapshot
    w = generate_sched2(seed=9, jobs=250, servers=4, gpus_per_server=8, interarrival=15.0,
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
    from dlsched.heuristics.blas_threads import one_blas_thread

    network, _ = load_network(shipped_weights())
    rng = np.random.default_rng(0)
    for n in (300, 2000, 5000):
        rows = rng.normal(size=(n, 12))
        default = network._forward(rows)
        with one_blas_thread():
            single = network._forward(rows)
        assert np.array_equal(default, single)
        assert np.array_equal(network(rows), default)
