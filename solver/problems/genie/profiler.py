"""GENIE's lightweight profiler: fit the prediction-model coefficients by least squares.

The paper (seed 000, Sec. 5.1.5) profiles each task type with ``B`` single-GPU runs at
different batch sizes (to fit the ``k_i`` of Eq. 7) and ``N + G`` multi-GPU runs at a
fixed global batch (to fit gamma and lambda of Eq. 8). This module does the regression.

Measurements table (a :class:`pandas.DataFrame` or a CSV path), one row per run:

=================  ========  ==========================================================
column             type      meaning
=================  ========  ==========================================================
``model``          str       task type, e.g. ``"resnet50"``
``batch``          float     global batch size w_bat of the run (> 0)
``nodes``          int       d_node of the placement (>= 1)
``gpus_per_node``  int       d_gpn of the placement (>= 1)
``rate``           float     measured processing rate, samples/s (> 0)
``kind``           str       optional: ``"train"`` (default) or ``"infer"``
=================  ========  ==========================================================

Other columns are ignored. Single-GPU training rows fit Eq. 7; multi-GPU training rows
fit Eq. 8 (any global batch is accepted, the paper uses one); inference rows, if any,
fit the inference-to-training speed ratio (inference has no Comm term).

Fitting choices (ours; the paper only says "regression"):

* residuals are relative, ``(predicted - measured) / measured``, so that every run
  weighs the same whatever its rate (the paper reports relative prediction errors);
* the quadratic is shape-constrained, ``k0 >= 0, k1 >= 0, k2 <= 0``, so that the rate
  rises and then plateaus (Observation 1) and never goes negative at small batches;
* ``0 <= lambda <= max_lambda`` (1 by default: a same-node peer never costs more than a
  peer on another node, Observation 4) and ``gamma >= 0``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.optimize import lsq_linear

from .coefficients import ModelCoefficients
from .model import KINDS, Shape, comm, single_gpu_rate

__all__ = [
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "CommFit",
    "FitError",
    "ProfileFit",
    "SingleGpuFit",
    "fit_comm",
    "fit_profile",
    "fit_profiles",
    "fit_single_gpu",
    "read_table",
]

REQUIRED_COLUMNS: tuple[str, ...] = ("model", "batch", "nodes", "gpus_per_node", "rate")
OPTIONAL_COLUMNS: tuple[str, ...] = ("kind",)


@dataclass(frozen=True)
class FitError:
    """How well a fit reproduces its own measurements.

    Attributes
    ----------
    rmse : float
        Root-mean-square error of the predicted rates, samples/s.
    max_rel_error : float
        Largest ``|predicted - measured| / measured`` (a fraction, 0.05 = 5 %).
    n_points : int
        Number of measurements used.
    """

    rmse: float
    max_rel_error: float
    n_points: int

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> FitError:
        """Compute the errors of ``predicted`` against ``measured``."""
        diff = predicted - measured
        return cls(
            rmse=float(np.sqrt(np.mean(diff**2))),
            max_rel_error=float(np.max(np.abs(diff) / measured)),
            n_points=int(measured.size),
        )

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready mapping."""
        return {"rmse": self.rmse, "max_rel_error": self.max_rel_error, "n_points": self.n_points}


@dataclass(frozen=True)
class SingleGpuFit:
    """Fitted quadratic of Eq. 7 and its trusted batch range.

    Attributes
    ----------
    k0, k1, k2 : float
        Coefficients of ``q(b) = k0 + k1*b + k2*b**2``, samples/s.
    b_min, b_sat : float
        Smallest and largest profiled batch (see :class:`ModelCoefficients`).
    error : FitError
        Fit error over the single-GPU runs, with the plateau and ramp applied.
    """

    k0: float
    k1: float
    k2: float
    b_min: float
    b_sat: float
    error: FitError

    def coefficients(self, **extra: float) -> ModelCoefficients:
        """Model coefficients with this sPR and the given other fields."""
        return ModelCoefficients(
            k0=self.k0, k1=self.k1, k2=self.k2, b_min=self.b_min, b_sat=self.b_sat, **extra
        )


@dataclass(frozen=True)
class CommFit:
    """Fitted gamma and lambda of Eq. 8.

    Attributes
    ----------
    gamma, lam : float
        Communication coefficient and balance factor.
    error : FitError
        Error of the predicted multi-GPU rates (Eq. 5 with the fitted sPR).
    """

    gamma: float
    lam: float
    error: FitError


@dataclass(frozen=True)
class ProfileFit:
    """Everything :func:`fit_profile` learned about one task type.

    Attributes
    ----------
    model : str
        Task type.
    coefficients : ModelCoefficients
        Ready for :mod:`dlsched.problems.genie.model`.
    single_gpu : SingleGpuFit
        The Eq. 7 fit.
    comm : CommFit or None
        The Eq. 8 fit (``None`` when it was not requested).
    infer_error : FitError or None
        Error of the inference rows (``None`` without inference rows).
    """

    model: str
    coefficients: ModelCoefficients
    single_gpu: SingleGpuFit
    comm: CommFit | None
    infer_error: FitError | None


# --------------------------------------------------------------------------- table


def read_table(table: pd.DataFrame | str | os.PathLike[str]) -> pd.DataFrame:
    """Load and check a measurements table (see the module docstring for the columns).

    Returns
    -------
    pandas.DataFrame
        A copy with the required columns typed, ``kind`` filled with ``"train"`` where
        absent, and the original index kept (error messages name rows by it).

    Raises
    ------
    ValueError
        On a missing column, an empty table, or a row with a bad value; the message
        names the column and the row.
    """
    df = pd.read_csv(table) if isinstance(table, str | os.PathLike) else table.copy()
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"table must be a pandas DataFrame or a CSV path, got {type(table)}")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(
            f"table is missing column(s) {missing}: expected columns {list(REQUIRED_COLUMNS)} "
            f"(optional: {list(OPTIONAL_COLUMNS)})"
        )
    if len(df) == 0:
        raise ValueError("table has no rows")
    if "kind" not in df.columns:
        df["kind"] = "train"
    for col in ("batch", "rate", "nodes", "gpus_per_node"):
        values = pd.to_numeric(df[col], errors="coerce")
        for idx, raw, num in zip(df.index, df[col], values, strict=True):
            if not (math.isfinite(num) and num > 0):
                raise ValueError(f"table row {idx}: {col} = {raw!r}: must be a number > 0")
            if col in ("nodes", "gpus_per_node") and num != int(num):
                raise ValueError(f"table row {idx}: {col} = {raw!r}: must be a whole number")
        df[col] = values.astype(int) if col in ("nodes", "gpus_per_node") else values.astype(float)
    for idx, model, kind in zip(df.index, df["model"], df["kind"], strict=True):
        if not isinstance(model, str) or not model:
            raise ValueError(f"table row {idx}: model = {model!r}: must be a non-empty string")
        if kind not in KINDS:
            raise ValueError(f"table row {idx}: kind = {kind!r}: expected one of {list(KINDS)}")
    return df


# --------------------------------------------------------------------------- fits


def _positive_1d(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values, dtype=float).reshape(-1)
    bad = ~(np.isfinite(arr) & (arr > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name}[{i}] = {arr[i]}: must be a finite number > 0")
    return arr


def fit_single_gpu(batch: ArrayLike, rate: ArrayLike) -> SingleGpuFit:
    """Fit the quadratic sPR of Eq. 7 to single-GPU runs.

    Parameters
    ----------
    batch : array_like
        Batch size of each run (> 0), at least three distinct values.
    rate : array_like
        Measured rate of each run, samples/s (> 0).

    Returns
    -------
    SingleGpuFit
        Coefficients minimizing the sum of squared relative errors under
        ``k0 >= 0, k1 >= 0, k2 <= 0``; ``b_min``/``b_sat`` are the smallest and largest
        batch measured.

    Raises
    ------
    ValueError
        On non-positive values, mismatched lengths, or fewer than three distinct batches.
    """
    b = _positive_1d("batch", batch)
    r = _positive_1d("rate", rate)
    if b.size != r.size:
        raise ValueError(f"batch has {b.size} values but rate has {r.size}")
    distinct = np.unique(b).size
    if distinct < 3:
        raise ValueError(
            f"{distinct} distinct single-GPU batch size(s): at least 3 are needed to fit "
            "the quadratic of Eq. 7"
        )
    # Scale the unknowns so that the columns are O(1): k_i = c_i * r_scale / b_scale**i.
    b_scale, r_scale = float(b.max()), float(r.max())
    x = b / b_scale
    design = np.column_stack([np.ones_like(x), x, x * x]) * (r_scale / r)[:, None]
    sol = lsq_linear(design, np.ones_like(r), bounds=([0.0, 0.0, -np.inf], [np.inf, np.inf, 0.0]))
    c0, c1, c2 = sol.x
    k0 = float(c0 * r_scale)
    k1 = float(c1 * r_scale / b_scale)
    k2 = float(c2 * r_scale / b_scale**2)
    coef = ModelCoefficients(k0=k0, k1=k1, k2=k2, b_min=float(b.min()), b_sat=float(b.max()))
    predicted = np.array([single_gpu_rate(coef, bi) for bi in b])
    return SingleGpuFit(k0, k1, k2, coef.b_min, coef.b_sat, FitError.of(predicted, r))


def fit_comm(
    batch: ArrayLike,
    nodes: ArrayLike,
    gpus_per_node: ArrayLike,
    rate: ArrayLike,
    single_gpu: SingleGpuFit,
    *,
    max_lambda: float | None = 1.0,
) -> CommFit:
    """Fit gamma and lambda of Eq. 8 to multi-GPU training runs.

    With ``x1 = (a-1)*g / (a*g-1)`` and ``x2 = (g-1) / (a*g-1)`` for a run on ``a``
    nodes with ``g`` GPUs each, Eq. 5 predicts
    ``rate = (a*g - gamma*x1 - gamma*lam*x2) * sPR(w_bat / (a*g))``, which is linear in
    ``gamma`` and ``mu = gamma*lam``; the fit is a bounded linear least squares on
    relative residuals, with sPR taken from ``single_gpu``.

    Parameters
    ----------
    batch, nodes, gpus_per_node, rate : array_like
        Global batch, placement and measured rate of each run; every run must use more
        than one GPU.
    single_gpu : SingleGpuFit
        The Eq. 7 fit of the same task type.
    max_lambda : float or None
        Upper bound on lambda (default 1: intra-node peers cost no more than inter-node
        ones); ``None`` lets lambda take any value >= 0.

    Raises
    ------
    ValueError
        On bad values, a single-GPU run, or runs that cannot identify both parameters
        (at least one run with ``nodes > 1`` and one with ``gpus_per_node > 1``).
    """
    w = _positive_1d("batch", batch)
    a = _positive_1d("nodes", nodes)
    g = _positive_1d("gpus_per_node", gpus_per_node)
    r = _positive_1d("rate", rate)
    if not (w.size == a.size == g.size == r.size):
        raise ValueError(
            f"lengths differ: batch {w.size}, nodes {a.size}, gpus_per_node {g.size}, rate {r.size}"
        )
    n = a * g
    if np.any(n < 2):
        i = int(np.argmax(n < 2))
        raise ValueError(f"run {i} uses one GPU: Comm (Eq. 8) is fitted on multi-GPU runs only")
    if not np.any(a > 1):
        raise ValueError("no run with nodes > 1: gamma (Eq. 8) cannot be fitted")
    if not np.any(g > 1):
        raise ValueError("no run with gpus_per_node > 1: lambda (Eq. 8) cannot be fitted")
    sgpu = single_gpu.coefficients()
    s = np.array([single_gpu_rate(sgpu, wi / ni) for wi, ni in zip(w, n, strict=True)])
    x1 = (a - 1) * g / (n - 1)
    x2 = (g - 1) / (n - 1)
    # Relative residual: (n*s - gamma*x1*s - mu*x2*s) / r - 1.
    target = n * s / r - 1.0
    if max_lambda is not None and max_lambda < 0:
        raise ValueError(f"max_lambda = {max_lambda}: must be >= 0")
    if max_lambda is None:
        design = np.column_stack([x1 * s / r, x2 * s / r])  # unknowns (gamma, mu) >= 0
        gamma, mu = lsq_linear(design, target, bounds=(0.0, np.inf)).x
    elif max_lambda == 0:
        design = (x1 * s / r)[:, None]  # lambda = 0: gamma only
        (gamma,) = lsq_linear(design, target, bounds=(0.0, np.inf)).x
        mu = 0.0
    else:
        # 0 <= mu <= max_lambda*gamma as a box: v = gamma - mu/max_lambda >= 0 and mu >= 0,
        # so that gamma*x1 + mu*x2 = v*x1 + mu*(x1/max_lambda + x2).
        design = np.column_stack([x1 * s / r, (x1 / max_lambda + x2) * s / r])
        v, mu = lsq_linear(design, target, bounds=(0.0, np.inf)).x
        gamma = v + mu / max_lambda
    gamma = float(gamma)
    lam = float(mu / gamma) if gamma > 0 else 0.0
    if max_lambda is not None:
        lam = min(lam, max_lambda)  # guard against rounding just above the bound
    coef = sgpu.replace(gamma=gamma, lam=lam)
    predicted = np.array(
        [
            (ni - comm(coef, Shape(int(ai), int(gi)))) * si
            for ai, gi, ni, si in zip(a, g, n, s, strict=True)
        ]
    )
    return CommFit(gamma=gamma, lam=lam, error=FitError.of(predicted, r))


def fit_profile(
    table: pd.DataFrame | str | os.PathLike[str],
    model: str | None = None,
    *,
    nu: float = 0.0,
    with_comm: bool = True,
    max_lambda: float | None = 1.0,
) -> ProfileFit:
    """Fit all coefficients of one task type from a measurements table.

    Parameters
    ----------
    table : DataFrame or path
        Measurements (see the module docstring).
    model : str, optional
        Task type to fit; required when the table holds more than one.
    nu : float
        Start-up overhead of Eq. 4 to store in the coefficients (not fitted).
    with_comm : bool
        Fit gamma and lambda (needs multi-GPU training rows); otherwise both are 0.
    max_lambda : float or None
        Passed to :func:`fit_comm`.

    Raises
    ------
    ValueError
        On a bad table, an unknown or ambiguous model, or too few rows of a kind.
    """
    df = read_table(table)
    models = sorted(df["model"].unique())
    if model is None:
        if len(models) != 1:
            raise ValueError(f"table holds models {models}: pass model=... to choose one")
        model = models[0]
    elif model not in models:
        raise ValueError(f"model {model!r} not in table (found {models})")
    rows = df[df["model"] == model]
    train = rows[rows["kind"] == "train"]
    single = train[(train["nodes"] == 1) & (train["gpus_per_node"] == 1)]
    if single["batch"].nunique() < 3:
        raise ValueError(
            f"model {model!r}: {single['batch'].nunique()} distinct batch size(s) among "
            "single-GPU training rows (nodes = gpus_per_node = 1): at least 3 are needed "
            "to fit Eq. 7"
        )
    sg = fit_single_gpu(single["batch"], single["rate"])
    comm_fit: CommFit | None = None
    gamma = lam = 0.0
    if with_comm:
        multi = train[train["nodes"] * train["gpus_per_node"] > 1]
        if len(multi) < 2:
            raise ValueError(
                f"model {model!r}: {len(multi)} multi-GPU training row(s): at least 2 are "
                "needed to fit gamma and lambda of Eq. 8 (or pass with_comm=False)"
            )
        try:
            comm_fit = fit_comm(
                multi["batch"],
                multi["nodes"],
                multi["gpus_per_node"],
                multi["rate"],
                sg,
                max_lambda=max_lambda,
            )
        except ValueError as exc:
            raise ValueError(f"model {model!r}: {exc}") from exc
        gamma, lam = comm_fit.gamma, comm_fit.lam
    coef = sg.coefficients(gamma=gamma, lam=lam, nu=nu)
    infer = rows[rows["kind"] == "infer"]
    infer_error: FitError | None = None
    if len(infer):
        # Inference has no Comm term: rate = speedup * n * sPR(w/n); least squares on
        # relative residuals gives speedup = sum(p/r) / sum((p/r)**2).
        n = (infer["nodes"] * infer["gpus_per_node"]).to_numpy(dtype=float)
        r = infer["rate"].to_numpy(dtype=float)
        p = n * np.array([single_gpu_rate(coef, b) for b in infer["batch"].to_numpy() / n])
        q = p / r
        speedup = float(q.sum() / (q * q).sum())
        coef = coef.replace(infer_speedup=speedup)
        infer_error = FitError.of(speedup * p, r)
    return ProfileFit(model, coef, sg, comm_fit, infer_error)


def fit_profiles(
    table: pd.DataFrame | str | os.PathLike[str], **options: float | bool | None
) -> dict[str, ProfileFit]:
    """Run :func:`fit_profile` for every model of the table (same keyword options)."""
    df = read_table(table)
    return {m: fit_profile(df, m, **options) for m in sorted(df["model"].unique())}  # type: ignore[arg-type]
