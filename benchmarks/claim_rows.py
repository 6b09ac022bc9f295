"""A paper's claim against dlsched's measurements: one row of ``dlsched reproduce``.

A row holds the claim's id and cited number (:mod:`dlsched.benchmarks.paper_claims`), its
kind, dlsched's mean [min, max] over seeds, whether the direction matches, whether the
magnitude is within a factor 2, and a measured reason where not. A relative change is
``(ours - theirs) / theirs`` (negative = ours lower).

Kinds: ``headline`` (the paper's number in the paper's stated setting: the rows that are
counted), ``sensitivity`` (the same claim under the other plausible reading of something
the paper leaves open), ``ablation`` (one modelling choice changed, to show how far a
missed verdict moves; ``ablation_of`` names the claim), ``beyond`` (not in the paper: a
policy against a proven optimum) and ``smoke`` (a ``--quick`` row: too small to be
evidence, so it carries no verdict).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from dlsched.markdown import markdown_table

from .paper_claims import Claim

KINDS = ("headline", "sensitivity", "ablation", "beyond", "smoke")


@dataclass(frozen=True)
class Row:
    """One reproduced result (``claim``: the claim's id, or ``<paper>.beyond.<what>``)."""

    paper: str
    claim: str
    kind: str
    result: str
    cite: str
    paper_value: str
    ours: str
    seeds: int
    direction_matches: bool | None
    within_2x: bool | None
    reason: str = ""
    ablation_of: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r}: use one of {KINDS}")
        if (self.kind == "ablation") != (self.ablation_of is not None):
            raise ValueError("an ablation row, and only one, names the claim it ablates")
        if not self.claim.startswith(self.paper + "."):
            raise ValueError(f"claim {self.claim!r} does not start with {self.paper!r}")


def change(ours: float, theirs: float) -> float:
    """The relative change ``(ours - theirs) / theirs``."""
    return (ours - theirs) / theirs


def fmt_pct(values: Sequence[float]) -> str:
    """Mean [min, max] of relative changes, in percent."""
    mean = 100 * statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:+.1f} %"
    return f"{mean:+.1f} % [{100 * min(values):+.1f}, {100 * max(values):+.1f}]"


def verdict(mean: float, lo: float, hi: float) -> tuple[bool, bool]:
    """(direction matches, within 2x): ``mean`` has the sign of the claimed change and
    lies in [|lo| / 2, 2 |hi|] by absolute value (``lo``, ``hi``: the claimed range)."""
    direction = bool(np.sign(mean) == np.sign(hi))
    return direction, bool(direction and abs(lo) / 2 <= abs(mean) <= 2 * abs(hi))


def compare(cited: Claim, result: str, values: Sequence[float], reason_if_not: str,
            claimed: Sequence[float] | None = None, *, kind: str = "headline",
            ablation_of: str | None = None, detail: str = "") -> Row:
    """A row for the relative change ``cited`` claims (``claimed``: a range [lo, hi] of it
    instead of its one number; ``detail``: appended to dlsched's number).

    The direction matches when the mean has the claim's sign; the magnitude is within 2x
    when the mean lies in [lo / 2, 2 hi] (by absolute value). An ablation or sensitivity
    row always carries ``reason_if_not`` (what it changed and what that shows).
    """
    paper, cite = cited.id.split(".", 1)[0], cited.source
    lo, hi = sorted(claimed or (cited.change(),) * 2, key=abs)
    direction, within = verdict(statistics.fmean(values), lo, hi)
    text = f"{100 * lo:+.1f} %" if lo == hi else f"{100 * lo:+.1f} … {100 * hi:+.1f} %"
    keep = kind != "headline" or not (direction and within)
    return Row(paper, cited.id, kind, result, cite, text,
               fmt_pct(values) + (f" ({detail})" if detail else ""), len(values), direction,
               within, reason_if_not if keep else "", ablation_of)


def beyond(paper: str, what: str, result: str, gaps: Sequence[float],
           relative: bool = True, note: str = "") -> Row:
    """A row beyond the paper (claim ``<paper>.beyond.<what>``): the mean and max of
    ``gaps`` to a proven optimum (relative shares, or objective units when not
    ``relative``); ``note``: what else was measured."""
    cid = f"{paper}.beyond.{what}"
    if not gaps:
        return Row(paper, cid, "beyond", result, "—", "not measured by the paper", "—", 0,
                   None, None, "no proven optimum in the time limit " + note)
    if relative:
        ours = f"mean gap {100 * statistics.fmean(gaps):.2f} %, max {100 * max(gaps):.2f} %"
    else:
        ours = f"mean gap {statistics.fmean(gaps):.4f}, max {max(gaps):.4f}"
    return Row(paper, cid, "beyond", result, "—", "not measured by the paper", ours,
               len(gaps), None, None, note)


def as_smoke(rows: Sequence[Row]) -> list[Row]:
    """``--quick`` rows: kind ``smoke``, no verdict (too small to count as evidence)."""
    return [replace(r, kind="smoke", direction_matches=None, within_2x=None, ablation_of=None)
            for r in rows]


def markdown(rows: Sequence[Row]) -> str:
    """The rows as a markdown table."""
    def yn(v: bool | None) -> str:
        return "—" if v is None else ("yes" if v else "no")

    return markdown_table(
        ["claim", "kind", "result", "cite", "paper's number", "dlsched (mean [min, max])",
         "seeds", "direction", "within 2x", "reason where not"],
        [[r.claim + (f" (of {r.ablation_of})" if r.ablation_of else ""), r.kind, r.result,
          r.cite, r.paper_value, r.ours, r.seeds, yn(r.direction_matches), yn(r.within_2x),
          r.reason] for r in rows])


def json_lines(rows: Sequence[Row]) -> str:
    """The rows as JSON lines."""
    return "\n".join(json.dumps(asdict(r), sort_keys=True, ensure_ascii=False) for r in rows)


def count(rows: Sequence[Row]) -> dict[str, int]:
    """Headline ids, and those whose every headline row is in direction and within 2x."""
    ids: dict[str, bool] = {}
    for r in rows:
        if r.kind == "headline":
            ids[r.claim] = ids.get(r.claim, True) and bool(r.direction_matches and r.within_2x)
    return {"headline_ids": len(ids), "reproduced": sum(ids.values())}
