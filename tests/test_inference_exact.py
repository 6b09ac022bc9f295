"""The exact window model (CP-SAT) against an independent brute force on tiny windows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from inference_factories import G2, P2, tiny_instance

from dlsched import solve
from dlsched.problems import get_problem
from dlsched.validate import validate

KAPPA = {"full": 1.0, "tiny": 0.5}
TABLES = {"p2": P2, "g2": G2}
SIZES = (1, 2, 4)


def _q(end, soft, hard):
    if end <= soft:
        return 1.0
    if end >= hard:
        return 0.0
    return (hard - end) / (hard - soft)


def _duration(model, gtype, n):
    for b in SIZES:
        d = TABLES[gtype][model][str(b)]
        if b >= n and d is not None:
            return d
    return None


def brute_force(queries, gpus) -> float:
    """Best Σ Q over every sequence of batches on every GPU (left-shifted starts)."""
    best = 0.0

    def rec(remaining: frozenset, g: int, free: int, value: float) -> None:
        nonlocal best
        best = max(best, value)
        if g >= len(gpus) or not remaining:
            return
        rec(remaining, g + 1, 0, value)  # this GPU runs nothing more
        items = sorted(remaining)
        for r in range(1, len(items) + 1):
            for subset in itertools.combinations(items, r):
                for model in ("full", "tiny"):
                    d = _duration(model, gpus[g], len(subset))
                    if d is None:
                        continue
                    start = max(free, max(queries[q][0] for q in subset))
                    end = start + d
                    gain = sum(KAPPA[model] * _q(end, queries[q][1], queries[q][2])
                               for q in subset)
                    rec(remaining - set(subset), g, end, value + gain)

    rec(frozenset(range(len(queries))), 0, 0, 0.0)
    return best


def random_window(rng, n):
    out = []
    for _ in range(n):
        a = int(rng.integers(0, 300))
        soft = a + int(rng.integers(40, 400))
        hard = soft + int(rng.choice([0, 100, 200, 400]))
        out.append((a, soft, hard))
    out.sort()
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("gpus", [("p2",), ("p2", "g2")])
def test_exact_matches_brute_force(seed, gpus):
    rng = np.random.default_rng(seed)
    n = 4 if len(gpus) == 2 else 5
    queries = random_window(rng, n)
    inst = tiny_instance(queries, gpus=gpus)
    res = solve(inst, "exact", time_limit=60)
    assert res.status.value == "optimal"
    assert validate(inst, res.decision).ok
    expect = brute_force(queries, gpus)
    assert res.objective == pytest.approx(expect, abs=1e-9)
    assert res.bound == pytest.approx(expect, abs=1e-6)


def test_exact_by_hand_prefers_tiny_for_urgent_pair():
    # two urgent queries (soft 100, hard 160) and nothing else: tiny (60 ms) serves both on
    # time for 2 · 0.5 = 1.0; full (150 ms) gives 2 · 10/60; one full alone (100 ms) gives
    # 1.0 too, then the other after 200 ms gets 0. So the optimum is 1.0 + (second query
    # in a separate tiny batch [60,100): 0.5) = 1.5 — tiny, then tiny? Computed:
    #   full{0} [0,100) = 1.0, tiny{1} [100,140) → V = (160-140)/60 = 1/3 → 0.1667: 1.1667
    #   tiny{0} [0,40) = 0.5, full{1} [40,140) → 1/3: 0.8333
    #   tiny{0,1} [0,60) = 1.0;  tiny{0} then tiny{1} [40,80) = 1.0
    #   full{0} [0,100) then nothing = 1.0
    # best: 1.1667 (full alone first, tiny second)
    inst = tiny_instance([(0, 100, 160), (0, 100, 160)])
    res = solve(inst, "exact", time_limit=30)
    assert res.status.value == "optimal"
    assert res.objective == pytest.approx(1.0 + 0.5 * 20 / 60)
    models = sorted(b.model for b in res.decision.batches)
    assert models == ["full", "tiny"]


def test_restricted_slots_are_never_called_optimal():
    inst = tiny_instance([(0, 1000, 2000), (5, 1000, 2000), (10, 1000, 2000)])
    res = solve(inst, "exact", time_limit=30, max_batches=1)
    assert res.status.value == "feasible" and res.bound is None
    assert validate(inst, res.decision).ok
    assert get_problem("inference").evaluate(inst, res.decision) == pytest.approx(3.0)


def class_brute_force(queries, gpus) -> float:
    """Best Σ Q over EDF-contiguous schedules, by plain enumeration (no pruning)."""
    order = sorted(range(len(queries)), key=lambda q: (queries[q][1], queries[q][0], q))
    best = 0.0

    def rec(i, free, value):
        nonlocal best
        best = max(best, value)
        if i == len(order):
            return
        rec(i + 1, free, value)  # drop
        for g, gtype in enumerate(gpus):
            for model in ("full", "tiny"):
                for L in range(1, len(order) - i + 1):
                    d = _duration(model, gtype, L)
                    if d is None:
                        continue
                    run = order[i:i + L]
                    start = max(free[g], max(queries[q][0] for q in run))
                    end = start + d
                    gain = sum(KAPPA[model] * _q(end, queries[q][1], queries[q][2]) for q in run)
                    nf = list(free)
                    nf[g] = end
                    rec(i + L, tuple(nf), value + gain)

    rec(0, (0,) * len(gpus), 0.0)
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("gpus", [("p2",), ("p2", "g2"), ("p2", "p2")])
def test_edf_dp_is_the_class_optimum(seed, gpus):
    rng = np.random.default_rng(100 + seed)
    queries = random_window(rng, 5)
    inst = tiny_instance(queries, gpus=gpus)
    res = solve(inst, "edf-dp")
    assert res.status.value == "feasible" and res.bound is None  # never claimed optimal
    assert validate(inst, res.decision).ok
    assert res.objective == pytest.approx(class_brute_force(queries, gpus), abs=1e-9)
    assert res.objective == pytest.approx(res.extra["class_optimum"], abs=1e-9)
    assert res.objective <= brute_force(queries, gpus) + 1e-9
