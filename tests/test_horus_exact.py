"""The exact Horus models against brute-force enumeration, on every backend."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dlsched import Decision, Placement, solve, validate
from dlsched.instances.horus_gen import generate_horus
from dlsched.problems import get_problem
from dlsched.result import Status


def brute_force_optimum(instance) -> float:
    """Minimum evaluator objective over every feasible decision (each job: wait or any
    set of exactly its number of GPUs)."""
    gpus = instance.cluster.gpu_ids
    options = []
    for job in instance.jobs:
        options.append([None, *itertools.combinations(gpus, job.num_gpus)])
    problem = get_problem(instance.problem)
    best = float("inf")
    for combo in itertools.product(*options):
        decision = Decision.of(Placement(job.id, choice)
                               for job, choice in zip(instance.jobs, combo, strict=True)
                               if choice is not None)
        if validate(instance, decision).ok:
            best = min(best, problem.evaluate(instance, decision))
    return best


def tiny_instance(seed: int, cost_model: str):
    """2-4 GPUs, 2-4 jobs, tight CPU so that every constraint family can bind.

    Colocation instances use one server with more jobs than GPUs, so that the optimum
    often stacks two new jobs on a GPU, where the two cost models differ.
    """
    if cost_model == "colocation":
        rng = np.random.default_rng(2000 + seed)
        return generate_horus(seed=seed, nodes=1, gpus_per_node=2, beta=int(rng.integers(3, 5)),
                              busy=float(rng.choice([0.0, 0.5])), cpu=64.0, ram_gb=64.0,
                              cost_model=cost_model)
    rng = np.random.default_rng(1000 + seed)
    nodes = int(rng.integers(1, 3))
    return generate_horus(
        seed=seed, nodes=nodes, gpus_per_node=2, beta=int(rng.integers(2, 5)) if nodes == 1
        else int(rng.integers(2, 4)), busy=float(rng.choice([0.0, 0.5, 1.0])),
        p_heavy=0.6, cpu=float(rng.choice([6.0, 8.0, 64.0])), ram_gb=64.0,
        cost_model=cost_model)


PAPER_SEEDS = range(50)
COLOCATION_SEEDS = range(30)


@pytest.fixture(scope="module")
def optima() -> dict[tuple[str, int], float]:
    """Brute-force optimum per (cost model, seed), computed once for all backends."""
    out = {}
    for model, seeds in (("paper", PAPER_SEEDS), ("colocation", COLOCATION_SEEDS)):
        for seed in seeds:
            out[model, seed] = brute_force_optimum(tiny_instance(seed, model))
    return out


@pytest.mark.parametrize("cost_model,seeds", [("paper", PAPER_SEEDS),
                                               ("colocation", COLOCATION_SEEDS)])
def test_exact_matches_brute_force(backend, cost_model, seeds, optima):
    for seed in seeds:
        instance = tiny_instance(seed, cost_model)
        result = solve(instance, "exact", backend=backend, time_limit=30)
        assert result.status is Status.OPTIMAL, (seed, result.message)
        assert validate(instance, result.decision).ok
        assert result.objective == pytest.approx(optima[cost_model, seed], abs=1e-6), seed
        assert result.bound <= result.objective + 1e-6


def test_colocation_instances_do_stack_jobs(optima):
    """Guard the brute-force suite itself: some colocation optima differ from the paper's
    cost, so the round-aware term is really exercised."""
    from dlsched.instance import Instance

    differs = 0
    for seed in COLOCATION_SEEDS:
        coloc: Instance = tiny_instance(seed, "colocation")
        paper = coloc.replace(params={**coloc.params, "cost_model": "paper"})
        differs += optima["colocation", seed] > brute_force_optimum(paper) + 1e-9
    assert differs >= 5


def test_colocation_model_rejects_fractional_utilization():
    instance = generate_horus(seed=0, nodes=1, gpus_per_node=2, beta=2, busy=0.0,
                              cost_model="colocation")
    jobs = (instance.jobs[0].replace(gpu_util=33.5), *instance.jobs[1:])
    result = solve(instance.replace(jobs=jobs), "exact", backend="cbc", time_limit=10)
    assert result.status is Status.INVALID_INPUT
    assert "whole-percent" in result.message


def test_all_unplaceable_gives_empty_optimal_decision(backend):
    instance = generate_horus(seed=2, nodes=1, gpus_per_node=2, beta=2, busy=0.0)
    huge = tuple(j.replace(gpu_mem_gb=100.0) for j in instance.jobs)
    instance = instance.replace(jobs=huge)
    result = solve(instance, "exact", backend=backend, time_limit=10)
    assert result.status is Status.OPTIMAL
    assert result.decision.placements == ()
    penalty_per_gpu = brute_force_optimum(instance) / sum(j.num_gpus for j in huge)
    assert result.objective == pytest.approx(penalty_per_gpu * sum(j.num_gpus for j in huge))


def test_model_export_writes_mps_and_lp(tmp_path):
    from dlsched.registry import get_method

    instance = tiny_instance(3, "paper")
    export = get_method("horus", "exact").export
    export(instance, tmp_path / "m.mps", "mps")
    export(instance, tmp_path / "m.lp", "lp")
    assert "ROWS" in (tmp_path / "m.mps").read_text()
    assert "Minimize" in (tmp_path / "m.lp").read_text()
