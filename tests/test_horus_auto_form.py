"""``form="auto"`` of the exact Horus model: it picks the pair or the pattern form (both
tested against brute force in test_horus_exact.py and test_horus_patterns.py); here its
results match brute force on every backend, it does pick both on CBC (the pair form on
the others), and it goes back to the pair form when the patterns are too many."""

from __future__ import annotations

import pytest
from test_horus_exact import cached_optimum, cpu_bound_instance, tiny_instance

from dlsched import solve, validate
from dlsched.formulations import horus as exact_horus
from dlsched.formulations.horus import auto_form
from dlsched.formulations.horus_data import horus_data
from dlsched.instances.horus_gen import generate_horus
from dlsched.result import Status

CASES = [("tiny", "paper", s) for s in range(6)] + [("cpu", "paper", s) for s in range(4)] \
    + [("tiny", "colocation", s) for s in range(3)]
# On HiGHS, SCIP and CP-SAT "auto" is the pair form, the default, which test_horus_exact
# matches against brute force on these instances (test_exact_matches_brute_force: the tiny
# ones; test_reduced_model_is_exact_when_cpu_binds: cpu 0-2): there a covering subset runs
# (a third of the CPU), cases where CBC's "auto" picks patterns (tiny paper 0, colocation 0)
# and where it picks pairs (tiny paper 4, cpu 0), so the backend's part in the pick is seen
OTHER_BACKENDS = [("tiny", "paper", 0), ("tiny", "paper", 4), ("cpu", "paper", 0),
                  ("tiny", "colocation", 0)]


def _instance(kind: str, model: str, seed: int):
    return (tiny_instance if kind == "tiny" else cpu_bound_instance)(seed, model)


def test_auto_matches_brute_force(backend):
    forms = set()
    for case in CASES if backend == "cbc" else OTHER_BACKENDS:
        inst = _instance(*case)
        r = solve(inst, "exact", backend=backend, time_limit=30, form="auto")
        assert r.status is Status.OPTIMAL, (case, r.message)
        assert validate(inst, r.decision).ok, case
        assert r.objective == pytest.approx(cached_optimum(*case), abs=1e-6), case
        assert r.extra["form"] == auto_form(horus_data(inst), backend), case
        forms.add(r.extra["form"])
    # both branches ran where the pattern form is picked; the pair form elsewhere
    assert forms == ({"pairs", "patterns"} if backend == "cbc" else {"pairs"})
    if backend != "cbc":  # the subset holds cases where CBC would pick each form
        assert {auto_form(horus_data(_instance(*c))) for c in OTHER_BACKENDS} == {
            "pairs", "patterns"}


def test_auto_picks_patterns_only_where_shares_must_stack():
    full = horus_data(generate_horus(seed=0, nodes=2, beta=6, busy=0.9))
    empty = horus_data(generate_horus(seed=0, nodes=2, beta=3, busy=0.0))
    demand = sum(j.num_gpus for j in full.instance.jobs)
    assert int((~full.instance.gpu_busy).sum()) < demand
    assert auto_form(full) == "patterns"
    assert auto_form(empty) == "pairs"
    assert auto_form(full, "highs") == "pairs"  # the pattern form only on CBC


def test_auto_goes_back_to_pairs_beyond_its_column_cap(monkeypatch):
    case = ("tiny", "colocation", 2)  # 7 pairs, auto picks patterns
    data = horus_data(_instance(*case))
    assert len(data.pairs) == 7 and auto_form(data) == "patterns"
    monkeypatch.setattr(exact_horus, "AUTO_PATTERNS_PER_PAIR", 0)
    r = solve(_instance(*case), "exact", backend="cbc", form="auto")
    assert r.status is Status.OPTIMAL and r.extra["form"] == "pairs"
    assert r.objective == pytest.approx(cached_optimum(*case), abs=1e-6)
