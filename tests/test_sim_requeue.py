"""The simulator's requeue hook, PAB (Horus Sec. 5), the linear interference model and the
aggregate GPU-utilization / run-time metrics, on runs checked by hand."""

from __future__ import annotations

import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.decision import Decision
from dlsched.registry import _METHODS, MethodSpec
from dlsched.result import MethodOutput, Status
from dlsched.simulate import Policy, SimulationError, SpeedModel, job_table, simulate, summary

LINEAR = SpeedModel(interference="horus-linear")


def one_gpu(*jobs: Job) -> Instance:
    return Instance(problem="horus", cluster=homogeneous_cluster(1, 1, gpu_type="gtx1080"),
                    jobs=jobs, params={"w_mem": 1.0, "w_util": 1.0}, name="one-gpu")


def job(name: str, util: float, duration: float, submit: float = 0.0) -> Job:
    return Job(id=name, submit_time=submit, num_gpus=1, duration=duration, gpu_util=util,
               gpu_mem_gb=2.0)


def test_pab_requeues_a_job_whose_colocation_halves_its_speed():
    # One GPU, linear model. t=0: PAB places a (alone, speed 1), probe at 30 s. t=30: a is
    # still at speed 1, PAB places b with a: U = 200 %, both at 100/200 = 0.5. t=60: b's
    # probe sees 0.5 <= 0.5 x 1.0: b is requeued, its 15 s of progress lost, and may only
    # take idle GPUs now. a: 30 s at 1 + 30 s at 0.5 = 45 s done, 955 s left -> ends 1015.
    # b restarts alone at 1015 and runs its full 100 s -> 1115.
    w = one_gpu(job("a", 100, 1000), job("b", 100, 100))
    run = simulate(w, Policy("pab", options={"warmup_s": 30.0}), LINEAR)
    events = [e for e in run.events if e[1] != "arrive"]
    assert events == [(0.0, "start", "a"), (30.0, "start", "b"), (60.0, "requeue", "b"),
                      (1015.0, "complete", "a"), (1015.0, "start", "b"),
                      (1115.0, "complete", "b")]
    rec = {r.job.id: r for r in run.records}
    assert rec["b"].attempts == [(30.0, 60.0, (0,))]
    table = job_table(run).set_index("job")
    assert table.loc["b", "start"] == 1015.0 and table.loc["b", "requeues"] == 1
    s = summary(run)
    assert s["requeues"] == 1.0
    assert s["makespan"] == 1115.0
    assert s["jct_mean"] == pytest.approx((1015.0 + 1115.0) / 2)  # end - submit
    assert s["run_time_mean"] == pytest.approx((1015.0 + 100.0) / 2)  # end - start
    # GPU 0 holds >= 100 % from 0 to 1115: capped aggregate 1; uncapped adds the 100 %
    # extra of b's attempt over 30 s
    assert s["gpu_util_aggregate"] == pytest.approx(1.0)
    assert s["gpu_util_sum_mean"] == pytest.approx(1.0 + 30.0 / 1115.0)


def test_pab_keeps_a_colocation_that_costs_less_than_half():
    # 60 % + 60 %: U = 120 %, both at 100/120 = 0.83 > 0.5: nothing is requeued. a ends at
    # 30 + (1000 - 30) / (5/6) only until b finishes: b from 30 at 5/6 needs 120 s -> 150;
    # a has 30 + 100 = 130 done at 150, 870 left alone -> 1020.
    w = one_gpu(job("a", 60, 1000), job("b", 60, 100))
    s = summary(run := simulate(w, Policy("pab", options={"warmup_s": 30.0}), LINEAR))
    assert s["requeues"] == 0.0
    ends = {r.job.id: r.end for r in run.records}
    assert ends["b"] == pytest.approx(150.0) and ends["a"] == pytest.approx(1020.0)


def test_linear_interference_factor():
    # two 80 % jobs on one GPU: U = 160 %, each at 100/160; a 40 % pair is free
    w = one_gpu(job("a", 80, 100), job("b", 80, 100))
    run = simulate(w, "obp", LINEAR)
    assert [r.end for r in run.records] == pytest.approx([160.0, 160.0])
    w = one_gpu(job("a", 40, 100), job("b", 40, 100))
    assert [r.end for r in simulate(w, "obp", LINEAR).records] == pytest.approx([100, 100])


@pytest.fixture
def bad_requeuer():
    """A test method that requeues a job that is not running."""
    def run(instance, **_):
        return MethodOutput(decision=Decision(), status=Status.FEASIBLE,
                            extra={"requeue": ["nobody"]})
    key = ("horus", "test-requeue-bad")
    _METHODS[key] = MethodSpec("horus", "test-requeue-bad", "baseline", run)
    yield "test-requeue-bad"
    del _METHODS[key]


def test_an_invalid_requeue_stops_the_run(bad_requeuer):
    w = one_gpu(job("a", 50, 100))
    with pytest.raises(SimulationError, match="invalid requeue.*'nobody' does not exist"):
        simulate(w, bad_requeuer, LINEAR)


def test_schedule_check_counts_requeued_attempts():
    from dlsched.simulate.checks import check_schedule
    w = Instance(problem="sched2", cluster=homogeneous_cluster(1, 1, gpu_type="gpu"),
                 jobs=(Job(id="a", submit_time=0.0, num_gpus=1, duration=10.0, model="x"),
                       Job(id="b", submit_time=0.0, num_gpus=1, duration=10.0, model="x")),
                 params={"locality": {"x": 1.0}})
    run = simulate(w, "fifo")
    a, b = run.records
    assert check_schedule(run.records, w.cluster, True) == []
    b.attempts.append((5.0, 8.0, (0,)))  # an attempt while a held the exclusive GPU
    assert any("two jobs at once" in p for p in check_schedule(run.records, w.cluster, True))


def test_cli_accepts_the_linear_model(tmp_path, capsys):
    from dlsched.cli import main
    from dlsched.instance_io import save_instance
    path = tmp_path / "w.json"
    save_instance(one_gpu(job("a", 80, 100), job("b", 80, 100)), path)
    code = main(["simulate", str(path), "--policy", "pab", "--interference", "horus-linear",
                 "--no-plots", "--no-progress", "--out", str(tmp_path / "o")])
    assert code == 0
    out = capsys.readouterr().out
    assert "gpu_util_aggregate" in out and "run_time_mean" in out


@pytest.mark.parametrize("model", ["horus", "horus-linear"])
def test_pab_fast_and_full_checks_agree(model):
    # PAB on a W-Large mix (which does requeue under the fitted model): the fast live
    # checks and the full validator give the same per-job table, and the final schedule
    # check (attempts included) passes in both
    from dlsched.instances.horus_gen import generate_horus_workload
    w = generate_horus_workload(seed=1, preset="w-large", jobs=14)
    fast = simulate(w, "pab", SpeedModel(interference=model))
    full = simulate(w, "pab", SpeedModel(interference=model), check="full")
    assert job_table(fast).equals(job_table(full))
    assert fast.requeues == full.requeues
    if model == "horus":
        assert fast.requeues > 0


def test_pab_zero_warmup_judges_at_the_same_time():
    # warm-up 0: a is placed and judged at t = 0, then b joins it and is judged at t = 0
    # too (the engine re-calls the policy at the same time after a round that placed):
    # 0.5 <= 0.5, b is requeued with nothing lost, and runs alone after a (1000 -> 1100)
    w = one_gpu(job("a", 100, 1000), job("b", 100, 100))
    run = simulate(w, Policy("pab", options={"warmup_s": 0.0}), LINEAR)
    rec = {r.job.id: r for r in run.records}
    assert rec["b"].attempts == [(0.0, 0.0, (0,))]
    assert (rec["a"].end, rec["b"].start, rec["b"].end) == (1000.0, 1000.0, 1100.0)


def test_aggregate_utilization_equals_a_midpoint_sum():
    # independent computation: between consecutive event times, sum each GPU's job
    # utilizations at the midpoint from the records (attempts included), cap at 100 %
    import numpy as np

    from dlsched.instances.horus_gen import generate_horus_workload
    w = generate_horus_workload(seed=3, preset="w-large", jobs=12)
    run = simulate(w, "pab", SpeedModel(interference="horus"))
    spans = []
    for r in run.records:
        spans += [(a, b, g, r.job.gpu_util) for a, b, g in r.attempts]
        spans.append((r.start, r.end, tuple(r.gpus.tolist()), r.job.gpu_util))
    times = sorted({x for a, b, _, _ in spans for x in (a, b)})
    capped = raw = 0.0
    for t0, t1 in zip(times, times[1:], strict=False):
        mid = (t0 + t1) / 2
        level = np.zeros(w.cluster.num_gpus)
        for a, b, gpus, u in spans:
            if a <= mid < b:
                level[list(gpus)] += u
        capped += np.minimum(level, 100.0).sum() * (t1 - t0)
        raw += level.sum() * (t1 - t0)
    norm = w.cluster.num_gpus * (times[-1] - times[0]) * 100.0
    s = summary(run)
    assert s["gpu_util_aggregate"] == pytest.approx(capped / norm)
    assert s["gpu_util_sum_mean"] == pytest.approx(raw / norm)


def test_pab_default_warmup_is_sixty_seconds():
    # 2 idle GPUs, a and b at t = 0. Serial PAB places a (both GPUs hold 8 GB free: the
    # lower index, g0) and places nothing else until a's probe at the default 60 s, where
    # a runs alone at speed 1 (kept); then b takes g1 at t = 60.
    w = Instance(problem="horus", cluster=homogeneous_cluster(1, 2, gpu_type="gtx1080"),
                 jobs=(job("a", 50, 1000), job("b", 50, 1000)),
                 params={"w_mem": 1.0, "w_util": 1.0}, name="two-gpus")
    run = simulate(w, Policy("pab"), LINEAR)
    starts = [e for e in run.events if e[1] == "start"]
    assert starts == [(0.0, "start", "a"), (60.0, "start", "b")]


def test_greedy_starts_every_fitting_job_at_once_with_a_small_buffer():
    # 2 GPUs, two 5 GB jobs at t = 0, k = 1, beta = 1. Alg. 1 refills its buffer in the
    # same call: both start at 0. One buffer per call (refill = false): b waits for the
    # next event, a's completion at 100 s.
    w = Instance(problem="horus", cluster=homogeneous_cluster(1, 2, gpu_type="gtx1080"),
                 jobs=(job("a", 50, 100).replace(gpu_mem_gb=5.0),
                       job("b", 50, 300).replace(gpu_mem_gb=5.0)),
                 params={"w_mem": 1.0, "w_util": 1.0, "beta": 1, "queues": 1}, name="beta1")
    starts = {e[2]: e[0] for e in simulate(w, Policy("greedy"), LINEAR).events
              if e[1] == "start"}
    assert starts == {"a": 0.0, "b": 0.0}
    one = simulate(w, Policy("greedy", options={"refill": False}), LINEAR)
    assert {e[2]: e[0] for e in one.events if e[1] == "start"} == {"a": 0.0, "b": 100.0}
