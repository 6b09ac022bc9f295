"""Liquid heuristics: feasibility of every decision, GA determinism, best-fit by hand."""

from __future__ import annotations

import pytest
from test_liquid_exact import tiny_instance

from dlsched import Instance, Job, homogeneous_cluster, solve, validate
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.jobs import Container, RunningJob
from dlsched.result import Status

METHODS = ("bestfit", "gga", "random", "spread", "firstfit", "pack")
FAST_GA = {"max_generations": 15}


def _options(method: str) -> dict:
    return FAST_GA if method == "gga" else {}


@pytest.mark.parametrize("method", METHODS)
def test_every_decision_is_feasible(method):
    instances = [generate_liquid(seed=s, nodes=n, busy=b, fill=f)
                 for s, n, b, f in ((0, 5, 0.0, 1.0), (1, 10, 0.2, 0.9), (2, 10, 0.0, 0.7))]
    instances += [tiny_instance(s) for s in range(8)]
    placed = 0
    for inst in instances:
        result = solve(inst, method, seed=1, **_options(method))
        if result.decision is None:
            assert result.status is Status.NO_SOLUTION
            continue
        placed += 1
        assert result.status is Status.FEASIBLE
        assert validate(inst, result.decision).ok
    assert placed >= 6


def test_gga_is_deterministic_for_a_seed():
    inst = generate_liquid(seed=4, nodes=10)
    a = solve(inst, "gga", seed=7, max_generations=20)
    b = solve(inst, "gga", seed=7, max_generations=20)
    assert a.decision == b.decision
    assert a.extra["history"] == b.extra["history"]
    assert a.extra["stopped_by"] in ("generations", "stall")
    # the best fitness never worsens (elitism)
    hist = a.extra["history"]
    assert all(x >= y for x, y in zip(hist, hist[1:], strict=False))


def test_gga_stops_by_stall_and_seeds_with_bestfit():
    inst = generate_liquid(seed=5, nodes=5)
    r = solve(inst, "gga", seed=0, stall_generations=5, seed_bestfit=True)
    assert r.extra["stopped_by"] == "stall"
    bestfit = solve(inst, "bestfit")
    # fitness = objective + NumNU (weight 1 for the paper objective): the best-fit plan is
    # in the initial population, so the GA's fitness is at most best-fit's
    nodes = len({t.node for p in bestfit.decision.placements for t in p.tasks})
    assert r.extra["fitness"] <= bestfit.objective + nodes + 1e-9


def test_gga_never_returns_an_infeasible_plan():
    cluster = homogeneous_cluster(2, 1, gpu_mem_gb=16.0)
    too_big = Job(id="a", containers=(Container("w0", "worker", 1, 4.0),
                                      Container("w1", "worker", 1, 4.0),
                                      Container("w2", "worker", 1, 4.0)))
    inst = Instance("liquid", cluster, (too_big,))
    for method in METHODS:
        r = solve(inst, method, seed=0, **_options(method))
        assert r.status is Status.NO_SOLUTION and r.decision is None, method
    assert solve(inst, "exact").status is Status.INFEASIBLE


def bestfit_case() -> Instance:
    """2 servers × 2 GPUs in one rack (paper distance 2), GPU n0/g0 busy;
    one job: 1 PS + 2 one-GPU workers, bandwidth 1.0, λ = 0.5."""
    cluster = homogeneous_cluster(2, 2, nodes_per_rack=2, gpu_mem_gb=16.0)
    job = Job(id="a", containers=(Container("ps", "ps", 0, 0.0, bandwidth=1.0),
                                  Container("w0", "worker", 1, 4.0, bandwidth=1.0),
                                  Container("w1", "worker", 1, 4.0, bandwidth=1.0)))
    return Instance("liquid", cluster, (job,), params={"lambda": 0.5},
                    running=(RunningJob("r", ("n0/g0",)),))


def test_bestfit_by_hand():
    # order ps, w0, w1. pair coefficient 0.5 * 1.0 / (1 * 2) = 0.25 per unit distance.
    # ps: n0 costs the UsedGPU part -0.5 * 1/2 = -0.25, n1 costs 0 -> n0
    # w0: n0: -0.5 * 1/2 = -0.25 (same server as ps); n1: -0.25 + 0.25 * 2 = 0.25 -> n0
    # w1: n0 is full (busy g0, w0 on g1) -> n1
    # Score: Cost = (0 + 1.0 * 2) / 2 = 1; Fitness n0 -(1+1)/2, n1 -(1+0)/2 = -1.5
    #        0.5 * 1 + 0.5 * (-1.5) = -0.25
    inst = bestfit_case()
    r = solve(inst, "bestfit")
    nodes = {t.task: t.node for t in r.decision.placements[0].tasks}
    assert nodes == {"ps": "n0", "w0": "n0", "w1": "n1"}
    assert r.objective == pytest.approx(-0.25)
    # with look-ahead, all three on n1: Cost 0, Fitness -(2+0)/2 = -1 -> Score -0.5
    assert solve(inst, "exact").objective == pytest.approx(-0.5)


def test_baselines_by_hand():
    inst = bestfit_case()

    def nodes(method):
        r = solve(inst, method, seed=0)
        return [t.node for t in r.decision.placements[0].tasks]

    # first-fit in file order: ps n0, w0 n0 (g1 free), w1 n1
    assert nodes("firstfit") == ["n0", "n0", "n1"]
    # spread: fewest containers of the batch, then most free GPUs: ps n1 (2 free),
    # w0 n0 (0 containers there), w1 n1 (n0 is full)
    assert nodes("spread") == ["n1", "n0", "n1"]
    # pack: fewest free GPUs (n0 has 1): ps n0; w0 the job's own n0; w1 only n1 fits
    assert nodes("pack") == ["n0", "n0", "n1"]
