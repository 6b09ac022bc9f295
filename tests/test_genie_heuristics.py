"""GENIE heuristics: validity of every method, SWAF's Eq. 12, hand-worked orders, determinism."""

from __future__ import annotations

import pytest

from dlsched import Decision, Placement, Status, solve, validate
from dlsched.heuristics.genie import METHODS, capacity_shares, swaf_order
from dlsched.instances.genie_gen import generate_genie
from dlsched.problems.genie import genie_table, shape_of_gpus
from genie_factories import toy_instance, toy_job

NAMES = [m[0] for m in METHODS]
SNAPSHOTS = [generate_genie(seed=s, snapshot=True) for s in range(3)]
VARIANTS = [(name, {}) for name in NAMES] + [
    ("swaf", {"backfill": True}), ("swaf", {"fit": "free"}), ("swaf", {"late_last": True}),
    ("fifo", {"request": 1}), ("capacity", {"request": 2}), ("minmin", {"request": 1}),
    ("wfair", {"request": 1, "arrival_weight": 0.2}),
]


@pytest.mark.parametrize(("name", "options"), VARIANTS)
@pytest.mark.parametrize("snap", range(len(SNAPSHOTS)))
def test_every_method_is_valid_and_deterministic(name, options, snap):
    inst = SNAPSHOTS[snap]
    first = solve(inst, name, **options)
    assert first.status is Status.FEASIBLE
    assert validate(inst, first.decision).ok
    assert solve(inst, name, **options).decision == first.decision


@pytest.mark.parametrize("snap", range(len(SNAPSHOTS)))
def test_swaf_meets_eq12_whenever_a_shape_can(snap):
    inst = SNAPSHOTS[snap]
    table = genie_table(inst)
    decision = solve(inst, "swaf", backfill=True).decision
    assert decision.placements
    for p in decision.placements:
        j = inst.job_index[p.job]
        row = table.options[j]
        got = table.option(j, shape_of_gpus(inst, p.gpus))
        meeting = [o for o in row if o.on_time]
        if meeting:
            assert got.on_time
            assert got.cer == max(o.cer for o in meeting)
        else:
            assert got.cer == max(o.cer for o in row)


def _toy():
    # 2 x 2 platform, all idle, time 0 (shape table in tests/genie_factories.py).
    # a: deadline 27 -> meeting shapes <1,2> (CER 25), <2,1> (16.667), <2,2> (25.595):
    #    s* = <2,2>, w = 27 - 11.163 = 15.84
    # b: deadline 45 -> all meet; best CER <2,2>, w = 45 - 11.163 = 33.84
    # c: urgent -> best CER overall <2,2>, w = 0 - 11.163 = -11.16
    # d: deadline 100 -> <2,2>, w = 88.84
    return toy_instance([toy_job("a", deadline=27.0), toy_job("b", deadline=45.0),
                         toy_job("c", qos="urgent", deadline=0.0), toy_job("d", deadline=100.0)])


def test_swaf_order_by_hand():
    inst = _toy()
    order = swaf_order(inst, genie_table(inst))
    assert [inst.jobs[j].id for j, _o, _w in order] == ["c", "a", "b", "d"]
    assert [round(w, 2) for _j, _o, w in order] == [-11.16, 15.84, 33.84, 88.84]
    late_last = swaf_order(inst, genie_table(inst), late_last=True)
    assert [inst.jobs[j].id for j, _o, _w in late_last] == ["a", "b", "d", "c"]


def test_swaf_strict_backfill_and_free():
    # one busy GPU: <2,2> never fits. Strict: c (head) blocks everything.
    inst = _toy().replace(running=toy_instance([], busy=("n1/g1",)).running)
    assert solve(inst, "swaf").decision == Decision()
    # backfill: every s* is <2,2>, nothing fits either
    assert solve(inst, "swaf", backfill=True).decision == Decision()
    # fit=free, order c, a, b, d. Idle: n0/g0, n0/g1, n1/g0.
    # c: best CER among fitting <1,1> 22.2, <1,2> 25, <2,1> 16.7 -> <1,2> on n0.
    # a: only n1/g0 left -> <1,1> (misses, CER 22.2) is all that fits.
    got = solve(inst, "swaf", fit="free").decision
    assert got == Decision.of([Placement("c", ("n0/g0", "n0/g1")), Placement("a", ("n1/g0",))])


def test_best_fit_servers():
    # idle: n0 has 1 (n0/g1), n1 has 2; a one-GPU shape goes to n0 (fewest idle)
    inst = toy_instance([toy_job("x", deadline=45.0)], busy=("n0/g0",))
    # x: meeting shapes all; best CER among all is <2,2> which does not fit -> strict: nothing
    assert solve(inst, "swaf").decision == Decision()
    d = solve(inst, "tetris-cer").decision
    # fitting: <1,1> 22.2, <1,2> 25 (n1 only), <2,1> 16.7 -> <1,2> on n1
    assert d == Decision.of([Placement("x", ("n1/g0", "n1/g1"))])
    d = solve(inst, "fifo", request=1).decision
    assert d == Decision.of([Placement("x", ("n1/g0",))])  # most idle server for model-blind


def test_tetris_perf_takes_the_fastest_fitting_shape():
    # all idle: PR <2,2> 35.8 is the highest -> x takes all four GPUs, y gets nothing
    inst = toy_instance([toy_job("x"), toy_job("y")])
    d = solve(inst, "tetris-perf").decision
    assert d == Decision.of([Placement("x", ("n0/g0", "n0/g1", "n1/g0", "n1/g1"))])


def test_model_blind_orders():
    # arrivals x (t=0, deadline 500), y (t=1, deadline 50), z (t=2, deadline 60); idle: n1
    # only (2 GPUs), request 1. FIFO: x, y. Min-Min (deadline): y, z.
    # WFair 0.5/0.5: x 250, y 25.5, z 31 -> y, z.
    # WFair arrival weight 1: arrival order -> x, y.
    jobs = [toy_job("x", submit=0.0, deadline=500.0), toy_job("y", submit=1.0, deadline=50.0),
            toy_job("z", submit=2.0, deadline=60.0)]
    inst = toy_instance(jobs, busy=("n0/g0", "n0/g1"), time=5.0)

    def started(name, **o):
        return [p.job for p in solve(inst, name, request=1, **o).decision.placements]

    assert started("fifo") == ["x", "y"]
    assert started("minmin") == ["y", "z"]
    assert started("wfair") == ["y", "z"]
    assert started("wfair", arrival_weight=1.0) == ["x", "y"]
    # default request: the first task takes both idle GPUs of n1
    assert [len(p.gpus) for p in solve(inst, "fifo").decision.placements] == [2]


def test_capacity_shares_and_quota():
    # 16 GPUs over 6 models: 16/6 = 2 rem 4 -> the first four names get 3
    snap = SNAPSHOTS[0]
    assert capacity_shares(snap) == {"alexnet": 3, "googlenet": 3, "inception_v3": 3,
                                     "resnet50": 3, "rlstm": 2, "seq2seq": 2}
    # toy + one other model on 4 GPUs: 2 each; three toy tasks ask 1 GPU: only two start
    other = {"other": {"k0": 5.0, "k1": 0.0, "k2": 0.0}}
    inst = toy_instance([toy_job("a"), toy_job("b"), toy_job("c")], extra_models=other)
    assert capacity_shares(inst) == {"other": 2, "toy": 2}
    assert [p.job for p in solve(inst, "capacity", request=1).decision.placements] == ["a", "b"]


def test_unknown_option_is_invalid_input():
    assert solve(_toy(), "swaf", greedy=True).status is Status.INVALID_INPUT
    assert solve(_toy(), "swaf", fit="all").status is Status.INVALID_INPUT
