"""Exact GENIE snapshot model against brute force on tiny instances, on every backend.

The brute force hands every idle GPU to one waiting task or to none (all (J+1)^F ways),
keeps what the independent validator accepts, and scores it with the evaluator: it shares
nothing with the model.
"""

from __future__ import annotations

import itertools

import pytest
from hints import hint_is_a_solution

from dlsched import Decision, Placement, Status, solve, validate
from dlsched.instances.genie_gen import generate_genie_workload, genie_snapshot
from dlsched.problems import get_problem
from dlsched.problems.genie import genie_breakdown
from dlsched.registry import get_method
from dlsched.validate import validate_decision
from genie_factories import toy_instance, toy_job

_optima: dict[str, float] = {}


def brute_force(instance) -> float:
    """The optimum, kept per instance (by its sha256): test_genie_classes asks again for
    this file's cases."""
    if instance.sha256 not in _optima:
        _optima[instance.sha256] = _brute_force(instance)
    return _optima[instance.sha256]


def _brute_force(instance) -> float:
    assert validate(instance, Decision(())).ok  # the instance once; then each decision
    genie = get_problem("genie")
    ids = instance.cluster.gpu_ids
    idle = [ids[g] for g in range(len(ids)) if not instance.gpu_busy[g]]
    jobs = [j.id for j in instance.jobs]
    best = 0.0  # starting nothing is always feasible
    for owner in itertools.product(range(len(jobs) + 1), repeat=len(idle)):
        groups: dict[int, list[str]] = {}
        for gpu, o in zip(idle, owner, strict=True):
            if o:
                groups.setdefault(o - 1, []).append(gpu)
        decision = Decision.of(Placement(jobs[j], tuple(g)) for j, g in sorted(groups.items()))
        if validate_decision(instance, decision).ok:
            # the evaluator's own value: evaluate() would check the instance and the
            # decision again, which the two lines above did (2/3 of the CPU)
            best = max(best, genie.evaluate(instance, decision))
    return best


def _toy_cases():
    # 1. three tasks compete for 3 idle GPUs; a needs >= 2 GPUs for its ECT
    yield toy_instance([toy_job("a", deadline=27.0), toy_job("b", deadline=45.0),
                        toy_job("c", qos="urgent")], busy=("n1/g1",))
    # 2. 3 x 2 platform, 5 idle GPUs: a meets its ECT on >= 3 GPUs (<3,1> exactly at 16),
    #    b on one GPU (40 <= 40), c on >= 2 GPUs: not all three fit
    yield toy_instance([toy_job("a", deadline=16.0, batch=8, iterations=50),
                        toy_job("b", deadline=40.0), toy_job("c", deadline=30.0)],
                       nodes=3, gpus_per_node=2, busy=("n2/g0",), time=0.0)


def _generated_cases():
    base = generate_genie_workload(seed=3, nodes=2, gpus_per_node=2, density=20.0,
                                   duration=2.0)
    for seed in (0, 1):
        yield genie_snapshot(base, seed=seed, waiting=3, busy=0.25)


CASES = [*_toy_cases(), *_generated_cases()]


@pytest.fixture(scope="module")
def optima():
    """Brute-force optimum per case (computed once)."""
    return [brute_force(c) for c in CASES]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_matches_brute_force(backend, case, optima):
    inst = CASES[case]
    r = solve(inst, "exact", backend=backend, time_limit=30)
    assert r.status is Status.OPTIMAL
    assert r.objective == pytest.approx(optima[case], rel=1e-9, abs=1e-6)
    assert r.bound >= r.objective - 1e-6


@pytest.mark.parametrize("case", range(len(CASES)))
def test_without_pruning_or_symmetry_same_optimum(case, optima):
    r = solve(CASES[case], "exact", backend="highs", symmetry=False, prune=False)
    assert r.objective == pytest.approx(optima[case], rel=1e-9, abs=1e-6)


def test_toy_case_optimum_by_hand(backend):
    # case 1: idle n0/g0, n0/g1, n1/g0. a on <1,2> (22.857 <= 27) on time, CER 25;
    # b on <1,1> (40 <= 45) on time, CER 22.222; c (urgent) has no GPU left.
    # W = 100 (C_max = 3 * 25.595 = 76.8): F = 2 * 100 + 47.222
    r = solve(CASES[0], "exact", backend=backend)
    b = genie_breakdown(CASES[0], r.decision)
    assert (b.on_time, b.started) == (2, 2)
    assert r.objective == pytest.approx(200 + 25.0 + 22.2222222)


def test_bad_option_is_invalid_input():
    r = solve(CASES[0], "exact", backend="cbc", colour="red")
    assert r.status is Status.INVALID_INPUT


@pytest.mark.parametrize("fmt", ["mps", "lp"])
def test_export(tmp_path, fmt):
    path = tmp_path / f"genie.{fmt}"
    get_method("genie", "exact").export(CASES[1], path, fmt)
    text = path.read_text()
    assert "cap_0" in text and "y_0_" in text


def test_vectorized_dominance_matches_the_definition():
    """The numpy dominance mask used to prune shapes agrees with ``dominated`` row by row."""
    from dlsched.formulations.genie import dominated, dominated_mask
    from dlsched.instances.genie_gen import generate_genie
    from dlsched.problems.genie import genie_table

    rows = 0
    for seed in range(2):
        inst = generate_genie(seed=seed, nodes=8, gpus_per_node=4, waiting=20, busy=0.5)
        for row in genie_table(inst).options:
            assert list(dominated_mask(row)) == [dominated(o, row) for o in row]
            rows += 1
    assert rows == 40


@pytest.mark.parametrize("heuristic", ["fifo", "swaf", "tetris-cer"])
def test_warm_start_obeys_the_symmetry_rows(heuristic):
    # seed 1's fifo schedule loads a server more than its interchangeable predecessor:
    # hinted as it is, CP-SAT found the hint infeasible (symmetry rows) and dropped it
    from dlsched.formulations import genie as exact_genie
    from dlsched.instances.genie_gen import generate_genie

    inst = generate_genie(seed=1, snapshot=True, waiting=50)
    decision = solve(inst, heuristic).decision
    data = exact_genie.genie_data(inst)
    gm = exact_genie.build_model(data, "cpsat")
    gm.model.hint(exact_genie._hint_values(data, gm, decision))
    assert hint_is_a_solution(gm.model.cp)
