"""Metrics of a finished schedule that simulators report: GENIE's QoS guarantee (Eq. 14),
normalized latency (Eqs. 15-16) and makespan (docs/genie-model.md). They read arrival,
start, finish and deadline times only, so they apply to any problem's jobs."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def _as_1d(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: at least one task is needed")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} holds a non-finite value at index {int(np.argmin(np.isfinite(arr)))}"
        )
    return arr


def _same_length(**arrays: np.ndarray) -> None:
    lengths = {k: v.size for k, v in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"arrays differ in length: {lengths}")


def qos_guarantee_pct(arrival: ArrayLike, finish: ArrayLike, deadline: ArrayLike) -> float:
    """QoS-guarantee percentage (Eq. 14), in percent.

    A task counts as met when ``finish <= deadline`` and its deadline lies after its
    arrival; a deadline equal to the arrival is an urgent task (e = 0), always missed.
    """
    arr = _as_1d("arrival", arrival)
    fin = _as_1d("finish", finish)
    dl = _as_1d("deadline", deadline)
    _same_length(arrival=arr, finish=fin, deadline=dl)
    met = (fin <= dl) & (dl > arr)
    return 100.0 * float(np.count_nonzero(met)) / met.size


def normalized_latency(start: ArrayLike, finish: ArrayLike, solo: ArrayLike) -> np.ndarray:
    """Normalized latency ``L_wall / Lat(t, <1,1>)`` of each task (Eq. 16).

    Reading: ``L_wall`` is "the walltime of the task under a selected placement during
    runtime", so ``finish - start`` (waiting excluded). Pass arrivals as ``start`` for
    the waiting-inclusive variant.
    """
    st = _as_1d("start", start)
    fin = _as_1d("finish", finish)
    so = _as_1d("solo", solo)
    _same_length(start=st, finish=fin, solo=so)
    if np.any(fin < st):
        i = int(np.argmax(fin < st))
        raise ValueError(f"task {i}: finish = {fin[i]} < start = {st[i]}")
    if np.any(so <= 0):
        i = int(np.argmax(so <= 0))
        raise ValueError(f"task {i}: solo latency = {so[i]}: must be > 0")
    return (fin - st) / so


def average_normalized_latency(start: ArrayLike, finish: ArrayLike, solo: ArrayLike) -> float:
    """Average normalized latency (Eq. 15): the mean of :func:`normalized_latency`."""
    return float(np.mean(normalized_latency(start, finish, solo)))


def makespan(arrival: ArrayLike, finish: ArrayLike) -> float:
    """Makespan: last completion minus first arrival (our reading of the paper's M)."""
    arr = _as_1d("arrival", arrival)
    fin = _as_1d("finish", finish)
    _same_length(arrival=arr, finish=fin)
    return float(fin.max() - arr.min())
