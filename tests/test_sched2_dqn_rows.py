"""``dqn``'s fast form fills one row buffer per call and refills it in place after each pick
(:meth:`LiveRows.start` / :meth:`LiveRows.update`); after any sequence of picks the buffer
equals :meth:`LiveRows.rows` (itself :func:`q_rows`, ``test_sched2_dqn_live.py``) bit for
bit, and so do the network's Q-values on it."""

from __future__ import annotations

import numpy as np
import pytest
from dqn_rows_view import random_live_rows

from dlsched.heuristics.sched2_dqn_policy import load_network, shipped_weights


@pytest.mark.parametrize("seed", range(4))
def test_refilled_rows_equal_fresh_rows_after_picks(seed):
    rng = np.random.default_rng(100 + seed)
    w, live, servers, per = random_live_rows(seed, rng, jobs=300, max_servers=30)
    network, _ = load_network(shipped_weights())
    total = servers * per
    a = live.arrays
    for _ in range(10):
        n = int(rng.integers(1, 150))
        records = rng.choice(len(w.jobs), size=n, replace=False)
        now = float(a.submit.max()) + float(rng.exponential(5000.0))
        idle = rng.integers(0, per + 1, size=servers)
        rows = live.start(records, now)
        kept = list(records)
        demand = a.gpus[records]
        while kept:
            m = len(kept)
            free = int(idle.sum())
            live.update(rows[:m + 1], demand[:m], int(idle.max()), total, m, free)
            fresh = live.rows(live.block(np.array(kept), now), idle, total, m, free)
            assert np.array_equal(rows[:m + 1], fresh)
            assert np.array_equal(network.forward(rows[:m + 1]), network(fresh))
            pick = int(rng.integers(0, m))  # drop a job as dqn_live does, change the idle GPUs
            del kept[pick]
            rows[pick:m] = rows[pick + 1:m + 1]
            demand[pick:m - 1] = demand[pick + 1:m]
            idle[int(rng.integers(0, servers))] = int(rng.integers(0, per + 1))
