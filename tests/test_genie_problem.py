"""The GENIE problem: parameters, input checks, shape rule, evaluator (hand-computed)."""

from __future__ import annotations

import pytest

from dlsched import Decision, InputError, Placement, evaluate, validate
from dlsched.instance_io import check_instance, instance_from_dict, load_instance, save_instance
from dlsched.problems.genie import genie_breakdown, genie_table, lexicographic_weight
from dlsched.topology import Cluster
from genie_factories import toy_instance, toy_job


def _place(job: str, *gpus: str) -> Placement:
    return Placement(job, tuple(gpus))


def test_table_matches_hand_values():
    inst = toy_instance([toy_job("a")])
    table = genie_table(inst)
    got = {(o.shape.nodes, o.shape.gpus_per_node): (o.latency, o.cer) for o in table.options[0]}
    # see tests/genie_factories.py for the arithmetic
    assert got[1, 1] == pytest.approx((40.0, 22.2222222))
    assert got[1, 2] == pytest.approx((400 / 17.5, 25.0))
    assert got[2, 1] == pytest.approx((400 / 15, 15 / 0.9))
    assert got[2, 2] == pytest.approx((400 / (4 - 1.25 / 3) / 10, (4 - 1.25 / 3) * 10 / 1.4))
    # C_max = 25.595 (best CER of the one task) -> W = 100
    assert table.weight == 100.0


def test_evaluate_counts_on_time_then_cer():
    # deadline 30: <1,1> (latency 40) misses, <1,2> (22.857) meets
    inst = toy_instance([toy_job("a", qos="prior", deadline=30.0)])
    packed = Decision.of([_place("a", "n0/g0", "n0/g1")])
    single = Decision.of([_place("a", "n1/g0")])
    assert evaluate(inst, packed) == pytest.approx(100 * 1 + 25.0)
    assert evaluate(inst, single) == pytest.approx(0 + 22.2222222)
    b = genie_breakdown(inst, packed)
    assert (b.on_time, b.started, b.weight) == (1, 1, 100.0)
    assert b.cer_sum == pytest.approx(25.0)
    assert evaluate(inst, Decision()) == 0.0


def test_snapshot_time_shifts_the_ect():
    # at time 10, <1,2> finishes at 32.857 > 30: late; <2,2> at 21.163: on time
    inst = toy_instance([toy_job("a", deadline=30.0)], time=10.0)
    assert genie_breakdown(inst, Decision.of([_place("a", "n0/g0", "n0/g1")])).on_time == 0
    spread = Decision.of([_place("a", "n0/g0", "n0/g1", "n1/g0", "n1/g1")])
    assert genie_breakdown(inst, spread).on_time == 1


def test_urgent_never_on_time():
    inst = toy_instance([toy_job("u", qos="urgent", deadline=1e9)])
    assert genie_breakdown(inst, Decision.of([_place("u", "n0/g0")])).on_time == 0


def test_more_on_time_beats_more_cer():
    # deadline 27 for a: <1,1> (40) misses, <2,1> (26.667) meets.
    # X: a and b each on <2,1>: K = 2, C = 16.667 + 16.667 = 33.333
    # Y: a on <1,1> (late), b on <1,2>: K = 1, C = 22.222 + 25.0 = 47.222
    # W = 100 > C_max = 2 * 25.595 = 51.19, so F_X = 233.3 > F_Y = 147.2
    inst = toy_instance([toy_job("a", deadline=27.0), toy_job("b")])
    x = Decision.of([_place("a", "n0/g0", "n1/g0"), _place("b", "n0/g1", "n1/g1")])
    y = Decision.of([_place("a", "n0/g0"), _place("b", "n1/g0", "n1/g1")])
    assert evaluate(inst, x) == pytest.approx(200 + 2 * 15 / 0.9)
    assert evaluate(inst, y) == pytest.approx(100 + 22.2222222 + 25.0)
    assert evaluate(inst, x) > evaluate(inst, y)


def test_weight_is_next_power_of_ten():
    assert lexicographic_weight(0.0) == 1.0
    assert lexicographic_weight(0.5) == 1.0
    assert lexicographic_weight(99.9) == 100.0
    assert lexicographic_weight(100.0) == 1000.0


def test_asymmetric_and_tiny_batch_shapes_are_violations():
    inst = toy_instance([toy_job("a"), toy_job("b", batch=2)])
    bad = Decision.of([_place("a", "n0/g0", "n0/g1", "n1/g0")])
    assert "shape" in validate(inst, bad).kinds
    # batch 2 on 4 GPUs: local batch 0.5 < 1
    tiny = Decision.of([_place("b", "n0/g0", "n0/g1", "n1/g0", "n1/g1")])
    assert "shape" in validate(inst, tiny).kinds
    assert validate(inst, Decision.of([_place("b", "n0/g0", "n1/g0")])).ok


def test_busy_gpu_and_start_time_are_violations():
    inst = toy_instance([toy_job("a")], busy=("n0/g0",), time=5.0)
    assert "exclusive" in validate(inst, Decision.of([_place("a", "n0/g0")])).kinds
    late = Decision.of([Placement("a", ("n1/g0",), start=7.0)])
    assert "start" in validate(inst, late).kinds
    assert validate(inst, Decision.of([Placement("a", ("n1/g0",), start=5.0)])).ok


def test_heterogeneous_platform_is_rejected():
    doc = toy_instance([toy_job("a")]).cluster.to_dict()
    doc["nodes"][1]["gpus"] = doc["nodes"][1]["gpus"][:1]
    inst = toy_instance([toy_job("a")]).replace(cluster=Cluster.from_dict(doc))
    with pytest.raises(InputError) as err:
        check_instance(inst)
    assert err.value.field == "cluster.nodes[1].gpus"


def test_missing_field_names_job_and_field():
    inst = toy_instance([toy_job("a"), toy_job("b").replace(qos=None)])
    with pytest.raises(InputError) as err:
        check_instance(inst)
    assert err.value.field == "jobs[1].qos"


@pytest.mark.parametrize(("change", "field"), [
    ({"num_gpus": 2}, "jobs[0].num_gpus"),
    ({"model": "vgg"}, "jobs[0].model"),
])
def test_bad_job_fields(change, field):
    with pytest.raises(InputError) as err:
        check_instance(toy_instance([toy_job("a").replace(**change)]))
    assert err.value.field == field


@pytest.mark.parametrize(("params", "field"), [
    ({"theta": -1}, "params.theta"),
    ({"alpha": 1}, "params.alpha"),
    ({"coefficients": {"toy": {"k0": 1.0, "k1": 0.0, "k2": 0.0, "zeta": 1}}},
     "params.coefficients.toy"),
])
def test_bad_params(params, field):
    inst = toy_instance([toy_job("a")]).replace(params=params)
    with pytest.raises(InputError) as err:
        check_instance(inst)
    assert err.value.field == field


def test_file_round_trip(tmp_path):
    inst = toy_instance([toy_job("a", deadline=30.0)], busy=("n0/g0",), time=1.0)
    sha = save_instance(inst, tmp_path / "i.json")
    back = load_instance(tmp_path / "i.json")
    assert back.sha256 == sha
    assert genie_table(back).weight == genie_table(inst).weight
    assert instance_from_dict(back.to_dict()).jobs == inst.jobs
