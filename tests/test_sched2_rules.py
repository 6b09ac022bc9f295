"""SCHED²: locality model, packing of Fig. 2, selection rules, evaluator, generator."""

from __future__ import annotations

import pytest

from dlsched import Instance, Job, RunningJob, homogeneous_cluster
from dlsched.heuristics.sched2 import packing, select
from dlsched.instance_io import check_instance
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.problems.sched2 import locality_profile, locality_slowdown, remote_peer_share
from dlsched.simulate import job_table, simulate
from dlsched.solve import solve
from dlsched.validate import evaluate, validate


def test_locality_matches_paper_sensitivities():
    # 4 GPUs split 2 + 2: c = 1 - (2 + 2) / 12 = 2/3 -> slowdown = S exactly
    assert remote_peer_share([2, 2]) == pytest.approx(2 / 3)
    for s in (5.9, 2.7, 1.6, 1.4):
        assert locality_slowdown(s, [2, 2]) == pytest.approx(s)
    assert locality_slowdown(5.9, [4]) == 1.0
    # one GPU per server: c = 1 -> 1 + (S - 1) * 1.5
    assert locality_slowdown(2.7, [1, 1, 1, 1]) == pytest.approx(1 + 1.7 * 1.5)
    # k = 4 profile of a 4-GPU job on 8-GPU servers: 1, 2, 4, 4 servers
    assert locality_profile(5.9, 4, 8) == pytest.approx((1.0, 5.9, 1 + 4.9 * 1.5, 1 + 4.9 * 1.5))


def test_packing_follows_fig2():
    # free GPUs per server: 3, 1, 5, 2
    free = [[0, 1, 2], [10], [20, 21, 22, 23, 24], [30, 31]]
    assert packing(free, 2) == [30, 31]  # fewest free that still fits 2: server 3 (2 free)
    assert packing(free, 1) == [10]  # server 1 (1 free)
    # 7 > 5: take all of the most-free server (2), then 2 more from server 3
    assert packing(free, 7) == [20, 21, 22, 23, 24, 30, 31]
    # 10: server 2 (5), then 5 left: none fits -> server 0 (3), then 2 left -> server 3
    assert packing(free, 10) == [20, 21, 22, 23, 24, 0, 1, 2, 30, 31]
    assert packing(free, 12) is None


def snapshot(jobs, running=(), time=100.0) -> Instance:
    """2 servers x 4 GPUs."""
    cluster = homogeneous_cluster(2, 4, gpu_type="g")
    return check_instance(Instance(problem="sched2", cluster=cluster, jobs=tuple(jobs),
                                   running=tuple(running), time=time, params={}))


JOBS = [
    Job(id="a", submit_time=0, num_gpus=4, duration=500, model="vgg16"),
    Job(id="b", submit_time=1, num_gpus=1, duration=300, model="inception3"),
    Job(id="c", submit_time=2, num_gpus=2, duration=100, model="transformer"),
    Job(id="d", submit_time=3, num_gpus=1, duration=200, model="deepspeech"),
]
BUSY = [RunningJob(job="r", gpus=("n0/g0", "n0/g1", "n1/g0"), remaining_s=50.0)]  # free 2 + 3


@pytest.mark.parametrize("rule, order", [
    ("fifo", ["a", "b"]),  # a: 4 GPUs over 3 + 1 -> placed, b fits the last GPU; c blocks
    ("sif", ["c", "d", "b"]),  # c (100) on n0's 2 free, d (200), b (300); a does not fit
    ("lrf", ["b", "d", "c"]),  # 1, 1, 2 GPUs; a (4) then blocks
    ("spf", ["c", "d", "b"]),  # products 200, 200 (c arrived first), 300, 2000
])
def test_rules_order(rule, order):
    inst = snapshot(JOBS, BUSY)
    decision, _ = select(inst, rule)
    assert [p.job for p in decision.placements] == order
    assert validate(inst, decision).ok


def test_saf_uses_actual_time():
    # both jobs take 2 GPUs, only 1 + 1 free on two servers: both would spread.
    # x: 100 s, vgg16 -> 100 * 5.9 * 1.5 ... with c = 1 for 1 + 1: 1 + 4.9 * 1.5 = 8.35 -> 835 s
    # y: 400 s, inception3 -> 1 + 0.4 * 1.5 = 1.6 -> 640 s  => SAF starts y, SIF would start x
    jobs = [Job(id="x", submit_time=0, num_gpus=2, duration=100, model="vgg16"),
            Job(id="y", submit_time=1, num_gpus=2, duration=400, model="inception3")]
    busy = [RunningJob(job="r", gpus=("n0/g0", "n0/g1", "n0/g2", "n1/g0", "n1/g1", "n1/g2"))]
    inst = snapshot(jobs, busy)
    assert [p.job for p in select(inst, "saf")[0].placements] == ["y"]
    assert [p.job for p in select(inst, "sif")[0].placements] == ["x"]


def test_dsif_delays_three_times_then_places():
    jobs = [Job(id="x", submit_time=0, num_gpus=2, duration=100, model="vgg16")]
    busy = [RunningJob(job="r", gpus=("n0/g0", "n0/g1", "n0/g2", "n1/g0", "n1/g1", "n1/g2"))]
    inst = snapshot(jobs, busy)
    state = None
    for expected in (1, 2, 3):
        decision, state = select(inst, "dsif", policy_state=state)
        assert decision.placements == () and state == {"x": expected}
    decision, state = select(inst, "dsif", policy_state=state)
    assert [p.job for p in decision.placements] == ["x"] and state == {}


def test_evaluator_by_hand():
    inst = snapshot(JOBS, BUSY)
    result = solve(inst, "fifo")
    # a on 3 + 1 GPUs: c = 1 - 6/12 = 1/2 -> slowdown 1 + 4.9 * (1/2) / (2/3) = 4.675;
    # b on one GPU: 1. Objective = 4 / 4.675 + 1
    assert result.objective == pytest.approx(4 / 4.675 + 1)
    assert evaluate(inst, result.decision) == pytest.approx(result.objective)


def test_generator_is_deterministic_and_matches_setting():
    a = generate_sched2(seed=5, jobs=2000)
    b = generate_sched2(seed=5, jobs=2000)
    assert a.sha256 == b.sha256
    assert a.cluster.num_gpus == 120 and a.cluster.num_nodes == 15
    single = sum(j.num_gpus == 1 for j in a.jobs) / len(a.jobs)
    assert single == pytest.approx(0.68, abs=0.03)
    gaps = [y.submit_time - x.submit_time for x, y in zip(a.jobs, a.jobs[1:], strict=False)]
    assert sum(gaps) / len(gaps) == pytest.approx(172, rel=0.1)


def cpu_bound_snapshot() -> Instance:
    """2 servers x 4 GPUs with 8 CPUs each; a 4-GPU job needing 3 CPUs per GPU (12 on one
    server: too many) and a 1-GPU job needing 8 GB of RAM per GPU."""
    cluster = homogeneous_cluster(2, 4, cpu=8.0, ram_gb=64.0)
    jobs = (Job(id="wide", submit_time=0.0, num_gpus=4, duration=100.0, cpu_per_gpu=3.0),
            Job(id="small", submit_time=1.0, num_gpus=1, duration=50.0, ram_gb_per_gpu=8.0))
    return Instance("sched2", cluster, jobs, time=1.0)


@pytest.mark.parametrize("method", ["fifo", "sif", "dsif", "saf", "lrf", "spf",
                                    "learned-priority"])
def test_packing_keeps_node_cpu_and_ram(method):
    snapshot = cpu_bound_snapshot()
    result = solve(snapshot, method)  # solve() validates: a CPU overrun is a MethodError
    assert validate(snapshot, result.decision).ok
    placed = {p.job: p.gpus for p in result.decision.placements}
    if method == "dsif":  # 2 servers where 1 is its best locality: delayed this round
        assert "wide" not in placed and result.extra["policy_state"] == {"wide": 1}
    else:  # packing alone would put "wide" on one server; its CPU share spreads it 2 + 2
        assert {g.split("/")[0] for g in placed["wide"]} == {"n0", "n1"}
    # CPU left: 2 per server, so "small" (no CPU share) still fits one of them
    assert len(placed["small"]) == 1


def test_simulated_fifo_keeps_node_cpu_with_or_without_its_fast_form():
    jobs = tuple(Job(id=f"j{i}", submit_time=float(i), num_gpus=4, duration=100.0,
                     cpu_per_gpu=3.0) for i in range(4))
    workload = Instance("sched2", homogeneous_cluster(2, 4, cpu=8.0), jobs)
    fast = job_table(simulate(workload, "fifo", record_events=False))
    full = job_table(simulate(workload, "fifo", check="full", record_events=False))
    assert fast[["job", "start", "end"]].equals(full[["job", "start", "end"]])
    # one job at a time: 12 CPUs of 16 in use, spread 2 + 2 GPUs over both servers
    assert fast["start"].tolist() == [0.0, 100.0, 200.0, 300.0]
    assert (fast["nodes"] == 2).all()
