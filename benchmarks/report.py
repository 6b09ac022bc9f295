"""Summaries of a results table: per problem and method, counts, gaps, metrics, times.

For each (suite, problem, time limit) group of runs and each solver (method, or
method/backend for exact methods):

- ``runs``; ``solution``: runs that returned a valid decision; ``optimal``: runs whose
  status is ``optimal`` (proven by the method's own bound); ``best``: runs whose objective
  is within ``tol`` of the reference (the best value known for the instance: the library's
  best known value or any run's better objective); ``failed``: runs without a decision
  (no solution in time, infeasible, invalid input, error, crash, killed, cpu_limit); ``n/a``:
  instances the method declares it does not take (not run, not failures: they are left
  out of every other column and of the profiles; the reasons are listed under the table);
- the gap to the reference over runs with a solution, in the form the problem declares
  (:attr:`dlsched.problems.base.Problem.report_gap`, see :func:`gap_mode`):
  ``mean gap %`` / ``max gap %`` (relative, :func:`dlsched.gaps.relative_gap`) only when
  every objective and reference of the group has one sign, so it never exceeds 100 %;
  otherwise ``mean gap (objective units)`` / ``max gap (objective units)``, the
  difference in the objective's units, or in the units of the metric the problem compares
  first (GENIE: on-time tasks, ``mean gap (on-time tasks)``);
- ``mean <metric>``: the means of :meth:`~dlsched.problems.base.Problem.report_metrics`
  over runs with a solution (Liquid: network cost and the score's parts; GENIE: on-time
  tasks and CER; Horus: GPU requests placed and cost; SCHED²: execution effectiveness and
  the longest started job's run time), read from the table's ``metrics`` column;
- ``sgm time s``: shifted geometric mean of wall time over all runs with a recorded time,
  shift 1 s (a failed run counts with its wall time, at most its hard limit; a run that
  raised an error records none); ``max time s``; both printed in seconds, 3 decimals.

Peak memory is not summarized: every run is a process forked from the runner, so its
peak resident size includes the interpreter and the loaded libraries and, for the
heuristics, measured that rather than the method (the table keeps ``peak_rss_mb``).

Profiles (:mod:`dlsched.benchmarks.profiles`) per group: time and gap, as PNG and CSV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from dlsched.files import write_table, write_text
from dlsched.markdown import markdown_table

from .gap_forms import GapMode, gap_mode, group_gaps, metrics_frame
from .profiles import (
    NOT_TAKEN,
    SHIFT,
    SOLVED_TOL,
    gaps_to_reference,
    mask_not_taken,
    plot_profile,
    profile,
    shifted_geometric_mean,
    solver_label,
    time_ratios,
)

TIME_TAUS = (1, 2, 5, 10, 100, 1000)
GAP_TAUS = (0.0, 1e-6, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.5)
FORMATS = {"sgm time s": ".3f", "max time s": ".3f", "mean gap %": ".2f", "max gap %": ".2f"}
"""Fixed formats of the printed columns (others: 4 significant digits)."""


def summarize(table: pd.DataFrame, tol: float = SOLVED_TOL) -> pd.DataFrame:
    """One row per (suite, problem, time limit, solver) with the statistics above.

    Parameters
    ----------
    table
        A results table (columns of :data:`dlsched.benchmarks.results_table.COLUMNS`; ``metrics``
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
    for (suite, problem, limit), whole in _groups(table):
        group, skipped = split_not_taken(whole)
        not_taken = solver_label(skipped).value_counts() if len(skipped) else pd.Series()
        mode = gap_mode(group if len(group) else whole)
        mean_col, max_col = mode.columns
        metrics = metrics_frame(group)
        frame = group.assign(solver=solver_label(group), gap=gaps_to_reference(group),
                             shown=group_gaps(group, mode)) if len(group) else \
            group.assign(solver="", gap=math.nan, shown=math.nan)
        for solver in sorted(set(frame["solver"]) | set(not_taken.index)):
            runs = frame[frame["solver"] == solver]
            shown = runs["shown"][np.isfinite(runs["shown"].astype(float))]
            scale = 100.0 if mode.kind == "relative" else 1.0
            row = {
                "suite": suite, "problem": problem, "time_limit": float(limit),
                "solver": solver,
                "runs": len(runs), "solution": int(runs["objective"].notna().sum()),
                "optimal": int((runs["status"] == "optimal").sum()),
                "best": int((runs["gap"] <= tol).sum()),
                "failed": int(runs["objective"].isna().sum()),
                "n/a": int(not_taken.get(solver, 0)) or math.nan,
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
        Rows: families; columns: solvers; cells: text (``n/a``: the solver does not take
        that family's instances).
    """
    group, skipped = split_not_taken(group)
    mode = mode or gap_mode(group)
    scale = 100.0 if mode.kind == "relative" else 1.0
    cells: dict[str, dict[str, str]] = {}
    for family, solver in zip(_family(skipped), solver_label(skipped), strict=True):
        cells.setdefault(family, {})[solver] = NOT_TAKEN
    if group.empty:
        return _family_frame(cells)
    frame = group.assign(solver=solver_label(group), gap=group_gaps(group, mode),
                         family=_family(group))
    gaps = frame["gap"].to_numpy(dtype=float)
    for (family, solver), rows in sorted(frame.groupby(["family", "solver"]).indices.items()):
        finite = gaps[rows][np.isfinite(gaps[rows])]
        failed = len(rows) - len(finite)
        text = f"{scale * finite.mean():.3g}" if len(finite) else "-"
        cells.setdefault(family, {})[solver] = text + (f" ({failed})" if failed else "")
    return _family_frame(cells)


def _family_frame(cells: dict[str, dict[str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_dict(cells, orient="index").rename_axis("family")
    return frame[sorted(frame.columns)].sort_index()


def _family(group: pd.DataFrame) -> pd.Series:
    return group["instance"].str.replace(r"-s\d+$", "", regex=True)


def split_not_taken(group: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs made, pairs not taken): the rows without and with status ``n/a``."""
    if "status" not in group:
        return group, group.iloc[:0]
    skipped = group["status"] == NOT_TAKEN
    return group[~skipped], group[skipped]


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


@dataclass(frozen=True)
class GroupReport:
    """What the report says about one (suite, problem, time limit) group of runs.

    ``runs``: the runs made; ``skipped``: the pairs not taken (``n/a``); ``summary``: its
    rows of :func:`summarize`; ``mode``, ``families``, the profile matrices (``ratios``,
    ``gaps``: NaN where not taken) and tables (``time_profile``, ``gap_profile``) are
    ``None`` when no run was made.
    """

    suite: str
    problem: str
    time_limit: float
    runs: pd.DataFrame
    skipped: pd.DataFrame
    summary: pd.DataFrame
    mode: GapMode | None = None
    families: pd.DataFrame | None = None
    ratios: pd.DataFrame | None = None
    gaps: pd.DataFrame | None = None
    time_profile: pd.DataFrame | None = None
    gap_profile: pd.DataFrame | None = None

    @property
    def title(self) -> str:
        n = len(set(self.runs["instance"]) | set(self.skipped["instance"]))
        return (f"{self.suite} · {self.problem} · time limit {self.time_limit:g} s · "
                f"{n} instances")

    @property
    def stem(self) -> str:
        return f"{self.suite}-{self.problem}-{self.time_limit:g}s"

    @property
    def gap_word(self) -> str:
        if self.mode is None or self.mode.kind == "relative":
            return "relative gap"
        return f"gap in {self.mode.on or 'objective units'}"

    def plot(self, time_png: str | Path | BinaryIO, gap_png: str | Path | BinaryIO) -> None:
        """Draw the time and gap profiles as PNG (paths or binary files; a group with runs
        only)."""
        assert self.mode is not None and self.ratios is not None and self.gaps is not None
        relative = self.mode.kind == "relative"
        plot_profile(self.ratios, time_png,
                     title=f"{self.suite} · {self.problem} · {self.time_limit:g} s: time "
                     "profile", xlabel="τ (time / fastest time of a run reaching the best "
                     "value)")
        plot_profile(self.gaps, gap_png,
                     title=f"{self.suite} · {self.problem} · {self.time_limit:g} s: gap profile",
                     xlabel=f"τ ({self.gap_word} to the best known; a gap of 0 is drawn at "
                     f"{1e-7 if relative else 1e-3:g})", floor=1e-7 if relative else 1e-3)


def group_reports(table: pd.DataFrame, tol: float = SOLVED_TOL,
                  summary: pd.DataFrame | None = None) -> list[GroupReport]:
    """One :class:`GroupReport` per (suite, problem, time limit) of ``table``, in order
    (``summary``: ``summarize(table, tol)`` when already computed)."""
    summary = summarize(table, tol) if summary is None else summary
    out = []
    for (suite, problem, limit), whole in _groups(table):
        group, skipped = split_not_taken(whole)
        part = _part(summary, suite, problem, limit)
        if group.empty:
            out.append(GroupReport(str(suite), str(problem), float(limit), group, skipped,
                                   part))
            continue
        mode = gap_mode(group)
        ratios = mask_not_taken(time_ratios(group, tol), whole)
        gaps = mask_not_taken(shown_gap_matrix(group, mode), whole)
        taus = GAP_TAUS if mode.kind == "relative" else ABS_GAP_TAUS
        out.append(GroupReport(str(suite), str(problem), float(limit), group, skipped, part,
                               mode, family_gaps(whole, mode), ratios, gaps,
                               profile(ratios, TIME_TAUS), profile(gaps, taus)))
    return out


def group_markdown(g: GroupReport, heading: str = "##", images: bool = False) -> list[str]:
    """The markdown lines of one group: summary, n/a, gap form, families, profiles (as
    tables, and as the PNG files :meth:`GroupReport.plot` writes when ``images``),
    runs without a solution."""
    lines = [f"{heading} {g.title}", "", frame_table(g.summary), ""]
    lines += not_taken_lines(g.skipped)
    if g.mode is None:
        return lines
    assert g.families is not None and g.time_profile is not None
    assert g.gap_profile is not None
    lines += [g.mode.reason + ".", ""]
    if len(g.families) > 1:
        lines += [f"{g.mode.columns[0]} by instance family (runs with a solution; failed "
                  "runs in parentheses; n/a: not taken):", "",
                  frame_table(g.families.reset_index(), ".3g"), ""]
    lines += ["Time profile (share of the problems a solver takes that it solved within τ "
              "× the fastest time):", "", frame_table(g.time_profile.reset_index(), ".3g"), "",
              f"Gap profile (share of the problems a solver takes with {g.gap_word} ≤ τ):",
              "", frame_table(g.gap_profile.reset_index(), ".3g"), ""]
    if images:
        lines += [f"![time profile](profile-time-{g.stem}.png) "
                  f"![gap profile](profile-gap-{g.stem}.png)", ""]
    failures = g.runs[g.runs["objective"].isna()]
    if len(failures):
        lines += ["Runs without a solution:", ""]
        for _, row in failures.iterrows():
            label = row["method"] + (f"/{row['backend']}" if isinstance(row["backend"], str)
                                     and row["backend"] else "")
            lines.append(f"- {row['instance']} {label} seed {row['seed']}: "
                         f"{row['status']} {row['message'] or ''}".rstrip())
        lines.append("")
    return lines


def report_preamble(tol: float = SOLVED_TOL) -> str:
    """What the report's columns and profiles measure (one paragraph)."""
    return (f"Gap: to the best value known per instance, in the form each problem declares "
            f"(stated under each table): relative (|objective − best| / max(|objective|, "
            f"|best|), in percent) only when all values have one sign, else the absolute "
            f"difference. Counts: runs made; solution: runs with a validated decision; "
            f"optimal: proven by the method's bound; best: runs within {tol:g} (relative) "
            f"of the best value; failed: runs without a decision; n/a: instances the "
            f"method declares it does not take (not run, not failures). \"mean <metric>\": "
            f"the problem's own quantities, over runs with a solution. Times: wall clock "
            f"in seconds; sgm = shifted geometric mean with shift {SHIFT:g} s. Peak memory "
            f"is not shown: runs are forked from the runner, so it measures the "
            f"interpreter, not the method. Profiles: Dolan–Moré (time ratio to the fastest "
            f"run that reached the best value) and the distribution of gaps, each solver "
            f"over the problems it takes.")


def write_report(table: pd.DataFrame, out_dir: str | Path, *, tol: float = SOLVED_TOL,
                 plots: bool = True, groups: list[GroupReport] | None = None) -> str:
    """Write summary.csv, summary.md and per-group profiles (PNG + CSV).

    Parameters
    ----------
    table
        A results table (:func:`dlsched.benchmarks.results_table.read_table`).
    out_dir
        Folder to write into (created).
    tol
        Relative distance to the reference at which a run counts as reaching it.
    plots
        Also draw the profiles as PNG.
    groups
        ``group_reports(table, tol)`` when already computed (the summary is their parts).

    Returns
    -------
    str
        The markdown written to ``summary.md``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(table, tol)
    write_table(summary, out, "summary", "csv")
    lines = ["# Benchmark summary", "", report_preamble(tol), ""]
    for g in group_reports(table, tol, summary) if groups is None else groups:
        if g.time_profile is not None and g.gap_profile is not None:
            write_table(g.time_profile.reset_index(), out, f"profile-time-{g.stem}", "csv")
            write_table(g.gap_profile.reset_index(), out, f"profile-gap-{g.stem}", "csv")
            if plots:
                g.plot(out / f"profile-time-{g.stem}.png", out / f"profile-gap-{g.stem}.png")
        lines += group_markdown(g, images=plots and g.mode is not None)
    text = "\n".join(lines)
    write_text(out / "summary.md", text)
    return text


DOC_BEGIN = "<!-- generated by `dlsched report --update-doc`: begin -->"
DOC_END = "<!-- generated by `dlsched report --update-doc`: end -->"


def update_doc(table: pd.DataFrame, doc: str | Path, *, tol: float = SOLVED_TOL) -> bool:
    """Replace the text between :data:`DOC_BEGIN` and :data:`DOC_END` in ``doc`` with the
    report's groups (level-3 headings, profiles as tables); True when it changed.

    Raises
    ------
    ValueError
        ``doc`` lacks the two markers, in order.
    """
    path = Path(doc)
    text = path.read_text(encoding="utf-8")
    start, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no {DOC_BEGIN!r} ... {DOC_END!r} section")
    body = [line for g in group_reports(table, tol) for line in group_markdown(g, "###")]
    new = text[:start + len(DOC_BEGIN)] + "\n\n" + "\n".join(body).rstrip() + "\n\n" + \
        text[end:]
    if new != text:
        write_text(path, new)
    return new != text


def not_taken_lines(skipped: pd.DataFrame) -> list[str]:
    """Markdown lines: per solver and reason, the instances it does not take (``n/a``)."""
    if skipped.empty:
        return []
    lines = ["Not run (n/a): instances the method declares it does not take:", ""]
    reasons = skipped["message"].fillna("").astype(str)
    frame = skipped.assign(solver=solver_label(skipped), reason=reasons,
                           alike=reasons.str.replace(r"\d+", "#", regex=True))
    for _, rows in frame.groupby("alike", sort=True):  # one line per reason, numbers aside
        solvers, names = sorted(set(rows["solver"])), sorted(set(rows["instance"]))
        example = "" if rows["reason"].nunique() == 1 else "e.g. "
        lines.append(f"- {', '.join(solvers)} on {len(names)} instance(s) "
                     f"({', '.join(names)}): {example}{rows['reason'].iloc[0]}")
    return [*lines, ""]


def console_table(table: pd.DataFrame, tol: float = SOLVED_TOL,
                  summary: pd.DataFrame | None = None) -> str:
    """The summary as markdown tables per group, each followed by its gap form.

    Parameters
    ----------
    table
        A results table.
    tol
        Relative distance to the reference at which a run counts as reaching it.
    summary
        ``summarize(table, tol)`` when already computed.

    Returns
    -------
    str
        The text to print (``"(no runs)"`` for an empty table).
    """
    summary = summarize(table, tol) if summary is None else summary
    if summary.empty:
        return "(no runs)"
    parts = []
    for (suite, problem, limit), whole in _groups(table):
        group, skipped = split_not_taken(whole)
        reason = gap_mode(group).reason + "." if len(group) else ""
        na = "\n".join(not_taken_lines(skipped)).strip()
        parts.append(f"{suite} · {problem} · time limit {limit:g} s\n\n"
                     + frame_table(_part(summary, suite, problem, limit)) + "\n"
                     + "\n".join(x for x in (reason, na) if x))
    return "\n\n".join(parts)
