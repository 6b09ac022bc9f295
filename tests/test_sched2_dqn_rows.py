"""``dqn``'s fast form fills one row buffer per call and, after each pick, drops the picked
row and refreshes the ``wider`` column (as :func:`dqn_live` does); after any sequence of
picks its Q-values equal the network's on fresh :func:`q_rows` up to float64 rounding, and
its picks are the same."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dqn_rows_view import random_live_rows, random_moment
from test_sched2_dqn_live import close_q

from dlsched.heuristics.sched2_dqn_policy import (
    GPUS,
    WIDER,
    greedy_pick,
    load_network,
    q_rows,
    shipped_weights,
    widest_left,
)


# seed 0 only: a line-arc trace of the library found no arc of seeds 1-3 that seed 0 did
# not reach (they cost ~0.38 CPU-s)
@pytest.mark.parametrize("seed", [0])
def test_buffer_after_picks_scores_as_fresh_rows(seed):
    rng = np.random.default_rng(100 + seed)
    _, live, servers, per = random_live_rows(seed, rng, jobs=300, max_servers=30)
    network, _ = load_network(shipped_weights())
    total = servers * per
    a = live.arrays
    for _ in range(10):
        records, now, idle = random_moment(rng, a.submit, servers, per, 1, 150)
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


class _Servers:
    """The two lists of the live view that :func:`widest_left` reads."""

    def __init__(self, idle_per_server: list[int]) -> None:
        self.idle = [list(range(k)) for k in idle_per_server]
        self.by_idle = [[s for s, k in enumerate(idle_per_server) if k == c]
                        for c in range(max(idle_per_server) + 1)]

    def servers_by_idle(self):
        return self.by_idle

    def idle_lists(self):
        return self.idle


@pytest.mark.parametrize("seed", range(20))
def test_widest_left_is_the_largest_idle_count_after_the_picks(seed):
    rng = np.random.default_rng(seed)
    idle = [int(k) for k in rng.integers(0, 9, size=int(rng.integers(1, 7)))]
    view = _Servers(idle)
    taken: dict[int, int] = {}
    for s in rng.choice(len(idle), size=int(rng.integers(0, len(idle) + 1)), replace=False):
        if idle[s]:
            taken[int(s)] = int(rng.integers(1, idle[s] + 1))
    expected = max(idle[s] - taken.get(s, 0) for s in range(len(idle)))
    assert widest_left(view, taken) == expected
    assert widest_left(view, taken, max(idle)) == expected
