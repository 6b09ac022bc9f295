"""SCHED² snapshots: only submitted jobs start (issue 32, item 3), the knapsack bound
against a brute force, snapshots cut from generated workloads, and the library's entries."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from dlsched import Instance, Job, RunningJob, homogeneous_cluster
from dlsched.decision import Decision, Placement
from dlsched.instance_io import check_instance
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.instances.trace_snapshots import generated_snapshot
from dlsched.problems import get_problem
from dlsched.problems.sched2 import effective_gpus_bound
from dlsched.solve import solve
from dlsched.validate import evaluate, validate

METHODS = ("fifo", "sif", "dsif", "saf", "lrf", "spf", "learned-priority")


def snapshot(jobs, running=(), time=100.0) -> Instance:
    """2 servers x 4 GPUs."""
    cluster = homogeneous_cluster(2, 4, gpu_type="g")
    return check_instance(Instance(problem="sched2", cluster=cluster, jobs=tuple(jobs),
                                   running=tuple(running), time=time, params={}))


def test_the_validator_refuses_a_start_before_submission():
    inst = snapshot([Job(id="now", submit_time=100.0, num_gpus=1, duration=60.0),
                     Job(id="later", submit_time=100.5, num_gpus=1, duration=60.0)])
    ok = Decision((Placement("now", ("n0/g0",), start=100.0),))
    assert validate(inst, ok).ok
    early = Decision((Placement("later", ("n0/g1",), start=100.0),))
    report = validate(inst, early)
    assert report.kinds == {"release"} and "submitted at 100.5" in str(report)
    untimed = Decision((Placement("later", ("n0/g1",)),))
    assert validate(inst, untimed).kinds == {"release"}


@pytest.mark.parametrize("method", METHODS)
def test_methods_on_a_whole_workload_start_only_the_jobs_already_submitted(method):
    workload = generate_sched2(seed=3, jobs=12, servers=2, gpus_per_server=4,
                               interarrival=30.0)
    inst = workload.replace(time=60.0)
    result = solve(inst, method=method)
    decision = result.decision
    assert validate(inst, decision).ok
    submitted = {j.id for j in inst.jobs if j.submit_time <= 60.0}
    assert 0 < len(submitted) < len(inst.jobs)
    assert decision.placements and {p.job for p in decision.placements} <= submitted


def _brute_force(inst: Instance) -> float:
    """Best effective GPUs over every assignment of idle GPU sets to the submitted jobs.

    The objective is a sum over placements (SCHED²'s effective GPUs), so the best of the
    jobs from ``i`` on with GPUs ``left`` idle is computed once per (i, left) state, each
    placement scored by the objective alone. The best assignment is then validated and
    re-scored whole by :func:`evaluate` (an invalid best would fail here, so the maximum
    is over valid decisions, and every valid decision is one of the assignments)."""
    idle = [g for g, busy in zip(inst.cluster.gpu_ids, inst.gpu_busy, strict=True) if not busy]
    jobs = [j for j in inst.jobs if j.submit_time <= inst.time]
    objective = get_problem("sched2").evaluate

    @functools.cache
    def best(i: int, left: tuple[str, ...]) -> tuple[float, tuple[Placement, ...]]:
        if i == len(jobs):
            return 0.0, ()
        out = best(i + 1, left)
        for gpus in itertools.combinations(left, jobs[i].num_gpus):
            placement = Placement(jobs[i].id, gpus)
            rest = tuple(g for g in left if g not in gpus)
            value, chosen = best(i + 1, rest)
            value += objective(inst, Decision((placement,)))
            if value > out[0]:
                out = value, (placement, *chosen)
        return out

    value, chosen = best(0, tuple(idle))
    best_decision = Decision(chosen)
    assert validate(inst, best_decision).ok
    assert evaluate(inst, best_decision) == pytest.approx(value, abs=1e-12)
    return value


def _random_snapshot(rng: np.random.Generator) -> Instance:
    models = ("vgg16", "transformer", "resnet50", "deepspeech")
    busy = rng.choice(8, size=int(rng.integers(0, 5)), replace=False)
    gpus = tuple(f"n{g // 4}/g{g % 4}" for g in sorted(busy))
    running = (RunningJob(job="r", gpus=gpus, remaining_s=10.0),) if gpus else ()
    jobs = [Job(id=f"j{i}", submit_time=float(rng.integers(0, 120)),
                num_gpus=int(rng.choice([1, 2, 3, 4, 6])), duration=100.0,
                model=str(rng.choice(models))) for i in range(4)]
    return snapshot(jobs, running)


def test_the_knapsack_bound_never_cuts_off_the_brute_force_optimum():
    rng = np.random.default_rng(7)
    tight = 0
    for _ in range(40):
        inst = _random_snapshot(rng)
        optimum = _brute_force(inst)
        bound = effective_gpus_bound(inst)
        assert bound >= optimum - 1e-9
        tight += abs(bound - optimum) <= 1e-9
        for method in METHODS:
            assert evaluate(inst, solve(inst, method=method).decision) <= bound + 1e-9
    assert tight >= 20  # a bound, but not a trivial one: most small cases are proven


def test_the_bound_by_hand():
    # idle: n0 has 1 GPU, n1 has 4. Best: a (4 GPUs packed on n1, slowdown 1) + c (n0's
    # GPU) = 5; "late" is not submitted, and b + c (3) is worth less.
    running = (RunningJob(job="r", gpus=("n0/g0", "n0/g1", "n0/g2"), remaining_s=9.0),)
    jobs = [Job(id="a", submit_time=0, num_gpus=4, duration=10, model="vgg16"),
            Job(id="b", submit_time=0, num_gpus=2, duration=10, model="transformer"),
            Job(id="c", submit_time=0, num_gpus=1, duration=10, model="alexnet"),
            Job(id="late", submit_time=500, num_gpus=1, duration=10)]
    inst = snapshot(jobs, running)
    assert effective_gpus_bound(inst) == pytest.approx(5.0)  # a on n1, c on n0
    assert get_problem("sched2").snapshot_bound(inst) == pytest.approx(5.0)


def test_a_snapshot_cut_from_a_generated_workload():
    # 120 jobs at twice the arrival rate still hold such a moment; the refused search
    # replays the whole workload, which for 300 jobs cost 0.19 CPU-s of the test's 0.25
    kwargs = dict(seed=0, generator="sched2",
                  arguments={"jobs": 120, "interarrival": 60}, pending=6, free=8)
    inst = generated_snapshot(**kwargs)
    assert len(inst.jobs) == 6 and inst.running
    assert all(j.submit_time <= inst.time for j in inst.jobs)
    assert int((~inst.gpu_busy).sum()) >= 8
    assert generated_snapshot(**kwargs).sha256 == inst.sha256
    with pytest.raises(ValueError, match="never 6 jobs waiting and 200 GPUs idle"):
        generated_snapshot(**{**kwargs, "free": 200})


@pytest.mark.parametrize("suite", ["quick", "paper"])
def test_library_sched2_entries_are_real_snapshots_with_bounds(suite):
    from dlsched.benchmarks.library import load_manifest, verify

    manifest = load_manifest(suite)
    names = [n for n, rec in manifest.entries.items() if rec["problem"] == "sched2"]
    assert names
    for name in names:
        inst = manifest.load(name)
        assert inst.running and all(j.submit_time <= inst.time for j in inst.jobs)
        best = manifest.best(name)
        bound = effective_gpus_bound(inst)
        assert best["bound"] == pytest.approx(bound)
        assert best["objective"] <= bound + 1e-9
        assert best["objective"] < inst.cluster.num_gpus / 2  # not the trivial 120
    checked, failures = verify(suite)
    assert failures == []
