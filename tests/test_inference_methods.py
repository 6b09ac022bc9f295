"""Every inference method through ``solve()`` and ``validate()``: the paper's batch policies
(fixed, heuristic, learned-batching: replayed in the serving simulator), edf-dp, lagrange and exact.

Expected values are computed by hand (see each test) or are the independent facts that an
optimum is at least every schedule's value and at most every proven bound."""

from __future__ import annotations

import pytest
from inference_factories import tiny_instance

from dlsched import solve, validate
from dlsched.instances.inference_gen import inference_instance
from dlsched.problems import get_problem
from dlsched.problems.inference.policies import HeuristicPolicy
from dlsched.registry import methods_for
from dlsched.result import Status
from dlsched.serve import serve

METHODS = ("fixed", "heuristic", "learned-batching", "edf-dp", "lagrange", "exact")


def _q(inst, decision) -> float:
    """Σ κ · V(end) from the batches, written out here (not the problem's evaluator)."""
    params = inst.params
    kappa = {m: spec["kappa"] for m, spec in params["models"].items()}
    soft, hard = params["queries"]["soft_ms"], params["queries"]["hard_ms"]
    total = 0.0
    for b in decision.batches:
        for q in b.queries:
            if b.end <= soft[q]:
                v = 1.0
            elif b.end >= hard[q]:
                v = 0.0
            else:
                v = (hard[q] - b.end) / (hard[q] - soft[q])
            total += kappa[b.model] * v
    return total


def _paper_window():
    """Five queries, 25 ms apart, on one p2 GPU with the paper's Table 1 delays; soft
    deadline 150 ms, hard 400 ms after arrival: a GPU running full YOLO one at a time
    (69 ms) cannot keep up, so batching and the model choice matter."""
    arrival = [25 * i for i in range(5)]
    return inference_instance(arrival=arrival, soft=[a + 150 for a in arrival],
                              hard=[a + 400 for a in arrival], gpu_types=["p2"],
                              name="paper-window", provenance={})


def test_the_six_methods_are_registered_for_inference():
    specs = methods_for("inference")
    assert {m: specs[m].kind for m in METHODS} == {
        "fixed": "baseline", "heuristic": "heuristic", "learned-batching": "learned",
        "edf-dp": "heuristic", "lagrange": "bound", "exact": "exact"}


@pytest.fixture(scope="module")
def paper_results():
    inst = _paper_window()
    return inst, {m: solve(inst, m, time_limit=60.0) for m in METHODS}


@pytest.mark.parametrize("method", METHODS)
def test_each_method_returns_a_valid_schedule_scored_from_its_batches(paper_results, method):
    inst, results = paper_results
    res = results[method]
    assert validate(inst, res.decision).ok
    assert res.decision.batches, "five queries, all servable: some batch runs"
    assert res.objective == pytest.approx(_q(inst, res.decision), abs=1e-9)
    assert 0.0 < res.objective <= 5.0  # at most κ = 1 per query


def test_the_exact_optimum_bounds_every_other_method(paper_results):
    _inst, results = paper_results
    exact = results["exact"]
    assert exact.status is Status.OPTIMAL
    for m in METHODS:
        assert results[m].objective <= exact.objective + 1e-9, m
    # the Lagrangian bound is proven: never below the optimum
    assert results["lagrange"].bound >= exact.objective - 1e-9
    # a batch policy claims no optimality and no bound
    for m in ("fixed", "heuristic", "learned-batching"):
        assert results[m].status is Status.FEASIBLE and results[m].bound is None


def _hand_window():
    # two queries at 0 ms (soft 1000, hard 2000) and one at 50 ms (soft 200, hard 300) on
    # one p2 GPU of the factories' tables: full runs 1/2/4 queries in 100/150/200 ms
    return tiny_instance([(0, 1000, 2000), (0, 1000, 2000), (50, 200, 300)])


def test_fixed_on_a_hand_window():
    # fixed batches the queue: at 0 ms queries 0 and 1 (2 < B_thrd = 8: full), 0-150 ms,
    # Q = 1 + 1; then query 2 alone, 150-250 ms: V = (300 - 250) / (300 - 200) = 0.5
    inst = _hand_window()
    res = solve(inst, "fixed")
    assert [(b.gpu, b.model, b.start, b.end, b.queries) for b in res.decision.batches] == [
        ("gpu0", "full", 0, 150, (0, 1)), ("gpu0", "full", 150, 250, (2,))]
    assert res.objective == pytest.approx(2.5)


def test_heuristic_and_exact_on_the_hand_window():
    # Eq. 2 at 0 ms: R = 2 / 5000 per ms, N = 2, ξ = 1: (0.5 · 100 · 0.0004 + 0.5 · 2) · 0.5
    # = 0.51 <= 1, so B = 1: query 0 in 0-100; at 100 ms query 2 heads the queue (deadline
    # bin 1 < 5), 100-200 (Q = 1, ends at its soft deadline); query 1 in 200-300: Σ Q = 3,
    # the most three queries can earn, so also the optimum
    inst = _hand_window()
    heuristic = solve(inst, "heuristic")
    assert [b.queries for b in heuristic.decision.batches] == [(0,), (2,), (1,)]
    assert heuristic.objective == pytest.approx(3.0)
    exact = solve(inst, "exact", time_limit=30.0)
    assert exact.status is Status.OPTIMAL and exact.objective == pytest.approx(3.0)


def test_exact_with_the_gpu_busy_until_1000_ms():
    # query 2 expires (hard 300) before the GPU is free; queries 0 and 1 together at
    # 1000-1150 earn V = (2000 - 1150) / 1000 = 0.85 each (one by one, 0.9 + 0.8 = 1.7 as
    # well; tiny earns at most 0.5 each): 1.7
    inst = _hand_window()
    res = solve(inst, "exact", time_limit=30.0, gpu_free=[1000])
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(1.7)
    assert min(b.start for b in res.decision.batches) >= 1000
    bad = solve(inst, "exact", gpu_free=[0, 0])
    assert bad.status is Status.INVALID_INPUT and bad.message.startswith("options.gpu_free")


def test_a_policy_method_is_the_policy_replayed_in_the_serving_simulator():
    inst = _paper_window()
    replay = serve(inst, HeuristicPolicy(alpha=0.25, beta=2.0))
    res = solve(inst, "heuristic", alpha=0.25, beta=2.0)
    assert res.decision.batches == tuple(replay.batches)


@pytest.mark.parametrize(("method", "options", "field"), [
    ("fixed", {"alpha": 0.5}, "options"),
    ("fixed", {"max_batch": 0}, "options.max_batch"),
    ("heuristic", {"alpha": 1.5}, "options.alpha"),
    ("learned-batching", {"alpha": 0.5}, "options"),
    ("exact", {"hint": "edf-dp"}, "options.hint"),
    ("lagrange", {"hint": "nope"}, "options.hint"),
])
def test_bad_options_are_one_line_input_errors(method, options, field):
    res = solve(_hand_window(), method, **options)
    assert res.status is Status.INVALID_INPUT and res.decision is None
    assert res.message.startswith(f"{field}:") and "\n" not in res.message


def test_the_problem_names_its_simulator():
    from dlsched.simulate.cli import SIMULATORS

    assert get_problem("inference").simulator == "serving"
    assert {get_problem(p).simulator for p in ("horus", "genie", "liquid", "sched2")} == {
        "events"}
    assert set(SIMULATORS) == {"events", "serving"}


def test_simulate_rejects_a_method_that_is_no_serving_policy(tmp_path, capsys):
    from dlsched.cli import main
    from dlsched.instance_io import save_instance

    path = tmp_path / "w.json"
    save_instance(_hand_window(), path)
    assert main(["simulate", str(path), "--policy", "edf-dp", "--no-plots", "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--policy" in err and "fixed, heuristic, learned-batching, exact-window" in err
