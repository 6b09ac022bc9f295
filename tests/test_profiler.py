"""GENIE's lightweight profiler (solver/problems/genie/profiler.py), paper seed 000 Sec. 5.1.5.

Synthetic measurements are generated here from the model's equations written out with
numpy, independently of the code under test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dlsched.problems.genie.profiler import (
    fit_comm,
    fit_profile,
    fit_profiles,
    fit_single_gpu,
    read_table,
)

# True coefficients: q(b) = 20 + 3 b - 0.01 b^2 (vertex 150), gamma 0.5, lambda 0.4.
K0, K1, K2, GAMMA, LAM = 20.0, 3.0, -0.01, 0.5, 0.4
BATCHES = [8, 16, 32, 64, 96, 128]  # B = 6 single-GPU runs, all below the vertex
W_FIXED = 256  # global batch of the N + G runs
SHAPES = [(1, 2), (1, 3), (1, 4), (2, 1), (3, 1), (4, 1), (2, 2)]  # (nodes, gpus_per_node)


def _q(b: np.ndarray | float) -> np.ndarray:
    return K0 + K1 * np.asarray(b, dtype=float) + K2 * np.asarray(b, dtype=float) ** 2


def _comm(a: int, g: int) -> float:
    return GAMMA * ((a - 1) * g + LAM * (g - 1)) / (a * g - 1)


def synthetic_table(noise: float, seed: int = 7, model: str = "toy") -> pd.DataFrame:
    """B single-GPU runs and N + G multi-GPU runs, with multiplicative Gaussian noise."""
    rng = np.random.default_rng(seed)
    rows = [dict(model=model, batch=b, nodes=1, gpus_per_node=1, rate=_q(b)) for b in BATCHES]
    for a, g in SHAPES:
        n = a * g
        rate = (n - _comm(a, g)) * _q(W_FIXED / n)
        rows.append(dict(model=model, batch=W_FIXED, nodes=a, gpus_per_node=g, rate=rate))
    df = pd.DataFrame(rows)
    df["rate"] = df["rate"] * (1.0 + noise * rng.standard_normal(len(df)))
    return df


def test_exact_recovery_without_noise():
    fit = fit_profile(synthetic_table(noise=0.0))
    c = fit.coefficients
    assert (c.k0, c.k1, c.k2) == pytest.approx((K0, K1, K2), rel=1e-6)
    assert (c.gamma, c.lam) == pytest.approx((GAMMA, LAM), rel=1e-6)
    assert fit.single_gpu.error.max_rel_error < 1e-8
    assert fit.comm is not None and fit.comm.error.max_rel_error < 1e-8
    assert (c.b_min, c.b_sat) == (8.0, 128.0)


def test_recovery_with_one_percent_noise():
    # 1 % multiplicative noise: predicted rates within 3 % of the true model over the
    # profiled range, gamma and lambda within 0.1.
    fit = fit_profile(synthetic_table(noise=0.01, seed=2024))
    c = fit.coefficients
    b = np.linspace(8, 128, 25)
    fitted = c.k0 + c.k1 * b + c.k2 * b**2
    assert np.max(np.abs(fitted / _q(b) - 1)) < 0.03
    assert abs(c.gamma - GAMMA) < 0.1
    assert abs(c.lam - LAM) < 0.1
    assert fit.single_gpu.error.max_rel_error < 0.05
    assert fit.comm is not None and fit.comm.error.max_rel_error < 0.05


def test_fit_is_deterministic():
    table = synthetic_table(noise=0.02, seed=11)
    assert fit_profile(table) == fit_profile(table.copy())


def test_shape_constraints_hold_on_convex_data():
    # Convex data (rate ~ b^2) would give k2 > 0 unconstrained; the fit keeps k2 <= 0.
    b = np.array([4.0, 8.0, 16.0, 32.0])
    sg = fit_single_gpu(b, 1.0 + b**2)
    assert sg.k0 >= 0 and sg.k1 >= 0 and sg.k2 <= 0


def test_lambda_bound_and_unbounded():
    # Spreading cheaper than packing in the data (lambda = 2): bounded fit stops at 1.
    rows = [dict(model="m", batch=b, nodes=1, gpus_per_node=1, rate=_q(b)) for b in BATCHES]
    for a, g in [(1, 2), (1, 4), (2, 1), (4, 1)]:
        n = a * g
        comm = 0.4 * ((a - 1) * g + 2.0 * (g - 1)) / (n - 1)
        rows.append(
            dict(model="m", batch=256, nodes=a, gpus_per_node=g, rate=(n - comm) * _q(256 / n))
        )
    table = pd.DataFrame(rows)
    assert fit_profile(table).coefficients.lam <= 1.0
    free = fit_profile(table, max_lambda=None).coefficients
    assert free.lam == pytest.approx(2.0, rel=1e-6)
    assert free.gamma == pytest.approx(0.4, rel=1e-6)


def test_inference_speedup_is_fitted():
    table = synthetic_table(noise=0.0)
    infer = pd.DataFrame(
        [
            # inference: no Comm, 2.5 x the training rate
            dict(model="toy", kind="infer", batch=64, nodes=1, gpus_per_node=1, rate=2.5 * _q(64)),
            dict(
                model="toy", kind="infer", batch=64, nodes=2, gpus_per_node=2, rate=4 * 2.5 * _q(16)
            ),
        ]
    )
    table["kind"] = "train"
    fit = fit_profile(pd.concat([table, infer], ignore_index=True))
    assert fit.coefficients.infer_speedup == pytest.approx(2.5, rel=1e-6)
    assert fit.infer_error is not None and fit.infer_error.max_rel_error < 1e-8


def test_csv_path_and_several_models(tmp_path):
    table = pd.concat(
        [synthetic_table(0.0, model="a"), synthetic_table(0.0, model="b")], ignore_index=True
    )
    path = tmp_path / "runs.csv"
    table.to_csv(path, index=False)
    fits = fit_profiles(path)
    assert sorted(fits) == ["a", "b"]
    assert fits["a"].coefficients.gamma == pytest.approx(GAMMA, rel=1e-6)
    with pytest.raises(ValueError, match="pass model="):
        fit_profile(path)
    assert fit_profile(str(path), "b").model == "b"


# --------------------------------------------------------------------------- bad tables


def test_missing_column():
    with pytest.raises(ValueError, match=r"missing column\(s\) \['rate'\]"):
        read_table(synthetic_table(0.0).drop(columns="rate"))


def test_non_positive_rate_names_the_row():
    table = synthetic_table(0.0)
    table.loc[2, "rate"] = -1.0
    with pytest.raises(ValueError, match=r"row 2: rate = -1\.0: must be a number > 0"):
        fit_profile(table)


def test_non_integer_nodes_and_bad_kind():
    table = synthetic_table(0.0).astype({"nodes": float})
    table.loc[7, "nodes"] = 1.5
    with pytest.raises(ValueError, match="row 7: nodes"):
        read_table(table)
    table = synthetic_table(0.0)
    table["kind"] = "train"
    table.loc[0, "kind"] = "serve"
    with pytest.raises(ValueError, match="row 0: kind = 'serve'"):
        read_table(table)


def test_too_few_single_gpu_rows():
    table = synthetic_table(0.0)
    table = table[~((table["nodes"] == 1) & (table["gpus_per_node"] == 1) & (table["batch"] > 16))]
    with pytest.raises(ValueError, match="at least 3 are needed"):
        fit_profile(table)


def test_comm_needs_both_directions():
    table = synthetic_table(0.0)
    packed_only = table[table["nodes"] == 1]
    with pytest.raises(ValueError, match="nodes > 1: gamma"):
        fit_profile(packed_only)
    # without the Comm fit the same table is fine
    assert fit_profile(packed_only, with_comm=False).coefficients.gamma == 0.0
    with pytest.raises(ValueError, match="one GPU"):
        fit_comm([8], [1], [1], [10.0], fit_single_gpu(BATCHES, _q(BATCHES)))


def test_empty_table():
    with pytest.raises(ValueError, match="no rows"):
        read_table(synthetic_table(0.0).iloc[0:0])
