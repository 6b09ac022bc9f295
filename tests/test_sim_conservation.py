"""Conservation checks on random workloads: arrivals, capacity, completion, utilization."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.simulate import SpeedModel, job_table, simulate, summary
from dlsched.simulate.metrics import utilization_series


def _max_overlap(intervals: list[tuple[float, float, float]]) -> float:
    """Largest sum of weights of [start, end) intervals alive at one time."""
    points = sorted([(s, 1, w) for s, _, w in intervals] + [(e, 0, -w) for _, e, w in intervals])
    load = best = 0.0
    for _, _, w in points:  # ends (0) sort before starts (1) at equal times
        load += w
        best = max(best, load)
    return best


def _check(run, *, exclusive: bool, mem: dict[str, float] | None = None) -> None:
    w = run.workload
    table = job_table(run)
    assert table["end"].notna().all()
    assert (table["start"] >= table["submit"] - 1e-9).all()
    assert (table["run"] >= table["ideal"] - 1e-6).all()  # rates never exceed 1 here
    completes = [job for _, kind, job in run.events if kind == "complete"]
    assert sorted(completes) == sorted(j.id for j in w.jobs)  # each job exactly once
    starts = [job for _, kind, job in run.events if kind == "start"]
    assert len(starts) == len(set(starts)) == len(w.jobs)
    per_gpu: dict[str, list] = {}
    for _, r in table.iterrows():
        for g in r["gpus"].split():
            weight = 1.0 if exclusive else mem[r["job"]]
            per_gpu.setdefault(g, []).append((r["start"], r["end"], weight))
    cap = 1.0 if exclusive else float(w.cluster.gpu_mem_gb.max())
    for g, intervals in per_gpu.items():
        assert _max_overlap(intervals) <= cap + 1e-9, g
    util = utilization_series(run)
    assert (util["utilization"] <= 1.0).all() and (util["busy_gpus"] >= 0).all()
    s = summary(run, table)
    assert 0.0 < s["gpu_utilization"] <= 1.0
    assert 0.0 <= s["fragmentation_mean"] <= 1.0
    assert 0.0 < s["effectiveness_mean"] <= 1.0


@pytest.mark.parametrize("rule", ["fifo", "sif", "dsif", "saf", "lrf", "spf"])
@pytest.mark.parametrize("seed", [0, 1])
def test_sched2_rules_conserve(rule, seed):
    w = generate_sched2(seed=seed, jobs=80, servers=3, gpus_per_server=4, interarrival=60.0,
                        median_duration=300.0)
    _check(simulate(w, rule), exclusive=True)


def horus_workload(seed: int, n: int = 40) -> Instance:
    rng = np.random.default_rng(seed)
    jobs = tuple(
        Job(id=f"h{i:02d}", submit_time=float(np.round(rng.uniform(0, 600), 1)),
            num_gpus=int(rng.choice([1, 1, 2, 4])), duration=float(rng.integers(30, 400)),
            gpu_util=float(rng.integers(10, 90)), gpu_mem_gb=float(rng.integers(1, 6)),
            cpu_per_gpu=2.0, ram_gb_per_gpu=8.0)
        for i in range(n))
    jobs = tuple(sorted(jobs, key=lambda j: j.submit_time))
    return Instance(problem="horus", cluster=homogeneous_cluster(2, 4, gpu_mem_gb=8.0),
                    jobs=jobs, params={"beta": 6})


@pytest.mark.parametrize("method", ["greedy", "fifo", "obp"])
def test_horus_policies_conserve_with_interference(method):
    w = horus_workload(3)
    run = simulate(w, method, SpeedModel(interference="horus"))
    _check(run, exclusive=method == "fifo", mem={j.id: j.gpu_mem_gb for j in w.jobs})


def test_locality_and_interference_together():
    w = horus_workload(4, 25)
    w = w.replace(jobs=tuple(j.replace(model="vgg16") for j in w.jobs))
    run = simulate(w, "obp", SpeedModel(locality="sched2", interference="horus"))
    _check(run, exclusive=False, mem={j.id: j.gpu_mem_gb for j in w.jobs})


GENIE_POLICIES = ("swaf", "fifo", "capacity", "minmin", "wfair", "tetris-perf", "tetris-cer")


@pytest.mark.parametrize("method", [*GENIE_POLICIES, "exact"])
def test_genie_policies_plug_in_with_latency_model(method):
    from dlsched.instances.genie_gen import generate_genie_workload
    from dlsched.problems.genie import parse_genie_params, task_of
    from dlsched.problems.genie.model import Shape, latency
    from dlsched.simulate import Policy
    # the paper's 4 x 4 platform: Capacity's per-model shares (16 GPUs / 6 models) are >= 1
    w = generate_genie_workload(seed=1, nodes=4, gpus_per_node=4, density=6.0, duration=2.0)
    coef = parse_genie_params(w.params).coefficients
    policy = Policy(method, backend="highs", time_limit=20.0) if method == "exact" else method
    run = simulate(w, policy)
    table = job_table(run)
    _check_exclusive_genie(run, table)
    for rec in run.records:  # alone on its GPUs, a task runs exactly Lat(t, s)
        counts = np.unique(w.cluster.gpu_node[rec.gpus], return_counts=True)[1]
        lat = latency(coef[rec.job.model], task_of(rec.job), Shape(len(counts), counts[0]))
        assert rec.end - rec.start == pytest.approx(lat, rel=1e-9)
    assert 0.0 <= summary(run, table)["qos_guarantee_pct"] <= 100.0


def _check_exclusive_genie(run, table):
    assert table["end"].notna().all() and (table["start"] >= table["submit"] - 1e-9).all()
    per_gpu: dict[str, list] = {}
    for _, r in table.iterrows():
        for g in r["gpus"].split():
            per_gpu.setdefault(g, []).append((r["start"], r["end"], 1.0))
    assert all(_max_overlap(v) <= 1.0 for v in per_gpu.values())


def test_exact_snapshot_model_as_per_event_policy(backend):
    from dlsched.simulate import Policy
    w = horus_workload(5, 6)
    run = simulate(w, Policy("exact", backend=backend, time_limit=20.0),
                   SpeedModel(interference="horus"))
    _check(run, exclusive=False, mem={j.id: j.gpu_mem_gb for j in w.jobs})
    assert run.events_without_solution == 0
