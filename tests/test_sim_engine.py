"""Simulator: hand-checked event sequences and metrics, errors that name policy and time."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.decision import Decision, Placement
from dlsched.registry import _METHODS, MethodSpec
from dlsched.result import MethodOutput, Status
from dlsched.simulate import Policy, SimulationError, SpeedModel, job_table, simulate, summary
from dlsched.simulate.results import gantt_bars, jct_cdf, save_results


def sched2_tiny() -> Instance:
    """2 servers x 2 GPUs; models a (S = 2) and b (S = 3); FIFO + packing by hand below."""
    jobs = (
        Job(id="j0", submit_time=0.0, num_gpus=1, duration=100.0, model="a"),
        Job(id="j1", submit_time=0.0, num_gpus=2, duration=50.0, model="a"),
        Job(id="j2", submit_time=10.0, num_gpus=3, duration=60.0, model="b"),
        Job(id="j3", submit_time=20.0, num_gpus=1, duration=30.0, model="a"),
    )
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 2, gpu_type="gpu"),
                    jobs=jobs, params={"locality": {"a": 2.0, "b": 3.0}}, name="tiny")


def test_sched2_fifo_events_and_metrics_by_hand(tmp_path):
    run = simulate(sched2_tiny(), "fifo")
    # t=0: j0 -> server n0 (both servers have 2 free: tie -> first), j1 -> n1 (only server
    #      with 2 free after j0). t=10: j2 (3 GPUs) arrives, 1 GPU free: policy not called.
    # t=20: j3 arrives; FIFO blocks on j2 (3 > 1 free). t=50: j1 ends; j2 packs 2 on n1
    #      (most free) + 1 on n0: c = 1 - (2*1)/(3*2) = 2/3 -> slowdown 1 + (3-1) = 3,
    #      run 60 * 3 = 180 -> ends 230; j3 blocked (0 free). t=100: j0 ends, j3 starts,
    #      ends 130.
    expected = [
        (0.0, "arrive", "j0"), (0.0, "arrive", "j1"), (0.0, "start", "j0"),
        (0.0, "start", "j1"), (10.0, "arrive", "j2"), (20.0, "arrive", "j3"),
        (50.0, "complete", "j1"), (50.0, "start", "j2"), (100.0, "complete", "j0"),
        (100.0, "start", "j3"), (130.0, "complete", "j3"), (230.0, "complete", "j2"),
    ]
    assert [e[1:] for e in run.events] == [e[1:] for e in expected]
    assert [e[0] for e in run.events] == pytest.approx([e[0] for e in expected], abs=1e-9)
    table = job_table(run).set_index("job")
    assert set(table.loc["j2", "gpus"].split()) == {"n0/g1", "n1/g0", "n1/g1"}
    assert table.loc["j2", "locality_slowdown"] == pytest.approx(3.0)
    assert table.loc["j2", "nodes"] == 2
    assert list(table["wait"]) == [0.0, 0.0, 40.0, 80.0]
    assert list(table["jct"]) == pytest.approx([100.0, 50.0, 220.0, 110.0])
    s = summary(run, table.reset_index())
    assert s["makespan"] == pytest.approx(230.0)
    assert s["jct_mean"] == pytest.approx(120.0)  # (100 + 50 + 220 + 110) / 4
    assert s["wait_mean"] == pytest.approx(30.0)  # (0 + 0 + 40 + 80) / 4
    # E = ideal / (wait + run): 1, 1, 60 / (40 + 180), 30 / (80 + 30)
    assert s["effectiveness_mean"] == pytest.approx((2 + 60 / 220 + 30 / 110) / 4)
    # busy GPUs: 3 on [0,50), 4 on [50,130), 3 on [130,230) -> 770 of 4 * 230 GPU-seconds
    assert s["gpu_utilization"] == pytest.approx(770 / 920)
    # fragmentation (Eq. 1) at t=0: n0 = [100, 0] -> 1 - 100^2 / (2 * 100^2) = 0.5,
    # n1 = [50, 50] -> 0; mean 0.25. At t=50: n0 = [50, 180] -> 1 - 230^2 / (2 * 34900),
    # n1 = [180, 180] -> 0.
    frag = dict(zip(run.frag_t, run.frag, strict=True))
    assert frag[0.0] == pytest.approx(0.25)
    assert frag[50.0] == pytest.approx((1 - 230**2 / (2 * (50**2 + 180**2))) / 2)
    # results and plot data
    saved = save_results(run, tmp_path, plots=True)
    assert saved["makespan"] == pytest.approx(230.0)
    assert (tmp_path / "jobs.csv").exists() and (tmp_path / "gantt.png").exists()
    cdf = jct_cdf(table)
    assert list(cdf["jct"]) == pytest.approx([50.0, 100.0, 110.0, 220.0])
    assert list(cdf["cdf"]) == [0.25, 0.5, 0.75, 1.0]
    bars = gantt_bars(run)
    assert len(bars) == 1 + 2 + 3 + 1  # one bar per (job, GPU)
    assert set(bars[bars["job"] == "j3"]["start"]) == {100.0}


def f1080(x: float) -> float:
    """Horus GTX 1080 fit: linear through 0 up to 100 % (slope = quadratic(1)), else quadratic."""
    slope = 1.32198 - 0.00728 + 6e-5  # = 1.31476
    return slope * x if x <= 1 else 1.32198 * x * x - 0.00728 * x + 6e-5


def test_horus_interference_rates_by_hand():
    cluster = homogeneous_cluster(1, 1, gpu_mem_gb=8.0)
    jobs = (
        Job(id="h0", submit_time=0.0, num_gpus=1, duration=100.0, gpu_util=50.0, gpu_mem_gb=2.0),
        Job(id="h1", submit_time=0.0, num_gpus=1, duration=100.0, gpu_util=50.0, gpu_mem_gb=2.0),
        Job(id="h2", submit_time=50.0, num_gpus=1, duration=10.0, gpu_util=20.0, gpu_mem_gb=2.0),
    )
    w = Instance(problem="horus", cluster=cluster, jobs=jobs, params={})
    run = simulate(w, "obp", SpeedModel(interference="horus"))
    # h0, h1 share the GPU: U = 1.0, factor (1 + f(.5)) / (1 + f(1)) each
    r_pair = (1 + f1080(0.5)) / (1 + f1080(1.0))
    assert r_pair == pytest.approx(1.65738 / 2.31476)
    left = 100 - 50 * r_pair  # h0/h1 work left at t=50
    # t=50: h2 joins, U = 1.2
    r_big = (1 + f1080(0.5)) / (1 + f1080(1.2))
    r_h2 = (1 + f1080(0.2)) / (1 + f1080(1.2))
    end_h2 = 50 + 10 / r_h2
    left -= (end_h2 - 50) * r_big  # h0/h1 slowed until h2 leaves, then back to r_pair
    end_pair = end_h2 + left / r_pair
    table = job_table(run).set_index("job")
    assert table.loc["h2", "end"] == pytest.approx(end_h2, rel=1e-12)
    assert table.loc["h0", "end"] == pytest.approx(end_pair, rel=1e-12)
    assert table.loc["h1", "end"] == pytest.approx(end_pair, rel=1e-12)
    assert [e[1:] for e in run.events if e[1] == "complete"] == [
        ("complete", "h2"), ("complete", "h0"), ("complete", "h1")]


def test_gpu_speed_scales_rate():
    cluster = homogeneous_cluster(1, 1, gpu_type="gpu")
    cluster = type(cluster).from_dict({"nodes": [{**cluster.to_dict()["nodes"][0],
                                                  "gpus": [{"id": "g", "type": "gpu",
                                                            "mem_gb": 8, "speed": 0.5}]}]})
    w = Instance(problem="sched2", cluster=cluster, params={},
                 jobs=(Job(id="a", num_gpus=1, duration=10.0, model="vgg16"),))
    run = simulate(w, "fifo")
    assert run.records[0].end == 20.0  # 10 s of work at half speed


def _register(monkeypatch, name, fn):

    spec = MethodSpec("sched2", name, "heuristic",
                      lambda inst, **kw: MethodOutput(fn(inst), Status.FEASIBLE))
    monkeypatch.setitem(_METHODS, ("sched2", name), spec)


def test_invalid_decision_names_policy_and_time(monkeypatch):
    # at t=0 both j0 and j1 are put on the same GPU: exclusivity violated
    _register(monkeypatch, "broken", lambda inst: Decision.of(
        Placement(j.id, tuple(f"n0/g{k}" for k in range(j.num_gpus)))
        for j in inst.jobs))
    with pytest.raises(SimulationError, match=r"(?s)policy 'broken' at t = 0 s .*exclusive"):
        simulate(sched2_tiny(), "broken")
    with pytest.raises(SimulationError, match=r"policy 'broken' at t = 0 s"):
        simulate(sched2_tiny(), Policy("broken", via_solve=True))


def test_stall_is_an_error(monkeypatch):
    _register(monkeypatch, "idle", lambda inst: Decision())
    with pytest.raises(SimulationError, match="left 4 jobs pending"):
        simulate(sched2_tiny(), "idle")


def test_job_larger_than_cluster_is_an_error():
    w = sched2_tiny()
    w = w.replace(jobs=(*w.jobs, Job(id="big", num_gpus=8, duration=5.0, model="a")))
    with pytest.raises(SimulationError, match="does every job fit"):
        simulate(w, "fifo")


def test_batch_policy_only_acts_at_wakeups():
    run = simulate(sched2_tiny(), Policy("fifo", interval=25.0, batch_only=True))
    table = job_table(run).set_index("job")
    # wake-ups at 0, 25, 50, ...: j0/j1 start at 0; j1 ends 50 and j2 starts at the wake 50
    assert table.loc["j0", "start"] == 0.0 and table.loc["j2", "start"] == 50.0
    # j0 ends at 100 = a wake-up, so j3 starts then too
    assert table.loc["j3", "start"] == 100.0
    assert not math.isnan(table.loc["j2", "end"])


def test_seeded_snapshot_caches_equal_fresh_computation(monkeypatch):
    """The engine's fast path seeds derived loads; they must equal what Instance computes."""
    import numpy as np

    from dlsched.simulate import engine as eng
    seen = []
    original = eng._Engine._snapshot

    def spy(self, t):
        snap = original(self, t)
        fresh = snap.replace()  # a copy without the seeded caches
        assert np.array_equal(snap.gpu_busy, fresh.gpu_busy)
        for a, b in zip(snap.gpu_usage + snap.node_usage,
                        fresh.gpu_usage + fresh.node_usage, strict=True):
            assert np.allclose(a, b, atol=1e-9)
        assert snap.job_index == fresh.job_index
        assert snap.idle_by_server == fresh.idle_by_server
        for name, fill in (("gpu_mem_gb", 0.0), ("num_gpus", np.nan), ("submit_time", np.nan),
                           ("cpu_per_gpu", np.nan)):
            a, b = snap.job_columns(name, fill), fresh.job_columns(name, fill)
            assert a.tobytes() == b.tobytes() and len(a) == len(snap.jobs)
        seen.append(t)
        return snap

    monkeypatch.setattr(eng._Engine, "_snapshot", spy)
    rng = np.random.default_rng(7)
    jobs = tuple(Job(id=f"h{i:02d}", submit_time=float(i * 20), num_gpus=int(rng.choice([1, 2])),
                     duration=float(rng.integers(30, 200)), gpu_util=float(rng.integers(10, 90)),
                     gpu_mem_gb=float(rng.integers(1, 5)), cpu_per_gpu=2.0, ram_gb_per_gpu=4.0)
                 for i in range(30))
    w = Instance(problem="horus", cluster=homogeneous_cluster(2, 2, gpu_mem_gb=8.0), jobs=jobs,
                 params={})
    # greedy with β: a snapshot method (OBP and greedy without β are view forms)
    simulate(w, Policy("greedy", options={"beta": 8}), SpeedModel(interference="horus"))
    simulate(sched2_tiny(), "fifo")
    assert len(seen) > 10


def test_simulate_takes_a_path_and_prints_a_summary():
    path = Path(__file__).resolve().parents[1] / "instances" / "workloads" / \
        "itp-cluster07-d25-26.json.gz"
    run = simulate(str(path), "fifo", record_events=False)
    text = repr(run)
    assert text.startswith("SimRun(workload='itp-cluster07-d25-26', policy='fifo', jobs=218")
    assert len(text) < 300  # a summary, not the arrays
