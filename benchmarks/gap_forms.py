"""How a group of benchmark runs states its distance to the best known value.

Each problem declares its gap form (:attr:`dlsched.problems.base.Problem.report_gap`):
relative (:func:`dlsched.gaps.relative_gap`, in percent) only when every objective and
best known value of the group has one sign, else the absolute difference in the
objective's units or in those of the metric the problem compares first (GENIE: on-time
tasks). Used by the summaries (:mod:`dlsched.benchmarks.report`) and the HTML page.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from .profiles import gaps_to_reference, reference_values


@dataclass(frozen=True)
class GapMode:
    """How one group's gaps are stated.

    Attributes
    ----------
    kind
        ``"relative"`` or ``"absolute"``.
    on
        ``None`` (the objective) or the name of a :meth:`Problem.report_metrics` entry.
    reason
        Why this form was chosen (printed under the group's table).
    """

    kind: str
    on: str | None
    reason: str

    @property
    def columns(self) -> tuple[str, str]:
        if self.kind == "relative":
            return "mean gap %", "max gap %"
        unit = f" ({self.on})" if self.on else " (objective units)"
        return f"mean gap{unit}", f"max gap{unit}"


def _problem(name: str):
    from dlsched.problems import base

    return base._PROBLEMS.get(name)


def metrics_frame(group: pd.DataFrame) -> pd.DataFrame:
    """The ``metrics`` column (JSON text per run) as one column per metric.

    Parameters
    ----------
    group
        The runs of one (suite, problem, time limit) group of a results table.

    Returns
    -------
    pandas.DataFrame
        Same index as ``group``; NaN where a run has no such metric.
    """
    if "metrics" not in group:
        return pd.DataFrame(index=group.index)
    rows = []
    for text in group["metrics"]:
        try:
            rows.append(json.loads(text) if isinstance(text, str) and text else {})
        except json.JSONDecodeError:
            rows.append({})
    return pd.DataFrame(rows, index=group.index, dtype=float)


def gap_mode(group: pd.DataFrame) -> GapMode:
    """The gap form of a group (one suite, problem and time limit).

    The problem's :attr:`report_gap` (``relative`` for an unregistered problem) decides;
    a relative gap is further allowed only when all objectives and best known values of
    the group have one sign (then |a − b| / max(|a|, |b|) ≤ 1); otherwise the absolute
    difference is used.

    Parameters
    ----------
    group
        The runs of one (suite, problem, time limit) group of a results table.

    Returns
    -------
    GapMode
    """
    problem = _problem(str(group["problem"].iloc[0]))
    kind = getattr(problem, "report_gap", "relative")
    on = getattr(problem, "report_gap_on", None)
    if kind != "relative":
        if on and on not in metrics_frame(group).columns:
            return GapMode("absolute", None, f"gap: difference to the best value, in the "
                           f"objective's units (the problem compares {on} first, but these "
                           f"runs carry no such metric, e.g. a competition's scores)")
        what = f"{on} (higher is better)" if on else "the objective's units"
        return GapMode("absolute", on, f"gap: difference to the best run, in {what}; the "
                       f"problem declares a relative gap meaningless (its objective "
                       + ("is lexicographic)" if on else "crosses zero)"))
    values = pd.concat([group["objective"], group.get("best_known", pd.Series(dtype=float))])
    values = values.dropna().astype(float)
    if len(values) and values.min() < 0 < values.max():
        return GapMode("absolute", None, "gap: difference to the best value, in the "
                       "objective's units (objectives of both signs here: a relative gap "
                       "would be meaningless)")
    return GapMode("relative", None, "gap: relative, |objective − best| / "
                   "max(|objective|, |best|) (dlsched.gaps.relative_gap), in percent")


def group_gaps(group: pd.DataFrame, mode: GapMode) -> pd.Series:
    """Gap of each run to the best of its instance in the form ``mode``.

    Parameters
    ----------
    group
        The runs of one (suite, problem, time limit) group of a results table.
    mode
        From :func:`gap_mode`.

    Returns
    -------
    pandas.Series
        Relative: :func:`dlsched.benchmarks.profiles.gaps_to_reference`; absolute: how
        much worse than the best (≥ 0); +inf for a run without a solution.
    """
    if mode.kind == "relative":
        return gaps_to_reference(group)
    sense = str(group["sense"].iloc[0]) if "sense" in group else "min"
    if mode.on:  # a metric where higher is better (the problem's compared quantity)
        values = metrics_frame(group).get(mode.on, pd.Series(math.nan, index=group.index))
        values = values.where(group["objective"].notna())
        best = values.groupby(group["instance"]).transform("max")
        diff = best - values
    else:
        refs = reference_values(group)
        best = group["instance"].map(refs)
        values = group["objective"].astype(float)
        diff = values - best if sense == "min" else best - values
    return diff.astype(float).fillna(math.inf).clip(lower=0.0)
