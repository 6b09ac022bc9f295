"""Performance profiles (Dolan & Moré 2002) and the shifted geometric mean.

Time profile. For problem p (an instance and seed) and solver s (a method, with its
backend), t[p,s] is the run's wall time when the run *solved* p — its evaluated objective
is within ``tol`` of the reference (the best objective known for p, see
:func:`reference_values`) — and +inf otherwise. The ratio r[p,s] = t[p,s] / min_s t[p,s]
(+inf when no solver solved p), and the profile is

    rho_s(tau) = |{p : r[p,s] <= tau}| / |P|,

so rho_s(1) is the share of problems on which s was fastest, and rho_s(tau) for large tau
the share it solved at all. A problem a solver declares it does not take (status ``n/a``)
is no failure: its cell is NaN (:func:`mask_not_taken`) and that solver's shares are
over the problems it takes.

Gap profile. A ratio of gaps is undefined when the best gap is 0, which is the common
case; the gap profile is therefore the distribution of the gap to the reference itself:
rho_s(tau) = |{p : gap[p,s] <= tau}| / |P|, with a failed run (no valid solution) at +inf.

Shifted geometric mean of times with shift ``s`` (1 s here, as MIPLIB reports):
exp(mean(ln(t + s))) − s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from dlsched.files import atomic_path
from dlsched.gaps import relative_gap

NOT_TAKEN = "n/a"
"""Status of a run the method declares it does not take (not run, not a failure): such
pairs are left out of the profiles, and each solver's shares are over the problems it
takes."""
SOLVED_TOL = 1e-6
"""A run solved a problem when its gap to the reference is at most this (relative)."""
SHIFT = 1.0
"""Shift of the shifted geometric mean of times, in seconds."""
NOISE = 1e-12
"""Relative differences up to this are float summation noise and count as 0."""


def shifted_geometric_mean(values: Iterable[float], shift: float = SHIFT) -> float:
    """exp(mean(ln(v + shift))) − shift; NaN for no values."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(np.maximum(arr, 0.0) + shift))) - shift)


def reference_values(table: pd.DataFrame) -> pd.Series:
    """Best objective per instance: the best known value recorded with the runs, or any
    run's better objective. Indexed by ``instance``; uses column ``sense`` if present,
    else ``min``."""
    refs: dict[str, float] = {}
    for name, group in table.groupby("instance", sort=True):
        sense = group["sense"].iloc[0] if "sense" in group else "min"
        values = pd.concat([group["objective"], group.get("best_known", pd.Series(dtype=float))])
        values = values.dropna().astype(float)
        if len(values):
            refs[name] = float(values.min() if sense == "min" else values.max())
    return pd.Series(refs, dtype=float)


def gaps_to_reference(table: pd.DataFrame) -> pd.Series:
    """Gap of each row to its instance's reference (+inf without a valid objective).

    :func:`dlsched.gaps.relative_gap` with the objective sense; never negative here since the
    reference is at least as good as every run.
    """
    refs = reference_values(table)
    out = []
    for _, row in table.iterrows():
        obj, ref = row["objective"], refs.get(row["instance"])
        if obj is None or pd.isna(obj) or ref is None or pd.isna(ref):
            out.append(math.inf)
            continue
        sense = "min" if row.get("sense", "min") == "min" else "max"
        gap = relative_gap(float(obj), float(ref), sense)
        # differences at the level of float summation noise are no gap
        out.append(0.0 if gap is None or gap <= NOISE else gap)
    return pd.Series(out, index=table.index, dtype=float)


def solver_label(table: pd.DataFrame) -> pd.Series:
    """``method`` or ``method/backend``."""
    raw = table["backend"].astype(object)
    backend = raw.where(raw.notna(), "").astype(str)
    return table["method"].astype(str) + np.where(backend != "", "/" + backend, "")


def time_ratios(table: pd.DataFrame, tol: float = SOLVED_TOL) -> pd.DataFrame:
    """r[p,s]: rows are problems (instance, seed), columns are solvers."""
    frame = table.assign(solver=solver_label(table), gap=gaps_to_reference(table))
    frame["t"] = np.where(frame["gap"] <= tol, frame["wall_time"].astype(float), np.inf)
    t = frame.pivot_table(index=["instance", "seed"], columns="solver", values="t",
                          aggfunc="min", fill_value=np.inf)
    best = t.min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = t.div(best.replace(0.0, np.finfo(float).tiny), axis=0)
    ratios[~np.isfinite(best)] = np.inf
    return ratios


def mask_not_taken(matrix: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """``matrix`` (rows (instance, seed), columns solvers) with NaN where the table's run
    has status :data:`NOT_TAKEN`; solvers that take none of the problems are dropped."""
    if "status" not in table:
        return matrix
    out = matrix.copy()
    skipped = table[table["status"] == NOT_TAKEN]
    for (instance, seed), solver in zip(zip(skipped["instance"], skipped["seed"],
                                            strict=True), solver_label(skipped), strict=True):
        if solver not in out.columns:
            out[solver] = np.nan
        out.loc[(instance, seed), solver] = np.nan
    return out.dropna(axis=1, how="all")


def profile(matrix: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """rho_s(tau) for each tau (rows) and solver (columns) from a ratio or gap matrix;
    a solver's shares are over its problems (NaN cells: not taken, left out)."""
    data = {}
    for s in matrix.columns:
        values = matrix[s].to_numpy(dtype=float)
        n = int(np.count_nonzero(~np.isnan(values)))
        data[s] = [float(np.count_nonzero(values <= tau)) / n if n else math.nan
                   for tau in taus]
    return pd.DataFrame(data, index=pd.Index(list(taus), name="tau"))


def profile_steps(matrix: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Step-function points (sorted finite values, cumulative share of the problems the
    solver takes) per solver."""
    out = {}
    for s in matrix.columns:
        n = int(matrix[s].notna().sum())
        vals = np.sort(matrix[s].to_numpy(dtype=float))
        vals = vals[np.isfinite(vals)]
        out[s] = (vals, np.arange(1, len(vals) + 1) / n)
    return out


def plot_profile(matrix: pd.DataFrame, path: str | Path | BinaryIO, *, title: str, xlabel: str,
                 log_x: bool = True, floor: float | None = None) -> None:
    """Write the profile of ``matrix`` as a PNG (step plot, one line per solver).

    Solvers with identical curves share one line (labelled ``a = b``); solvers that never
    reach the reference (no finite value) are not drawn but listed under the legend as
    "never within any τ". The legend sits outside the axes, on the right.

    Parameters
    ----------
    matrix
        Ratios or gaps: rows are problems, columns solvers (+inf = not solved).
    path
        PNG file to write (a path, or a binary file object).
    title, xlabel
        Plot title and x-axis label.
    log_x
        Log-scale x axis.
    floor
        Values below it (a gap of 0 on a log axis) are drawn at it; say so in ``xlabel``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finite = matrix.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    top = float(finite.max()) if finite.size else 1.0
    curves: dict[tuple, list[str]] = {}
    never: list[str] = []
    for s, (x, y) in profile_steps(matrix).items():
        if floor is not None:
            x = np.maximum(x, floor)
        if not len(x):
            never.append(str(s))
            continue
        curves.setdefault((tuple(np.round(x, 12)), tuple(y)), []).append(str(s))
    fig, ax = plt.subplots(figsize=(8.6, 4.2))
    styles = ("-", "--", ":", "-.")
    left = floor if floor is not None else 1.0
    right = max(top * 1.5, left * 10)
    for i, ((x, y), names) in enumerate(curves.items()):
        xs = np.concatenate([[left], np.asarray(x), [right]])
        ys = np.concatenate([[0.0], np.asarray(y), [y[-1]]])
        ax.step(xs, ys, where="post", label="\n= ".join(names),
                linestyle=styles[i % len(styles)], linewidth=1.8, color=f"C{i % 10}")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    taken = matrix.notna().sum()
    ax.set_ylabel(f"share of {len(matrix)} problems" if (taken == len(matrix)).all()
                  else f"share of the problems it takes (of {len(matrix)})")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if never:
        handles.append(plt.Line2D([], [], linestyle="none"))
        labels.append("never within any τ:\n  " + "\n  ".join(never))
    if handles:
        ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0, frameon=False)
    fig.tight_layout()
    if isinstance(path, (str, Path)):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110, format="png")
    else:
        fig.savefig(path, dpi=110, format="png")
    plt.close(fig)
