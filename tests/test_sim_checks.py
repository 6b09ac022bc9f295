"""The simulator's schedule check sweeps give what a brute-force reading gives.

* ``_over_capacity`` (one event order for several loads, a radix sort on the keys) against
  a per-key, per-instant sum over the intervals, on random intervals with shared times and
  zero-length intervals; a zero load against a negative capacity;
* ``_held_twice`` against a set per segment;
* ``check_live`` names a GPU two placements of one decision share, and a busy GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.decision import Decision, Placement
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.problems import get_problem
from dlsched.problems.rates import SpeedModel
from dlsched.simulate.checks import _held_twice, _over_capacity, check_live
from dlsched.simulate.live import LiveState
from dlsched.validate import TOL


def _brute_over(key, start, end, load, cap):
    """Keys where, at some instant, the loads of the intervals [s, e) holding it exceed cap.

    The sweep lists ends before starts at one time, so at an instant t the level is the
    sum over intervals with s <= t < e; it is largest at some interval's start.
    """
    bad = set()
    for k in np.unique(key):
        mine = np.flatnonzero(key == k)
        for i in mine:
            t = start[i]
            if not start[i] < end[i]:
                continue
            held = mine[(start[mine] <= t) & (t < end[mine])]
            if load[held].sum() > cap[k] + TOL:
                bad.add(int(k))
    return sorted(bad)


@pytest.mark.parametrize("seed", range(6))
def test_over_capacity_matches_the_brute_force_reading(seed):
    rng = np.random.default_rng(seed)
    n, keys = 300, 9
    key = rng.integers(0, keys, n)
    start = rng.integers(0, 40, n).astype(float)  # few distinct times: many ties
    end = start + rng.integers(0, 6, n)  # some zero-length intervals
    ones = np.ones(n)
    mem = rng.choice([0.0, 1.0, 2.5], n)
    cap_one = np.ones(keys)
    cap_mem = rng.choice([2.0, 4.0, 6.0], keys)
    got = _over_capacity(key, start, end, [(ones, cap_one), (mem, cap_mem)])
    assert [int(k) for k in got[0]] == _brute_over(key, start, end, ones, cap_one)
    assert [int(k) for k in got[1]] == _brute_over(key, start, end, mem, cap_mem)
    assert len(got[0])  # the random intervals do overlap somewhere


def test_zero_load_is_over_only_below_a_zero_capacity():
    key = np.array([0, 1, 1, 3])
    start, end = np.zeros(4), np.ones(4)
    cap = np.array([0.0, -1.0, 5.0, -2.0])
    (got,) = _over_capacity(key, start, end, [(np.zeros(4), cap)])
    assert got.tolist() == [1, 3]
    assert [x.tolist() for x in _over_capacity(key[:0], start[:0], end[:0],
                                               [(np.zeros(0), cap)])] == [[]]


def test_held_twice_names_the_segments_that_repeat_a_key():
    rng = np.random.default_rng(3)
    segs = [rng.integers(0, 12, rng.integers(0, 6)).tolist() for _ in range(200)]
    keys = np.array([k for s in segs for k in s], dtype=np.int64)
    lens = np.array([len(s) for s in segs])
    want = [j for j, s in enumerate(segs) if len(set(s)) != len(s)]
    assert _held_twice(keys, lens).tolist() == want
    assert want


def test_check_live_names_a_shared_and_a_busy_gpu():
    w = generate_sched2(seed=0, jobs=4, servers=1, gpus_per_server=4)
    state = LiveState(w, SpeedModel.for_workload(w).bind(w), exclusive=True,
                      record_events=False)
    for idx in range(len(w.jobs)):
        state.queue.add(idx)
    problem = get_problem(w.problem)
    ids = w.cluster.gpu_ids
    a, b, c = (w.jobs[i] for i in range(3))

    def check(decision):
        return check_live(state, decision, lambda j: True, {j.id: j for j in w.jobs}, problem,
                          lambda: w)

    one = Placement(a.id, tuple(ids[:a.num_gpus]))
    clash = Placement(b.id, tuple(ids[a.num_gpus - 1:a.num_gpus - 1 + b.num_gpus]))
    found = [v for v in check(Decision.of([one, clash])) if v.kind == "exclusive"]
    assert [(v.job, v.message) for v in found] == [(a.id, f"GPU {ids[a.num_gpus - 1]} is shared")]
    state.start(0, one.gpus, 0.0)
    busy = Placement(c.id, tuple(ids[:c.num_gpus]))
    found = [v for v in check(Decision.of([busy])) if v.kind == "exclusive"]
    assert [v.job for v in found] == [c.id] * c.num_gpus
