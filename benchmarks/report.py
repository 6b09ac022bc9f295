"""Summaries of a results table: per problem and method, counts, gaps, times, profiles.

For each (suite, problem, time limit) group of runs and each solver (method, or
method/backend for exact methods):

- ``runs``; ``solution``: runs that returned a valid decision; ``optimal``: runs whose
  status is ``optimal`` (proven by the method's own bound); ``best``: runs whose objective
  is within ``tol`` of the reference (the best value known for the instance: the library's
  best known value or any run's better objective); ``failed``: runs without a decision
  (no solution in time, infeasible, invalid input, error, crash, killed);
- ``mean gap %`` and ``max gap %`` to the reference over runs with a solution
  (formula of :func:`dlsched.benchmarks.runner.gap_to_best`);
- ``sgm time s``: shifted geometric mean of wall time over all runs, shift 1 s
  (a failed run counts with its wall time, at most its hard limit); ``max time s``.

Profiles (:mod:`dlsched.benchmarks.profiles`) per group: time and gap, as PNG and CSV.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .profiles import (
    SHIFT,
    SOLVED_TOL,
    gap_matrix,
    gaps_to_reference,
    plot_profile,
    profile,
    shifted_geometric_mean,
    solver_label,
    time_ratios,
)

TIME_TAUS = (1, 2, 5, 10, 100, 1000)
GAP_TAUS = (0.0, 1e-6, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.5)


def summarize(table: pd.DataFrame, tol: float = SOLVED_TOL) -> pd.DataFrame:
    """One row per (suite, problem, time limit, solver) with the statistics above."""
    if table.empty:
        return pd.DataFrame()
    frames = []
    for _, group in _groups(table):
        frame = group.assign(solver=solver_label(group), gap=gaps_to_reference(group))
        for solver, runs in frame.groupby("solver", sort=True):
            finite = runs["gap"][np.isfinite(runs["gap"])]
            frames.append({
                "suite": runs["suite"].iloc[0], "problem": runs["problem"].iloc[0],
                "time_limit": float(runs["time_limit"].iloc[0]), "solver": solver,
                "runs": len(runs), "solution": int(runs["objective"].notna().sum()),
                "optimal": int((runs["status"] == "optimal").sum()),
                "best": int((runs["gap"] <= tol).sum()),
                "failed": int(runs["objective"].isna().sum()),
                "mean gap %": 100 * float(finite.mean()) if len(finite) else math.nan,
                "max gap %": 100 * float(finite.max()) if len(finite) else math.nan,
                "sgm time s": shifted_geometric_mean(runs["wall_time"].astype(float)),
                "max time s": float(runs["wall_time"].astype(float).max()),
                "peak MB": float(runs["peak_rss_mb"].astype(float).max()),
            })
    return pd.DataFrame(frames)


def family_gaps(group: pd.DataFrame) -> pd.DataFrame:
    """Mean gap % to the reference per instance family (the name without ``-sSEED``) and
    solver; a cell reads ``mean`` or ``mean (failed runs)``."""
    frame = group.assign(solver=solver_label(group), gap=gaps_to_reference(group),
                         family=group["instance"].str.replace(r"-s\d+$", "", regex=True))
    cells: dict[str, dict[str, str]] = {}
    for (family, solver), runs in frame.groupby(["family", "solver"], sort=True):
        finite = runs["gap"][np.isfinite(runs["gap"])]
        failed = len(runs) - len(finite)
        text = f"{100 * finite.mean():.3g}" if len(finite) else "-"
        cells.setdefault(family, {})[solver] = text + (f" ({failed})" if failed else "")
    return pd.DataFrame.from_dict(cells, orient="index").rename_axis("family")


def _groups(table: pd.DataFrame):
    return table.groupby(["suite", "problem", "time_limit"], sort=True)


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub markdown table of ``frame`` (no index)."""
    def cell(v: object) -> str:
        if isinstance(v, float):
            return "-" if math.isnan(v) else format(v, floatfmt)
        return str(v)

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([head, rule, *body])


def write_report(table: pd.DataFrame, out_dir: str | Path, *, tol: float = SOLVED_TOL,
                 plots: bool = True) -> str:
    """Write summary.csv, summary.md and per-group profiles (PNG + CSV); the markdown."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(table, tol)
    summary.to_csv(out / "summary.csv", index=False)
    lines = ["# Benchmark summary", "",
             f"Gap: to the best value known per instance, (objective − best) / "
             f"max(|objective|, |best|) (sign flipped for maximization). \"best\": runs "
             f"within {tol:g} of it. Times: wall clock; sgm = shifted geometric mean with "
             f"shift {SHIFT:g} s. Profiles: Dolan–Moré (time ratio to the fastest run that "
             f"reached the best value) and the distribution of gaps.", ""]
    for (suite, problem, limit), group in _groups(table):
        part = summary[(summary["suite"] == suite) & (summary["problem"] == problem)
                       & (summary["time_limit"] == float(limit))]
        instances = group["instance"].nunique()
        lines += [f"## {suite} · {problem} · time limit {limit:g} s · {instances} instances",
                  "", markdown_table(part.drop(columns=["suite", "problem", "time_limit"])),
                  ""]
        families = family_gaps(group)
        if len(families) > 1:
            lines += ["Mean gap % by instance family (runs with a solution; failed runs "
                      "in parentheses):", "", markdown_table(families.reset_index(), ".3g"),
                      ""]
        stem = f"{suite}-{problem}-{limit:g}s"
        ratios, gaps = time_ratios(group, tol), gap_matrix(group)
        time_prof = profile(ratios, TIME_TAUS)
        gap_prof = profile(gaps, GAP_TAUS)
        time_prof.to_csv(out / f"profile-time-{stem}.csv")
        gap_prof.to_csv(out / f"profile-gap-{stem}.csv")
        lines += ["Time profile (share of problems solved within τ × the fastest time):", "",
                  markdown_table(time_prof.reset_index(), ".3g"), "",
                  "Gap profile (share of problems with gap ≤ τ):", "",
                  markdown_table(gap_prof.reset_index(), ".3g"), ""]
        if plots:
            plot_profile(ratios, str(out / f"profile-time-{stem}.png"),
                         title=f"{suite} {problem}: time profile", xlabel="τ (time / fastest)")
            plot_profile(gaps, str(out / f"profile-gap-{stem}.png"),
                         title=f"{suite} {problem}: gap profile",
                         xlabel="τ (gap to best known; 1e-7 stands for 0)", floor=1e-7)
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
    (out / "summary.md").write_text(text, encoding="utf-8")
    return text


def console_table(table: pd.DataFrame, tol: float = SOLVED_TOL) -> str:
    """The summary as markdown tables per group, for printing."""
    summary = summarize(table, tol)
    if summary.empty:
        return "(no runs)"
    parts = []
    for (suite, problem, limit), part in summary.groupby(["suite", "problem", "time_limit"]):
        parts.append(f"{suite} · {problem} · time limit {limit:g} s\n\n"
                     + markdown_table(part.drop(columns=["suite", "problem", "time_limit"])))
    return "\n\n".join(parts)
