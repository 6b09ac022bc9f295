"""Tests of the GENIE performance model (solver/problems/genie/model.py), paper seed 000 Sec. 5.

Expected values are worked out by hand in the comments, never by calling the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlsched.problems.genie.coefficients import ModelCoefficients, load_default_coefficients
from dlsched.problems.genie.model import (
    TABLE3_MODELS,
    Platform,
    Shape,
    Task,
    cer,
    comm,
    cost,
    ect,
    ect_deadline,
    feasible_shapes,
    latency,
    local_batch,
    processing_rate,
    single_gpu_rate,
    solo_latency,
)
from dlsched.problems.schedule_metrics import (
    average_normalized_latency,
    makespan,
    normalized_latency,
    qos_guarantee_pct,
)

# q(b) = 10 + 2 b - 0.01 b^2, vertex at b = 2 / 0.02 = 100; gamma 0.6, lambda 0.5, nu 5 s.
COEF = ModelCoefficients(k0=10.0, k1=2.0, k2=-0.01, gamma=0.6, lam=0.5, nu=5.0)
PLATFORM = Platform(nodes=4, gpus_per_node=4, theta=0.4)
TASK = Task("toy", "train", batch=64, iterations=1000)


@pytest.fixture(scope="module")
def defaults() -> dict[str, ModelCoefficients]:
    """The shipped coefficients of the six Table-3 models."""
    return load_default_coefficients()


# --------------------------------------------------------------------------- Eqs. 6-7


def test_local_batch_eq6():
    # 64 / (2 * 4) = 8
    assert local_batch(64, Shape(2, 4)) == 8.0
    # 10 / 4 = 2.5: fractional local batches are allowed
    assert local_batch(10, Shape(1, 4)) == 2.5


def test_single_gpu_rate_eq7_quadratic():
    # 10 + 2*8 - 0.01*64 = 10 + 16 - 0.64 = 25.36
    assert single_gpu_rate(COEF, 8) == pytest.approx(25.36)
    # 10 + 2*64 - 0.01*4096 = 10 + 128 - 40.96 = 97.04
    assert single_gpu_rate(COEF, 64) == pytest.approx(97.04)


def test_single_gpu_rate_plateaus_after_vertex():
    # vertex 100: q(100) = 10 + 200 - 100 = 110, and it stays there
    assert COEF.saturation_batch == pytest.approx(100.0)
    assert single_gpu_rate(COEF, 150) == pytest.approx(110.0)
    assert single_gpu_rate(COEF, 1e6) == pytest.approx(110.0)


def test_single_gpu_rate_trusted_range():
    coef = COEF.replace(b_min=20.0, b_sat=50.0)
    # below b_min: q(20) * 5 / 20 = (10 + 40 - 4) * 0.25 = 46 * 0.25 = 11.5
    assert single_gpu_rate(coef, 5) == pytest.approx(11.5)
    # above b_sat: q(50) = 10 + 100 - 25 = 85
    assert single_gpu_rate(coef, 80) == pytest.approx(85.0)


def test_single_gpu_rate_inference_speedup():
    # 3 * 25.36 = 76.08
    assert single_gpu_rate(COEF.replace(infer_speedup=3.0), 8, "infer") == pytest.approx(76.08)


# --------------------------------------------------------------------------- Eq. 8


def test_comm_zero_on_one_gpu_and_for_inference():
    assert comm(COEF, Shape(1, 1)) == 0.0
    assert comm(COEF, Shape(2, 4), "infer") == 0.0
    assert comm(COEF, Shape(4, 1), "infer") == 0.0


def test_comm_within_one_node():
    # <1,4>: 0.6 * (0*4 + 0.5*3) / 3 = 0.6 * 0.5 = 0.3 (= lambda * gamma)
    assert comm(COEF, Shape(1, 4)) == pytest.approx(0.3)
    # <1,2>: 0.6 * (0 + 0.5*1) / 1 = 0.3 as well
    assert comm(COEF, Shape(1, 2)) == pytest.approx(0.3)


def test_comm_across_nodes():
    # <4,1>: 0.6 * (3*1 + 0.5*0) / 3 = 0.6 (= gamma)
    assert comm(COEF, Shape(4, 1)) == pytest.approx(0.6)
    # <2,4>: 0.6 * (1*4 + 0.5*3) / 7 = 0.6 * 5.5 / 7 = 3.3 / 7
    assert comm(COEF, Shape(2, 4)) == pytest.approx(3.3 / 7)


# --------------------------------------------------------------------------- Eqs. 4-5


def test_processing_rate_eq5():
    # (8 - 3.3/7) * sPR(8) = (52.7 / 7) * 25.36 = 1336.472 / 7
    assert processing_rate(COEF, TASK, Shape(2, 4)) == pytest.approx(1336.472 / 7)
    # one GPU: sPR(64) = 97.04
    assert processing_rate(COEF, TASK, Shape(1, 1)) == pytest.approx(97.04)


def test_processing_rate_inference_scales_linearly():
    infer = Task("toy", "infer", batch=64, iterations=1000)
    # no Comm: 8 * 3 * 25.36 = 608.64
    assert processing_rate(COEF.replace(infer_speedup=3.0), infer, Shape(2, 4)) == pytest.approx(
        608.64
    )


def test_latency_eq4():
    # 64 * 1000 / (1336.472 / 7) + 5
    assert latency(COEF, TASK, Shape(2, 4)) == pytest.approx(64000 * 7 / 1336.472 + 5)
    # single GPU: 64000 / 97.04 + 5
    assert solo_latency(COEF, TASK) == pytest.approx(64000 / 97.04 + 5)


# --------------------------------------------------------------------------- Eqs. 9-11


def test_cost_eq10_and_cer_eq11():
    # 8/16 + 0.4 * 2/4 = 0.5 + 0.2 = 0.7
    assert cost(PLATFORM, Shape(2, 4)) == pytest.approx(0.7)
    # 1/16 + 0.4 * 1/4 = 0.0625 + 0.1 = 0.1625
    assert cost(PLATFORM, Shape(1, 1)) == pytest.approx(0.1625)
    # (1336.472 / 7) / 0.7
    assert cer(COEF, TASK, Shape(2, 4), PLATFORM) == pytest.approx(1336.472 / 7 / 0.7)


def test_cost_packing_is_cheaper_than_spreading():
    # <1,4>: 4/16 + 0.4/4 = 0.35 ; <4,1>: 4/16 + 0.4 = 0.65
    assert cost(PLATFORM, Shape(1, 4)) == pytest.approx(0.35)
    assert cost(PLATFORM, Shape(4, 1)) == pytest.approx(0.65)


def test_cost_rejects_shape_outside_platform():
    with pytest.raises(ValueError, match="does not fit platform"):
        cost(PLATFORM, Shape(5, 1))


def test_ect_eq9_three_classes():
    assert ect("urgent", 120.0) == 0.0
    assert ect("prior", 120.0) == 120.0
    assert ect("normal", 120.0) == 240.0


def test_ect_deadline_is_arrival_plus_e():
    # 100 + 2 * 50 = 200 ; 100 + 50 = 150 ; urgent: 100 + 0
    assert ect_deadline(100.0, "normal", 50.0) == 200.0
    assert ect_deadline(100.0, "prior", 50.0) == 150.0
    assert ect_deadline(100.0, "urgent", 50.0) == 100.0


def test_ect_rejects_unknown_class():
    with pytest.raises(ValueError, match="qos_class"):
        ect("vip", 1.0)  # type: ignore[arg-type]


def test_feasible_shapes():
    plat = Platform(nodes=2, gpus_per_node=3)
    got = [(s.nodes, s.gpus_per_node) for s in feasible_shapes(plat)]
    # by total GPUs then nodes: 1, 2, 2, 3, 4, 6
    assert got == [(1, 1), (1, 2), (2, 1), (1, 3), (2, 2), (2, 3)]
    got3 = [(s.nodes, s.gpus_per_node) for s in feasible_shapes(plat, max_gpus=3)]
    assert got3 == [(1, 1), (1, 2), (2, 1), (1, 3)]
    got_b = [(s.nodes, s.gpus_per_node) for s in feasible_shapes(plat, batch=2)]
    assert got_b == [(1, 1), (1, 2), (2, 1)]


# --------------------------------------------------------------------------- Eqs. 14-16


ARRIVAL = [0.0, 0.0, 10.0, 20.0]
START = [0.0, 5.0, 10.0, 30.0]
FINISH = [10.0, 20.0, 10.0, 60.0]
DEADLINE = [12.0, 18.0, 10.0, 80.0]  # task 2 is urgent: deadline = arrival
SOLO = [10.0, 5.0, 2.0, 20.0]


def test_qos_guarantee_pct_eq14():
    # met: task 0 (10 <= 12), task 3 (60 <= 80); missed: task 1 (20 > 18), task 2 (urgent,
    # counted missed even though finish == deadline) -> 2 / 4 = 50 %
    assert qos_guarantee_pct(ARRIVAL, FINISH, DEADLINE) == 50.0


def test_normalized_latency_eq15_eq16():
    # (finish - start) / solo = [10/10, 15/5, 0/2, 30/20] = [1, 3, 0, 1.5]
    np.testing.assert_allclose(normalized_latency(START, FINISH, SOLO), [1.0, 3.0, 0.0, 1.5])
    # mean = 5.5 / 4 = 1.375
    assert average_normalized_latency(START, FINISH, SOLO) == pytest.approx(1.375)


def test_makespan():
    # last finish 60 - first arrival 0
    assert makespan(ARRIVAL, FINISH) == 60.0
    assert makespan([5.0, 7.0], [9.0, 8.0]) == 4.0


def test_metrics_reject_bad_input():
    with pytest.raises(ValueError, match="differ in length"):
        qos_guarantee_pct([0.0], [1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="empty"):
        makespan([], [])
    with pytest.raises(ValueError, match="finish"):
        normalized_latency([5.0], [4.0], [1.0])


# --------------------------------------------------------------------------- validation


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="task.kind"):
        Task("toy", "serve", 8, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task.batch"):
        Task("toy", "train", 0, 1)
    with pytest.raises(ValueError, match="shape.nodes"):
        Shape(0, 1)
    with pytest.raises(ValueError, match="platform.gpus_per_node"):
        Platform(2, 0)
    with pytest.raises(ValueError, match="gamma"):
        ModelCoefficients(k0=1.0, k1=1.0, k2=0.0, gamma=2.0, lam=0.5)
    with pytest.raises(ValueError, match="positive"):
        ModelCoefficients(k0=-5.0, k1=1.0, k2=0.0)
    with pytest.raises(ValueError, match="local batch"):
        single_gpu_rate(COEF, 0.0)


def test_coefficients_round_trip_dict():
    coef = COEF.replace(b_min=4.0)
    assert ModelCoefficients.from_dict(coef.to_dict()) == coef
    with pytest.raises(ValueError, match="unknown coefficient"):
        ModelCoefficients.from_dict({**coef.to_dict(), "k3": 1.0})


# --------------------------------------------------------------------------- shipped data


def test_defaults_cover_table3(defaults):
    assert set(defaults) == set(TABLE3_MODELS)


@pytest.mark.parametrize("model", TABLE3_MODELS)
def test_default_rate_rises_then_plateaus(defaults, model):
    coef = defaults[model]
    sat = coef.saturation_batch
    assert math.isfinite(sat) and sat <= 1024
    grid = np.arange(1, 1025, dtype=float)
    rates = np.array([single_gpu_rate(coef, b) for b in grid])
    assert np.all(np.diff(rates) >= -1e-9 * rates[1:]), "rate must not fall with batch"
    assert rates[-1] > 1.5 * rates[0], "rate must rise from batch 1"
    assert single_gpu_rate(coef, 2 * sat) == pytest.approx(single_gpu_rate(coef, sat))


@pytest.mark.parametrize("model", TABLE3_MODELS)
def test_default_spreading_never_beats_packing(defaults, model):
    coef = defaults[model]
    # Same GPUs, more nodes: never faster, at any batch.
    for w in (4.0, 16.0, 64.0, 256.0):
        task = Task(model, "train", w, 1)
        for n in (2, 4):
            packed = processing_rate(coef, task, Shape(1, n))
            spread = processing_rate(coef, task, Shape(n, 1))
            assert spread <= packed * (1 + 1e-9)
    # Small batch: no multi-GPU shape beats one GPU.
    small = Task(model, "train", 4.0, 1)
    solo = processing_rate(coef, small, Shape(1, 1))
    for shape in feasible_shapes(PLATFORM, batch=small.batch)[1:]:
        assert processing_rate(coef, small, shape) < solo


@pytest.mark.parametrize("model", TABLE3_MODELS)
def test_default_small_batches_lose_most_from_spreading(defaults, model):
    coef = defaults[model]

    def speedup(w: float) -> float:
        task = Task(model, "train", w, 1)
        return processing_rate(coef, task, Shape(4, 1)) / processing_rate(coef, task, Shape(1, 1))

    assert speedup(4.0) < speedup(4.0 * coef.saturation_batch)


@pytest.mark.parametrize("model", TABLE3_MODELS)
def test_default_inference_is_faster_than_training(defaults, model):
    coef = defaults[model]
    train = Task(model, "train", 32, 100)
    infer = Task(model, "infer", 32, 100)
    assert latency(coef, infer, Shape(1, 4)) < latency(coef, train, Shape(1, 4))
