"""A paper's claim against dlsched's measurements: one row of ``dlsched reproduce``.

A row holds the claim's cited number (:mod:`dlsched.benchmarks.paper_claims`), dlsched's
mean [min, max] over seeds, whether the direction matches, whether the magnitude is within
a factor 2, and a measured reason where not. A relative change is ``(ours - theirs) /
theirs`` (negative = ours lower).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from dlsched.markdown import markdown_table

from .paper_claims import Claim


@dataclass(frozen=True)
class Row:
    """One reproduced result."""

    paper: str
    result: str
    cite: str
    paper_value: str
    ours: str
    seeds: int
    direction_matches: bool | None
    within_2x: bool | None
    reason: str = ""


def change(ours: float, theirs: float) -> float:
    """The relative change ``(ours - theirs) / theirs``."""
    return (ours - theirs) / theirs


def fmt_pct(values: list[float]) -> str:
    """Mean [min, max] of relative changes, in percent."""
    mean = 100 * statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:+.1f} %"
    return f"{mean:+.1f} % [{100 * min(values):+.1f}, {100 * max(values):+.1f}]"


def compare(cited: Claim, result: str, values: list[float], reason_if_not: str,
            claimed: Sequence[float] | None = None) -> Row:
    """A row for the relative change ``cited`` claims (``claimed``: a range [lo, hi] of it
    instead of its one number).

    The direction matches when the mean has the claim's sign; the magnitude is within 2x
    when the mean lies in [lo / 2, 2 hi] (by absolute value).
    """
    paper, cite = cited.id.split(".", 1)[0], cited.source
    lo, hi = sorted(claimed or (cited.change(),) * 2, key=abs)
    mean = statistics.fmean(values)
    direction = bool(np.sign(mean) == np.sign(hi))
    within = direction and abs(lo) / 2 <= abs(mean) <= 2 * abs(hi)
    text = f"{100 * lo:+.1f} %" if lo == hi else f"{100 * lo:+.1f} … {100 * hi:+.1f} %"
    reason = "" if direction and within else reason_if_not
    return Row(paper, result, cite, text, fmt_pct(values), len(values), direction, within,
               reason)


def beyond(paper: str, result: str, gaps: list[float], relative: bool = True) -> Row:
    """A row beyond the paper: the mean and max of ``gaps`` to a proven optimum (relative
    shares, or objective units when not ``relative``)."""
    if not gaps:
        return Row(paper, "beyond the paper: " + result, "—", "not measured by the paper",
                   "—", 0, None, None, "no proven optimum in the time limit" if result else "")
    if relative:
        ours = f"mean gap {100 * statistics.fmean(gaps):.2f} %, max {100 * max(gaps):.2f} %"
    else:
        ours = f"mean gap {statistics.fmean(gaps):.4f}, max {max(gaps):.4f}"
    return Row(paper, "beyond the paper: " + result, "—", "not measured by the paper", ours,
               len(gaps), None, None)


def markdown(rows: list[Row]) -> str:
    """The rows as a markdown table."""
    def yn(v: bool | None) -> str:
        return "—" if v is None else ("yes" if v else "no")

    return markdown_table(
        ["paper", "result", "cite", "paper's number", "dlsched (mean [min, max])", "seeds",
         "direction", "within 2x", "reason where not"],
        [[r.paper, r.result, r.cite, r.paper_value, r.ours, r.seeds, yn(r.direction_matches),
          yn(r.within_2x), r.reason] for r in rows])


def json_lines(rows: list[Row]) -> str:
    """The rows as JSON lines."""
    return "\n".join(json.dumps(asdict(r), sort_keys=True) for r in rows)
