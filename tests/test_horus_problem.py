"""Horus cost functions and evaluator against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched import Decision, Placement, evaluate
from dlsched.errors import InputError
from dlsched.instance_io import check_instance
from dlsched.problems.horus import (
    BUILTIN_INTERFERENCE,
    InterferenceFunction,
    estimate_gpu_memory_gb,
    horus_breakdown,
    horus_costs,
)
from factories import horus_instance, running

F1080 = BUILTIN_INTERFERENCE["gtx1080"]


def test_interference_quadratic_above_100_percent():
    # 1.32198 * 1.5^2 - 0.00728 * 1.5 + 6e-5 = 2.974455 - 0.01092 + 0.00006 = 2.963595
    assert F1080(1.5) == pytest.approx(2.963595)


def test_interference_linear_below_100_percent_through_quadratic_at_1():
    # quadratic(1) = 1.32198 - 0.00728 + 0.00006 = 1.31476; linear: 0.5 * 1.31476
    assert F1080(0.5) == pytest.approx(0.65738)
    assert F1080(1.0) == pytest.approx(1.31476)
    assert F1080(0.0) == 0.0


def test_rtx2080_footnote():
    # 1.16664 * 4 - 0.00302 * 2 + 4e-5 = 4.66656 - 0.00604 + 0.00004 = 4.66056
    assert BUILTIN_INTERFERENCE["rtx2080"](2.0) == pytest.approx(4.66056)


def test_builtin_functions_are_convex():
    assert all(fn.check_convex() is None for fn in BUILTIN_INTERFERENCE.values())


@pytest.mark.parametrize("fn,words", [
    (InterferenceFunction((-1.0, 0.0, 0.0)), "upwards"),
    (InterferenceFunction((0.1, 0.0, 0.9), (0.5, 0.5)), "convex"),
    (InterferenceFunction((1.0, 0.0, 0.0), (0.5, 0.6)), "drop"),
])
def test_non_convex_interference_is_reported(fn, words):
    assert words in fn.check_convex()


def test_cost_matrix_by_hand():
    inst = horus_instance([("a", 1, 50.0, 3.0)], [running("r", ["n0/g0"], 30.0, 2.0)])
    costs = horus_costs(inst)
    # GPU 0: (2 + 3) / 8 + f(0.8) = 0.625 + 0.8 * 1.31476 = 1.676808
    assert costs.cost[0, 0] == pytest.approx(1.676808)
    # GPU 1 idle: 3 / 8 + f(0.5) = 0.375 + 0.65738 = 1.03238
    assert costs.cost[0, 1] == pytest.approx(1.03238)


def test_default_penalty_by_hand():
    inst = horus_instance([("a", 1, 50.0, 3.0), ("b", 2, 40.0, 1.0)])
    # m_max = (0 + 3) / 8 = 0.375; u_cap = (0 + 50 + 40) / 100 = 0.9, f = 0.9 * 1.31476
    # per share = 0.375 + 2 * 1.183284 = 2.741568; 3 requests: 1 + 8.224704 -> ceil 10
    assert horus_costs(inst).penalty == 10.0


def test_paper_objective_by_hand():
    inst = horus_instance([("a", 1, 60.0, 1.0), ("b", 1, 70.0, 1.0), ("c", 2, 10.0, 1.0)],
                          params={"unplaced_penalty": 100.0})
    both_on_g0 = Decision.of([Placement("a", ("n0/g0",)), Placement("b", ("n0/g0",))])
    # paper: 1/8 + f(0.6) + 1/8 + f(0.7) = 0.25 + 1.3 * 1.31476 = 1.959188; c waits: 2 * 100
    assert evaluate(inst, both_on_g0) == pytest.approx(1.959188 + 200.0)
    parts = horus_breakdown(inst, both_on_g0)
    assert (parts.unplaced_gpus, parts.penalty) == (2, 100.0)


def test_colocation_objective_by_hand():
    inst = horus_instance([("a", 1, 60.0, 1.0), ("b", 1, 70.0, 1.0)],
                          params={"cost_model": "colocation"})
    both_on_g0 = Decision.of([Placement("a", ("n0/g0",)), Placement("b", ("n0/g0",))])
    # 1/8 + 1/8 + f(1.3) - f(0) = 0.25 + (1.32198 * 1.69 - 0.00728 * 1.3 + 0.00006)
    #   = 0.25 + 2.2341462 - 0.009464 + 0.00006 = 2.4747422
    assert evaluate(inst, both_on_g0) == pytest.approx(2.4747422)
    apart = Decision.of([Placement("a", ("n0/g0",)), Placement("b", ("n0/g1",))])
    # one job per GPU: equals the paper's cost 0.25 + 1.3 * 1.31476 = 1.959188
    assert evaluate(inst, apart) == pytest.approx(1.959188)


def test_colocation_on_busy_gpu_by_hand():
    inst = horus_instance([("a", 1, 40.0, 1.0)], [running("r", ["n0/g0"], 80.0, 2.0)],
                          params={"cost_model": "colocation"})
    on_busy = Decision.of([Placement("a", ("n0/g0",))])
    # (2 + 1) / 8 + f(0.8) + [f(1.2) - f(0.8)] = 0.375 + f(1.2)
    # f(1.2) = 1.32198 * 1.44 - 0.00728 * 1.2 + 0.00006 = 1.9036512 - 0.008736 + 0.00006
    assert evaluate(inst, on_busy) == pytest.approx(0.375 + 1.8949752)


def test_memory_estimate_eq2():
    # (32 * 1e6 + 25e6) + 32 * 1e6 = 89e6 values * 4 bytes = 0.356 GB, + 0.5 GB overhead
    assert estimate_gpu_memory_gb(32, 1e6, 25e6, 1e6, 0.5) == pytest.approx(0.856)


def test_unknown_gpu_type_needs_interference_params():
    inst = horus_instance([("a", 1, 50.0, 1.0)])
    from dlsched import homogeneous_cluster

    v100 = inst.replace(cluster=homogeneous_cluster(1, 2, gpu_type="v100"))
    with pytest.raises(InputError, match="params.interference.v100"):
        check_instance(v100)
    ok = v100.replace(params={"interference": {"v100": {"quadratic": [1.0, 0.0, 0.0]}}})
    check_instance(ok)


@pytest.mark.parametrize("params,field", [
    ({"w_mem": -1}, "params.w_mem"),
    ({"cost_model": "nope"}, "params.cost_model"),
    ({"bogus": 1}, "params.bogus"),
    ({"interference": {"x": {"quadratic": [1]}}}, "params.interference.x"),
])
def test_bad_params_name_the_field(params, field):
    with pytest.raises(InputError) as err:
        check_instance(horus_instance([("a", 1, 50.0, 1.0)], params=params))
    assert err.value.field == field


def test_parsed_params_follow_a_changed_mapping():
    """parse_horus_params keeps recent results; a mapping changed in place is parsed again."""
    from dlsched.problems.horus import parse_horus_params

    params = {"w_mem": 2.0, "interference": {}}
    assert parse_horus_params(params).w_mem == 2.0
    assert parse_horus_params(params) is parse_horus_params(params)
    params["w_mem"] = 3.0
    assert parse_horus_params(params).w_mem == 3.0
    params["interference"]["GTX1080"] = {"quadratic": [1.0, 0.0, 0.0]}
    assert parse_horus_params(params).interference["GTX1080"].quadratic == (1.0, 0.0, 0.0)


@pytest.mark.parametrize("mixed", [False, True])
def test_share_costs_shortcuts_give_the_same_bits(mixed):
    """share_costs' shortcuts (all capacities positive; one GPU type) equal Eq. 7 computed
    with the masks, bit for bit, on all columns and on a subset."""
    from dlsched.problems.horus import parse_horus_params, share_costs

    rng = np.random.default_rng(1)
    p = parse_horus_params({"w_mem": 0.7, "w_util": 1.3})
    types = tuple(str(x) for x in rng.choice(["gtx1080", "rtx2080"] if mixed else ["gtx1080"],
                                             40))
    cap, util, mem = rng.uniform(4, 16, 40), rng.uniform(0, 150, 40), rng.uniform(0, 4, 40)
    job_util, job_mem = rng.uniform(0, 100, 6), rng.uniform(0, 8, 6)
    got = share_costs(p, types, cap, util, mem, job_util, job_mem)
    ratio = (mem[None, :] + job_mem[:, None]) / cap[None, :]
    cum = (util[None, :] + job_util[:, None]) / 100.0
    inter = np.empty_like(cum)
    for name in set(types):
        cols = np.asarray(types) == name
        inter[:, cols] = p.interference[name](cum[:, cols])
    assert got.tobytes() == (0.7 * ratio + 1.3 * inter).tobytes()
    some = np.array([5, 0, 17])
    assert share_costs(p, types, cap, util, mem, job_util, job_mem,
                       gpus=some).tobytes() == got[:, some].tobytes()


def test_the_evaluator_never_reads_another_instances_or_stale_costs():
    # the evaluator keeps the last instance's costs: alternating instances, and params
    # changed in place, must give the values of a first evaluation (by hand, as above)
    def on_g0(penalty: float):
        inst = horus_instance([("a", 1, 60.0, 1.0), ("c", 2, 10.0, 1.0)],
                              params={"unplaced_penalty": penalty})
        return inst, Decision.of([Placement("a", ("n0/g0",))])

    (low, d), (high, _) = on_g0(100.0), on_g0(50.0)
    # 1/8 + f(0.6) = 0.125 + 0.6 * 1.31476 = 0.913856; c waits: 2 GPU requests
    for inst, penalty in ((low, 100.0), (high, 50.0), (low, 100.0)):
        assert evaluate(inst, d) == pytest.approx(0.913856 + 2 * penalty)
    low.params["unplaced_penalty"] = 10.0  # changed in place after an evaluation
    assert evaluate(low, d) == pytest.approx(0.913856 + 20.0)
