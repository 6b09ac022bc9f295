"""``dqn``'s fast form fills one row buffer per call and, after each pick, drops the picked
row and refreshes the ``wider`` column (as :func:`dqn_live` does); after any sequence of
picks its Q-values equal the network's on fresh :func:`q_rows` up to float64 rounding, and
its picks are the same."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dqn_rows_view import random_live_rows
from test_sched2_dqn_live import close_q

from dlsched.heuristics.sched2_dqn_policy import (
    GPUS,
    WIDER,
    greedy_pick,
    load_network,
    q_rows,
    shipped_weights,
)


@pytest.mark.parametrize("seed", range(4))
def test_buffer_after_picks_scores_as_fresh_rows(seed):
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
        widest = int(idle.max())
        rows = live.start(records, now, widest)
        kept = list(records)
        while kept:
            m = len(kept)
            if idle.max() != widest:
                widest = int(idle.max())
                np.greater(rows[:m, GPUS], widest, out=rows[:m, WIDER])
            got = live.q(rows[:m + 1], float(idle.sum()) / total, math.log1p(m / total))
            k = np.array(kept)
            expected = network(q_rows(a.gpus[k], a.duration[k], now - a.submit[k],
                                      a.sensitivity[k], idle, total, m))
            assert close_q(got, expected)
            assert greedy_pick(got) == greedy_pick(expected)
            pick = int(rng.integers(0, m))  # drop a job as dqn_live does, change the idle GPUs
            del kept[pick]
            rows[pick:m] = rows[pick + 1:m + 1]
            idle[int(rng.integers(0, servers))] = int(rng.integers(0, per + 1))
