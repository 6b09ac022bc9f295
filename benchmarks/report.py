"""Summaries of a results table: per problem and method, counts, gaps, metrics, times.

For each (suite, problem, time limit) group of runs and each solver (method, or
method/backend for exact methods):

- ``runs``; ``solution``: runs that returned a valid decision; ``optimal``: runs whose
  status is ``optimal`` (proven by the method's own bound); ``best``: runs whose objective
  is within ``tol`` of the reference (the best value known for the instance: the library's
  best known value or any run's better objective); ``failed``: runs without a decision
  (no solution in time, infeasible, invalid input, error, crash, killed, cpu_limit);
- the gap to the reference over runs with a solution, in the form the problem declares
  (:attr:`dlsched.problems.base.Problem.report_gap`, see :func:`gap_mode`):
  ``mean gap %`` / ``max gap %`` (relative, :func:`dlsched.gaps.relative_gap`) only when
  every objective and reference of the group has one sign, so it never exceeds 100 %;
  otherwise ``mean gap (abs)`` / ``max gap (abs)``, the difference in the objective's
  units, or in the units of the metric the problem compares first (GENIE: on-time tasks);
- ``mean <metric>``: the means of :meth:`~dlsched.problems.base.Problem.report_metrics`
  over runs with a solution (Liquid: network cost and the score's parts; GENIE: on-time
  tasks and CER; Horus: GPU requests placed and cost; SCHED²: execution effectiveness and
  makespan), read from the table's ``metrics`` column;
- ``sgm time s``: shifted geometric mean of wall time over all runs with a recorded time,
  shift 1 s (a failed run counts with its wall time, at most its hard limit; a run that
  raised an error records none); ``max time s``; both printed in seconds, 3 decimals.

Peak memory is not summarized: every run is a process forked from the runner, so its
peak resident size includes the interpreter and the loaded libraries and, for the
heuristics, measured that rather than the method (the table keeps ``peak_rss_mb``).

Profiles (:mod:`dlsched.benchmarks.profiles`) per group: time and gap, as PNG and CSV.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dlsched.files import write_table, write_text
from dlsched.markdown import markdown_table

from .profiles import (
    SHIFT,
    SOLVED_TOL,
    gaps_to_reference,
    plot_profile,
    profile,
    reference_values,
    shifted_geometric_mean,
    solver_label,
    time_ratios,
)

TIME_TAUS = (1, 2, 5, 10, 100, 1000)
GAP_TAUS = (0.0, 1e-6, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.5)
FORMATS = {"sgm time s": ".3f", "max time s": ".3f", "mean gap %": ".2f", "max gap %": ".2f"}
"""Fixed formats of the printed columns (others: 4 significant digits)."""


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
        unit = f" ({self.on})" if self.on else " (abs)"
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


def summarize(table: pd.DataFrame, tol: float = SOLVED_TOL) -> pd.DataFrame:
    """One row per (suite, problem, time limit, solver) with the statistics above.

    Parameters
    ----------
    table
        A results table (columns of :data:`dlsched.benchmarks.runner.COLUMNS`; ``metrics``
        optional).
    tol
        Relative distance to the reference at which a run counts as reaching it.

    Returns
    -------
    pandas.DataFrame
        Gap columns per group's form (NaN in the other form's columns), ``mean <metric>``
        columns, times last.
    """
    if table.empty:
        return pd.DataFrame()
    frames = []
    for _, group in _groups(table):
        mode = gap_mode(group)
        mean_col, max_col = mode.columns
        metrics = metrics_frame(group)
        frame = group.assign(solver=solver_label(group), gap=gaps_to_reference(group),
                             shown=group_gaps(group, mode))
        for solver, runs in frame.groupby("solver", sort=True):
            shown = runs["shown"][np.isfinite(runs["shown"])]
            scale = 100.0 if mode.kind == "relative" else 1.0
            row = {
                "suite": runs["suite"].iloc[0], "problem": runs["problem"].iloc[0],
                "time_limit": float(runs["time_limit"].iloc[0]), "solver": solver,
                "runs": len(runs), "solution": int(runs["objective"].notna().sum()),
                "optimal": int((runs["status"] == "optimal").sum()),
                "best": int((runs["gap"] <= tol).sum()),
                "failed": int(runs["objective"].isna().sum()),
                mean_col: scale * float(shown.mean()) if len(shown) else math.nan,
                max_col: scale * float(shown.max()) if len(shown) else math.nan,
            }
            solved = metrics.loc[runs.index][runs["objective"].notna()]
            for name in metrics.columns:
                row[f"mean {name}"] = float(solved[name].mean()) if len(solved) else math.nan
            times = runs["wall_time"].astype(float).dropna()  # errors record no time
            row["sgm time s"] = shifted_geometric_mean(times)
            row["max time s"] = float(times.max()) if len(times) else math.nan
            frames.append(row)
    summary = pd.DataFrame(frames)
    times = ["sgm time s", "max time s"]
    return summary[[c for c in summary.columns if c not in times] + times]


def family_gaps(group: pd.DataFrame, mode: GapMode | None = None) -> pd.DataFrame:
    """Mean gap to the reference per instance family (the name without ``-sSEED``) and
    solver, in the group's gap form; a cell reads ``mean`` or ``mean (failed runs)``.

    Parameters
    ----------
    group
        The runs of one (suite, problem, time limit) group of a results table.
    mode
        The gap form (default :func:`gap_mode` of ``group``).

    Returns
    -------
    pandas.DataFrame
        Rows: families; columns: solvers; cells: text.
    """
    mode = mode or gap_mode(group)
    scale = 100.0 if mode.kind == "relative" else 1.0
    frame = group.assign(solver=solver_label(group), gap=group_gaps(group, mode),
                         family=group["instance"].str.replace(r"-s\d+$", "", regex=True))
    cells: dict[str, dict[str, str]] = {}
    for (family, solver), runs in frame.groupby(["family", "solver"], sort=True):
        finite = runs["gap"][np.isfinite(runs["gap"])]
        failed = len(runs) - len(finite)
        text = f"{scale * finite.mean():.3g}" if len(finite) else "-"
        cells.setdefault(family, {})[solver] = text + (f" ({failed})" if failed else "")
    return pd.DataFrame.from_dict(cells, orient="index").rename_axis("family")


def _groups(table: pd.DataFrame):
    return table.groupby(["suite", "problem", "time_limit"], sort=True)


def frame_table(frame: pd.DataFrame, floatfmt: str = ".4g",
                formats: dict[str, str] | None = None) -> str:
    """A GitHub markdown table (:func:`dlsched.markdown.markdown_table`) of ``frame`` (no
    index); ``formats`` per column name (default :data:`FORMATS`), else ``floatfmt``; NaN
    prints as ``-``.

    Parameters
    ----------
    frame
        The table.
    floatfmt
        Format of float cells without their own.
    formats
        Column name → format.

    Returns
    -------
    str
    """
    formats = FORMATS if formats is None else formats

    def cell(column: str, v: object) -> str:
        if isinstance(v, float):
            return "-" if math.isnan(v) else format(v, formats.get(column, floatfmt))
        return str(v)

    return markdown_table(frame.columns, [
        [cell(c, v) for c, v in zip(frame.columns, row, strict=True)]
        for row in frame.itertuples(False)])


def _part(summary: pd.DataFrame, suite, problem, limit) -> pd.DataFrame:
    part = summary[(summary["suite"] == suite) & (summary["problem"] == problem)
                   & (summary["time_limit"] == float(limit))]
    part = part.drop(columns=["suite", "problem", "time_limit"]).dropna(axis=1, how="all")
    times = [c for c in ("sgm time s", "max time s") if c in part]
    return part[[c for c in part.columns if c not in times] + times]


ABS_GAP_TAUS = (0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
"""Thresholds of the gap profile when gaps are absolute (units of the objective/metric)."""


def shown_gap_matrix(group: pd.DataFrame, mode: GapMode) -> pd.DataFrame:
    """gap[p,s] in the group's gap form (relative: a share, not percent).

    Parameters
    ----------
    group
        The runs of one (suite, problem, time limit) group of a results table.
    mode
        From :func:`gap_mode`.

    Returns
    -------
    pandas.DataFrame
        Rows (instance, seed), columns solvers, +inf without a solution.
    """
    frame = group.assign(solver=solver_label(group), gap=group_gaps(group, mode))
    return frame.pivot_table(index=["instance", "seed"], columns="solver", values="gap",
                             aggfunc="min", fill_value=np.inf)


def write_report(table: pd.DataFrame, out_dir: str | Path, *, tol: float = SOLVED_TOL,
                 plots: bool = True) -> str:
    """Write summary.csv, summary.md and per-group profiles (PNG + CSV).

    Parameters
    ----------
    table
        A results table (:func:`dlsched.benchmarks.runner.read_table`).
    out_dir
        Folder to write into (created).
    tol
        Relative distance to the reference at which a run counts as reaching it.
    plots
        Also draw the profiles as PNG.

    Returns
    -------
    str
        The markdown written to ``summary.md``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(table, tol)
    write_table(summary, out, "summary", "csv")
    lines = ["# Benchmark summary", "",
             f"Gap: to the best value known per instance, in the form each problem "
             f"declares (stated under each table): relative (|objective − best| / "
             f"max(|objective|, |best|), in percent) only when all values have one sign, "
             f"else the absolute difference. \"best\": runs within {tol:g} (relative) of "
             f"the best value. \"mean <metric>\": the problem's own quantities, over runs "
             f"with a solution. Times: wall clock in seconds; sgm = shifted geometric mean "
             f"with shift {SHIFT:g} s. Peak memory is not shown: runs are forked from the "
             f"runner, so it measures the interpreter, not the method. Profiles: Dolan–Moré "
             f"(time ratio to the fastest run that reached the best value) and the "
             f"distribution of gaps.", ""]
    for (suite, problem, limit), group in _groups(table):
        mode = gap_mode(group)
        instances = group["instance"].nunique()
        lines += [f"## {suite} · {problem} · time limit {limit:g} s · {instances} instances",
                  "", frame_table(_part(summary, suite, problem, limit)), "",
                  mode.reason + ".", ""]
        families = family_gaps(group, mode)
        if len(families) > 1:
            lines += [f"{mode.columns[0]} by instance family (runs with a solution; failed "
                      "runs in parentheses):", "",
                      frame_table(families.reset_index(), ".3g"), ""]
        stem = f"{suite}-{problem}-{limit:g}s"
        ratios, gaps = time_ratios(group, tol), shown_gap_matrix(group, mode)
        taus = GAP_TAUS if mode.kind == "relative" else ABS_GAP_TAUS
        time_prof = profile(ratios, TIME_TAUS)
        gap_prof = profile(gaps, taus)
        write_table(time_prof.reset_index(), out, f"profile-time-{stem}", "csv")
        write_table(gap_prof.reset_index(), out, f"profile-gap-{stem}", "csv")
        gap_word = "relative gap" if mode.kind == "relative" else \
            f"gap in {mode.on or 'objective units'}"
        lines += ["Time profile (share of problems solved within τ × the fastest time):", "",
                  frame_table(time_prof.reset_index(), ".3g"), "",
                  f"Gap profile (share of problems with {gap_word} ≤ τ):", "",
                  frame_table(gap_prof.reset_index(), ".3g"), ""]
        if plots:
            plot_profile(ratios, str(out / f"profile-time-{stem}.png"),
                         title=f"{suite} · {problem} · {limit:g} s: time profile",
                         xlabel="τ (time / fastest time of a run reaching the best value)")
            plot_profile(gaps, str(out / f"profile-gap-{stem}.png"),
                         title=f"{suite} · {problem} · {limit:g} s: gap profile",
                         xlabel=f"τ ({gap_word} to the best known; a gap of 0 is drawn at "
                         f"{1e-7 if mode.kind == 'relative' else 1e-3:g})",
                         floor=1e-7 if mode.kind == "relative" else 1e-3)
            lines += [f"![time profile](profile-time-{stem}.png) "
                      f"![gap profile](profile-gap-{stem}.png)", ""]
        failures = group[group["objective"].isna()]
        if len(failures):
            lines += ["Runs without a solution:", ""]
            for _, row in failures.iterrows():
                label = row["method"] + (f"/{row['backend']}" if isinstance(row["backend"], str)
                                         and row["backend"] else "")
                lines.append(f"- {row['instance']} {label} seed {row['seed']}: "
                             f"{row['status']} {row['message'] or ''}".rstrip())
            lines.append("")
    text = "\n".join(lines)
    write_text(out / "summary.md", text)
    return text


def console_table(table: pd.DataFrame, tol: float = SOLVED_TOL) -> str:
    """The summary as markdown tables per group, each followed by its gap form.

    Parameters
    ----------
    table
        A results table.
    tol
        Relative distance to the reference at which a run counts as reaching it.

    Returns
    -------
    str
        The text to print (``"(no runs)"`` for an empty table).
    """
    summary = summarize(table, tol)
    if summary.empty:
        return "(no runs)"
    parts = []
    for (suite, problem, limit), group in _groups(table):
        parts.append(f"{suite} · {problem} · time limit {limit:g} s\n\n"
                     + frame_table(_part(summary, suite, problem, limit)) + "\n"
                     + gap_mode(group).reason + ".")
    return "\n\n".join(parts)
