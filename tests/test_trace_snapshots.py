"""Trace-derived snapshots: a busy moment of a real workload, as a Horus instance."""

from __future__ import annotations

import pytest

from dlsched import solve, validate
from dlsched.instances.trace_snapshots import trace_snapshot
from dlsched.result import Status

ITP = "itp-cluster07-d25-26.json.gz"


def test_snapshot_of_a_busy_moment():
    snap = trace_snapshot(workload=ITP, pending=15)
    assert len(snap.jobs) == 15
    assert snap.running and snap.time > 0
    # FIFO runs jobs on exclusive GPUs: no GPU holds two running jobs
    held = [g for r in snap.running for g in r.gpus]
    assert len(held) == len(set(held))
    assert all(j.submit_time <= snap.time for j in snap.jobs)
    assert snap.provenance["arguments"]["workload"] == ITP


def test_later_moments_and_determinism():
    first, second = trace_snapshot(workload=ITP, seed=0), trace_snapshot(workload=ITP, seed=1)
    assert second.time >= first.time and second.sha256 != first.sha256
    assert trace_snapshot(workload=ITP, seed=1).sha256 == second.sha256


def test_methods_solve_trace_snapshots():
    snap = trace_snapshot(workload=ITP)
    exact = solve(snap, "exact", backend="highs", time_limit=60)
    assert exact.status is Status.OPTIMAL
    for method in ("greedy", "obp", "fifo"):
        result = solve(snap, method)
        assert validate(snap, result.decision).ok
        assert result.objective >= exact.objective - 1e-6


def test_never_busy_enough_is_a_clear_error():
    with pytest.raises(ValueError, match="never 5000 jobs waiting"):
        trace_snapshot(workload=ITP, pending=5000)
