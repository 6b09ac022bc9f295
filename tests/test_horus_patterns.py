"""The pattern form of the exact Horus model (``form="patterns"``) against brute force,
on every backend; the default form is tested in test_horus_exact.py."""

from __future__ import annotations

import pytest
from test_horus_exact import (
    COVERING,
    brute_force_optimum,
    cached_brute_force,
    cached_optimum,
    cpu_bound_instance,
    tiny_instance,
)

from dlsched import solve, validate
from dlsched.instances.horus_gen import generate_horus
from dlsched.result import Status

# subsets of test_horus_exact's seeds: their brute-force optima are computed once. Paper:
# CPU alone binds at 0 1 3, GPU memory alone at 5, both at 2, neither at 4 6 7;
# colocation: GPU memory binds at 2 4, the optimum stacks jobs at 1 4 7, neither at 0
# (test_the_kept_seeds_bind_every_family; 15 + 10 seeds before: 1.5x the solves)
PAPER_SEEDS = range(8)
COLOCATION_SEEDS = (0, 1, 2, 4, 7)
# 0-2: one per job size pattern; 3-5 repeated those sizes (and pattern counts) with other
# costs, which the pair form's full model and certificate tests in test_horus_exact
# still run on all six
CPU_SEEDS = range(3)
TWIN_SEEDS = range(8)


def twin_instance(seed: int, cost_model: str):
    """One server of 4 GPUs, half idle or all idle: classes of 2-4 interchangeable GPUs
    (integer counts), with more jobs than the idle GPUs so that jobs stack."""
    return generate_horus(seed=seed, nodes=1, gpus_per_node=4, beta=3,
                          busy=0.5 if seed % 2 else 0.0, cpu=64.0, ram_gb=64.0,
                          cost_model=cost_model)


# Every case on CP-SAT and on HiGHS (the CP-SAT layer's pattern model and the PuLP one,
# which CBC and SCIP share with HiGHS); CBC and SCIP, whose own parts are the solver's
# call and the reading of its answer, run a covering subset (two fifths of the CPU): the
# tiny seeds one per binding mix (test_horus_exact's COVERING), the CPU-bound seeds (one
# per job size pattern, as on every backend), the twins one half-idle and one idle
# server (0, 1)
SWEPT = ("cpsat", "highs")


def _cases(covering: bool = False):
    for seed in COVERING["paper"] if covering else PAPER_SEEDS:
        yield "tiny", "paper", seed
    for seed in COVERING["colocation"] if covering else COLOCATION_SEEDS:
        yield "tiny", "colocation", seed
    for model in ("paper", "colocation"):
        for seed in CPU_SEEDS:
            yield "cpu", model, seed
        for seed in TWIN_SEEDS[:2] if covering else TWIN_SEEDS:
            yield "twins", model, seed


def _instance(kind: str, model: str, seed: int):
    if kind == "tiny":
        return tiny_instance(seed, model)
    if kind == "cpu":
        return cpu_bound_instance(seed, model)
    return twin_instance(seed, model)


@pytest.fixture(scope="module")
def optima() -> dict[tuple[str, str, int], float]:
    return {case: cached_optimum(*case) if case[0] != "twins"
            else brute_force_optimum(_instance(*case)) for case in _cases()}


def test_patterns_match_brute_force(backend, optima):
    for case in _cases(covering=backend not in SWEPT):
        instance = _instance(*case)
        result = solve(instance, "exact", backend=backend, time_limit=30, form="patterns")
        assert result.status is Status.OPTIMAL, (case, result.message)
        assert validate(instance, result.decision).ok, case
        assert result.objective == pytest.approx(optima[case], abs=1e-6), case
        assert result.bound <= result.objective + 1e-6, case
        assert result.extra["form"] == "patterns"


def test_the_kept_seeds_bind_every_family(optima):
    """Guard the subsets: each family of rules binds (alone and together) on some kept
    seed, some optima are the cost's alone, and some colocation optima stack jobs."""
    paper = [cached_brute_force("tiny", "paper", s)[1] for s in PAPER_SEEDS]
    assert {"node_cpu"} in paper and {"gpu_memory"} in paper and frozenset() in paper
    assert {"node_cpu", "gpu_memory"} in paper
    colocation = [cached_brute_force("tiny", "colocation", s)[1] for s in COLOCATION_SEEDS]
    assert {"gpu_memory"} in colocation and frozenset() in colocation
    stacked = 0
    for seed in COLOCATION_SEEDS:
        inst = tiny_instance(seed, "colocation")
        paper_cost = inst.replace(params={**inst.params, "cost_model": "paper"})
        stacked += optima["tiny", "colocation", seed] > brute_force_optimum(paper_cost) + 1e-9
    assert stacked >= 3


def test_twin_instances_do_count_classes():
    """Guard the suite: the twin instances really have classes of several GPUs."""
    grouped = 0
    for seed in TWIN_SEEDS:
        inst = twin_instance(seed, "paper")
        result = solve(inst, "exact", backend="cbc", time_limit=30, form="patterns")
        grouped += result.extra["classes"] < inst.cluster.num_gpus
    assert grouped == len(TWIN_SEEDS)


def test_patterns_take_a_warm_start(backend, optima):
    # seeds 0-2, one per job size pattern (0-5 before; seed 0's OBP start leaves the pair
    # form's candidates, test_horus_exact)
    for seed in CPU_SEEDS:
        inst = cpu_bound_instance(seed)
        start = solve(inst, "obp").decision
        result = solve(inst, "exact", backend=backend, time_limit=30, form="patterns",
                       initial_solution=start)
        assert result.status is Status.OPTIMAL, seed
        assert result.objective == pytest.approx(optima["cpu", "paper", seed], abs=1e-6)


def test_pattern_options_are_checked():
    inst = tiny_instance(0, "paper")
    bad_form = solve(inst, "exact", backend="cbc", form="columns")
    assert bad_form.status is Status.INVALID_INPUT and "options.form" in bad_form.message
    bad_cap = solve(inst, "exact", backend="cbc", form="patterns", max_patterns="many")
    assert bad_cap.status is Status.INVALID_INPUT and "options.max_patterns" in bad_cap.message
    capped = solve(generate_horus(seed=0, nodes=2, busy=0.0, beta=6), "exact",
                   backend="cbc", form="patterns", max_patterns=3)
    assert capped.status is Status.INVALID_INPUT and "max_patterns" in capped.message


# Both forms on the hard case (16 × 8, 90 % busy, seed 1) prove the same optimum
# in `python -m dlsched.benchmarks.exact_crosschecks` (check horus-forms; ~1.4 CPU-s).
