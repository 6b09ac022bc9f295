"""One self-contained HTML page for a benchmark or a competition: ``index.html``.

Everything is inside the file: the summary tables, the performance profiles as inline
PNG images (base64 ``data:`` URIs), the per-instance results, the leaderboard, a short
stylesheet and a few lines of JavaScript that make every table sortable (click a column
heading; again to reverse). Nothing is fetched from elsewhere, so the page opens from disk
or can be published as it is. ``dlsched report --html DIR`` and ``dlsched compete``
write it.
"""

from __future__ import annotations

import base64
import html
import io
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlsched.files import write_text

from .gap_forms import GapMode, group_gaps
from .report import FORMATS, GroupReport, not_taken_lines, report_preamble

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;
color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}
th{background:#eef;cursor:pointer;user-select:none;text-align:left}
td.text{text-align:left}
tr:nth-child(even) td{background:#f8f8f8}
th[data-dir=asc]::after{content:" \\25B2"}th[data-dir=desc]::after{content:" \\25BC"}
img{max-width:49%;min-width:420px;border:1px solid #ddd;margin:.3em 0}
.note{color:#555;font-size:.9em}caption{caption-side:bottom;font-size:.8em;color:#777;
text-align:left}
"""

# Sorting: numbers (data-v, else the cell text) before text; the caption says how many
# rows the table has, written by the script, so a reader (or a test) sees that it ran.
_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var body = table.tBodies[0];
  var caption = table.createCaption();
  caption.textContent = body.rows.length + " rows; click a column heading to sort";
  table.querySelectorAll("th").forEach(function (th) {
    th.title = "sort by " + th.textContent;
    th.addEventListener("click", function () {
      var asc = th.dataset.dir !== "asc";
      table.querySelectorAll("th").forEach(function (h) { delete h.dataset.dir; });
      th.dataset.dir = asc ? "asc" : "desc";
      var key = function (row) {
        var cell = row.cells[th.cellIndex];
        var text = cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent;
        var num = parseFloat(text);
        return isNaN(num) ? [1, text] : [0, num];
      };
      Array.from(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b);
        var c = x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
        return asc ? c : -c;
      }).forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


@dataclass(frozen=True)
class Section:
    """A part of the page: a heading, paragraphs (plain text), tables, images."""

    heading: str
    paragraphs: Sequence[str] = ()
    tables: Sequence[tuple[str, pd.DataFrame, str]] = ()
    """(caption, table, HTML id or "")."""
    images: Sequence[tuple[str, bytes]] = ()
    """(alt text, PNG bytes)."""


def _cell(column: str, value: object) -> str:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return f"<td data-v='{int(value)}'>{int(value)}</td>"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "<td data-v=''>-</td>"
        text = format(value, FORMATS.get(column, ".4g"))
        return f"<td data-v='{value!r}'>{html.escape(text)}</td>"
    return f"<td class='text'>{html.escape(str(value))}</td>"


def html_table(frame: pd.DataFrame, table_id: str = "") -> str:
    """A sortable HTML table of ``frame`` (no index); floats as in the markdown report."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(_cell(str(c), v) for c, v in zip(frame.columns, row, strict=True))
        + "</tr>" for row in frame.itertuples(index=False))
    ident = f" id='{html.escape(table_id)}'" if table_id else ""
    return (f"<table class='sortable'{ident}><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def png_image(alt: str, data: bytes) -> str:
    """An ``<img>`` with the PNG inline (a ``data:`` URI)."""
    encoded = base64.b64encode(data).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{encoded}'>"


def page(title: str, intro: Sequence[str], sections: Sequence[Section]) -> str:
    """The whole page as text."""
    parts = [f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<p class='note'>{html.escape(p)}</p>" for p in intro]
    if len(sections) > 1:
        parts.append("<ul>" + "".join(f"<li><a href='#s{i}'>{html.escape(s.heading)}</a></li>"
                                      for i, s in enumerate(sections)) + "</ul>")
    for i, s in enumerate(sections):
        parts.append(f"<h2 id='s{i}'>{html.escape(s.heading)}</h2>")
        parts += [f"<p>{html.escape(p)}</p>" for p in s.paragraphs]
        tables = [[f"<p class='note'>{html.escape(caption)}</p>", html_table(frame, ident)]
                  for caption, frame, ident in s.tables]
        parts += tables[0] if tables else []  # the summary first, then the profiles
        parts += [png_image(alt, data) for alt, data in s.images]
        parts += [part for table in tables[1:] for part in table]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(parts) + f"\n<script>{_SCRIPT}</script>\n</body></html>\n")


def _png(draw) -> tuple[bytes, bytes]:
    time_png, gap_png = io.BytesIO(), io.BytesIO()
    draw(time_png, gap_png)
    return time_png.getvalue(), gap_png.getvalue()


def group_section(g: GroupReport, per_instance: pd.DataFrame, plots: bool = True) -> Section:
    """A benchmark group: summary, n/a reasons, families, profiles (drawn when ``plots``),
    per-instance runs."""
    paragraphs = [line.removeprefix("- ") for line in not_taken_lines(g.skipped) if line]
    tables = [("Summary per solver", g.summary, f"summary-{g.stem}")]
    images: list[tuple[str, bytes]] = []
    if g.mode is not None:
        paragraphs.append(g.mode.reason + ".")
        if g.families is not None and len(g.families) > 1:
            tables.append((f"{g.mode.columns[0]} by instance family (failed runs in "
                           "parentheses; n/a: not taken)", g.families.reset_index(),
                           f"families-{g.stem}"))
        if plots:
            time_png, gap_png = _png(g.plot)
            images = [(f"{g.stem} time profile", time_png),
                      (f"{g.stem} gap profile", gap_png)]
        else:
            paragraphs.append("Profiles not drawn (--no-plots).")
    tables.append(("Per instance: every run (n/a: not taken, with the reason)", per_instance,
                   f"runs-{g.stem}"))
    return Section(g.title, paragraphs, tables, images)


def run_rows(runs: pd.DataFrame, mode: GapMode | None) -> pd.DataFrame:
    """The per-instance table of a results table's rows (made and not taken), the gap in
    the group's form ``mode`` (as in its summary)."""
    from .profiles import solver_label

    made = runs[runs["status"] != "n/a"]
    gap = pd.Series(math.nan, index=runs.index, dtype=float)
    name = "gap to best %"
    if len(made) and mode is not None:
        scale = 100.0 if mode.kind == "relative" else 1.0
        gap.loc[made.index] = scale * group_gaps(made, mode).replace(math.inf, math.nan)
        if mode.kind != "relative":
            name = f"gap to best ({mode.on or 'objective units'})"
    frame = pd.DataFrame({
        "instance": runs["instance"], "solver": solver_label(runs), "seed": runs["seed"],
        "status": runs["status"], "objective": runs["objective"].astype(float),
        "best known": runs["best_known"].astype(float), name: gap,
        "wall time s": runs["wall_time"].astype(float),
        "message": runs["message"].fillna("").astype(str).str.slice(0, 160)})
    return frame.sort_values(["instance", "solver", "seed"]).reset_index(drop=True)


def write_html(out_dir: str | Path, title: str, intro: Sequence[str],
               sections: Sequence[Section]) -> Path:
    """Write ``out_dir/index.html`` (folder created); returns its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    write_text(path, page(title, intro, sections))
    return path


def bench_page(table: pd.DataFrame, out_dir: str | Path, *, tol: float,
               title: str = "Benchmark report", groups: list[GroupReport] | None = None
               ) -> Path:
    """The page of a results table (:func:`dlsched.benchmarks.results_table.read_table`);
    ``groups``: its ``group_reports(table, tol)`` when already computed."""
    from .report import group_reports

    groups = group_reports(table, tol) if groups is None else groups
    sections = []
    for g in groups:
        runs = table[(table["suite"] == g.suite) & (table["problem"] == g.problem)
                     & (table["time_limit"].astype(float) == g.time_limit)]
        sections.append(group_section(g, run_rows(runs, g.mode)))
    return write_html(out_dir, title, [report_preamble(tol)], sections)


def compete_page(scores: pd.DataFrame, board: pd.DataFrame, out_dir: str | Path, *,
                 suite: str, time_limit: float, tol: float, plots: bool = True) -> Path:
    """The page of a competition: the leaderboard, then per problem the entrants'
    summary and profiles (as in a benchmark report, each entrant a solver) and every
    scored run.

    Parameters
    ----------
    scores
        ``scores.csv`` of the competition (:data:`dlsched.benchmarks.compete.SCORE_COLUMNS`).
    board
        Its leaderboard (:func:`dlsched.benchmarks.compete.leaderboard`).
    out_dir
        Folder of ``index.html``.
    suite, time_limit
        For the title.
    tol
        Relative distance to the reference at which a run counts as reaching it.
    plots
        Draw the time and gap profiles (PNG, inline); else the page says they were not.
    """
    from .report import group_reports

    latest = scores.drop_duplicates(["entrant", "instance", "time_limit"], keep="last")
    runs = pd.DataFrame({
        "suite": latest["suite"], "problem": latest["problem"], "sense": latest["sense"],
        "time_limit": latest["time_limit"].astype(float), "instance": latest["instance"],
        "method": latest["entrant"], "backend": "", "seed": 0,
        "status": latest["outcome"].where(latest["outcome"] != "ok", "feasible"),
        "objective": latest["objective"].astype(float),
        "best_known": latest["best_known"].astype(float),
        "wall_time": latest["wall_time"].astype(float), "message": latest["reason"],
        "metrics": ""})
    sections = [Section("Leaderboard", ["Score per instance: clip(1 − gap to the best known "
                                        "objective, 0, 1); 0 for an invalid, missing, "
                                        "timed-out or crashed run (docs/competition.md)."],
                        [("Entrants ranked by total score", board, "leaderboard")])]
    for g in group_reports(runs, tol):
        part = latest[(latest["problem"] == g.problem)
                      & (latest["time_limit"].astype(float) == g.time_limit)]
        per_instance = part[["instance", "entrant", "outcome", "objective", "best_known",
                             "score", "wall_time", "reason"]].rename(columns={
                                 "best_known": "best known", "wall_time": "wall time s"})
        section = group_section(g, per_instance.sort_values(["instance", "entrant"]), plots)
        sections.append(Section(section.heading, section.paragraphs,
                                [(c, t.drop(columns=["optimal"], errors="ignore"), i)
                                 if i.startswith("summary-") else (c, t, i)
                                 for c, t, i in section.tables], section.images))
    intro = [f"Competition on suite {suite}, time limit {time_limit:g} s per instance. "
             "Summaries and profiles below treat each entrant as a solver: "
             + report_preamble(tol)]
    return write_html(out_dir, f"Competition · suite {suite}", intro, sections)
