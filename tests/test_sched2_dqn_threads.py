"""``dqn``'s fast form on long queues holds one BLAS thread per call (``THREADED_ROWS``) by
setting OpenBLAS's count directly: the schedule is the snapshot method's and the count is
restored after every call."""

from __future__ import annotations

import dataclasses

import pytest

import dlsched.heuristics.sched2_dqn_policy as policy
from dlsched import state
from dlsched.heuristics.blas_threads import local_thread_setter
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import Policy, simulate


def _thread_count() -> int | None:
    """OpenBLAS's count for this thread (None: numpy's BLAS is not the bundled OpenBLAS)."""
    fn = local_thread_setter()
    if fn is None:
        return None
    count = fn(1)
    fn(count)
    return count


@pytest.fixture
def two_blas_threads():
    """Two OpenBLAS threads for this thread during the test (the suite's conftest sets one:
    a restored count of one would not tell a restore from no change)."""
    fn = local_thread_setter()
    if fn is None:
        yield
        return
    previous = fn(2)
    try:
        yield
    finally:
        fn(previous)


def test_every_call_on_the_one_thread_path_picks_as_the_snapshot_method(monkeypatch,
                                                                        two_blas_threads):
    w = generate_sched2(seed=3, jobs=60, servers=2, gpus_per_server=4, interarrival=10.0,
                        median_duration=600.0)
    full = simulate(w, Policy("dqn"), check="full")
    before = _thread_count()
    assert before in (None, 2)
    calls = []

    def counted(view, *, policy_state=None):
        calls.append(view.queue_length())
        out = live(view, policy_state=policy_state)
        assert _thread_count() == before  # restored after the call
        return out

    live = policy.dqn_live
    monkeypatch.setattr(policy, "THREADED_ROWS", 1)  # every call takes the path
    spec = state.view_policy("sched2", "dqn")
    monkeypatch.setitem(state._VIEW_POLICIES, ("sched2", "dqn"),
                        dataclasses.replace(spec, decide=counted))
    fast = simulate(w, Policy("dqn"), check="fast")
    assert calls and min(calls) >= 1
    for a, b in zip(sorted(full.records, key=lambda r: r.job.id),
                    sorted(fast.records, key=lambda r: r.job.id), strict=True):
        assert (a.start, a.end, a.gpu_list) == (b.start, b.end, b.gpu_list)
