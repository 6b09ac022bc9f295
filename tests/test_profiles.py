"""Performance profiles and the shifted geometric mean on a hand-made table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dlsched.benchmarks.profiles import (
    gaps_to_reference,
    plot_profile,
    profile,
    shifted_geometric_mean,
    time_ratios,
)
from dlsched.benchmarks.report import gap_mode, shown_gap_matrix, summarize, write_report

NAN = float("nan")


@pytest.fixture
def table():
    """Three instances, two solvers x and y; C has a best known value of 20."""
    rows = [
        # instance, solver, objective, wall time, best known, status
        ("A", "x", 10.0, 1.0, NAN, "feasible"),
        ("A", "y", 10.0, 4.0, NAN, "optimal"),
        ("B", "x", 12.0, 2.0, NAN, "feasible"),
        ("B", "y", 10.0, 1.0, NAN, "optimal"),
        ("C", "x", NAN, 5.0, 20.0, "no_solution"),
        ("C", "y", 20.0, 10.0, 20.0, "feasible"),
    ]
    frame = pd.DataFrame(rows, columns=["instance", "method", "objective", "wall_time",
                                        "best_known", "status"])
    return frame.assign(suite="s", problem="p", sense="min", backend="", seed=0,
                        time_limit=10.0, peak_rss_mb=100.0, message="")


def test_gaps_to_reference(table):
    gaps = gaps_to_reference(table).tolist()
    # references: A 10, B 10 (y's objective), C 20; B/x: (12 - 10) / 12 = 1/6
    assert gaps[:4] == pytest.approx([0.0, 0.0, 1 / 6, 0.0])
    assert math.isinf(gaps[4]) and gaps[5] == 0.0


def test_time_ratios_and_profile(table):
    r = time_ratios(table)
    # A: both solve, fastest 1 s: x 1/1 = 1, y 4/1 = 4; B: only y solves (x's gap 1/6):
    # y 1, x inf; C: only y: y 1, x inf
    assert r.loc[("A", 0), "x"] == 1.0 and r.loc[("A", 0), "y"] == 4.0
    assert math.isinf(r.loc[("B", 0), "x"]) and r.loc[("B", 0), "y"] == 1.0
    assert math.isinf(r.loc[("C", 0), "x"]) and r.loc[("C", 0), "y"] == 1.0
    prof = profile(r, [1, 2, 4])
    # x: 1 of 3 problems at every tau; y: 2 of 3 at tau 1 and 2, 3 of 3 at tau 4
    assert prof["x"].tolist() == pytest.approx([1 / 3] * 3)
    assert prof["y"].tolist() == pytest.approx([2 / 3, 2 / 3, 1.0])


def test_gap_profile(table):
    g = shown_gap_matrix(table, gap_mode(table))
    prof = profile(g, [0.0, 0.1, 0.2])
    # x: gaps 0, 1/6, inf -> 1/3 at 0 and 0.1, 2/3 at 0.2; y: 0, 0, 0 -> 1 everywhere
    assert prof["x"].tolist() == pytest.approx([1 / 3, 1 / 3, 2 / 3])
    assert prof["y"].tolist() == pytest.approx([1.0, 1.0, 1.0])


def test_nobody_solves_means_infinite_ratio(table):
    table = table.copy()
    table.loc[table["instance"] == "C", "best_known"] = 18.0
    r = time_ratios(table)
    # reference 18: y's 20 has gap 2/20 = 0.1, so nobody solves C
    assert np.isinf(r.loc[("C", 0)]).all()


def test_shifted_geometric_mean():
    # shift 1: exp((ln 2 + ln 5) / 2) - 1 = sqrt(10) - 1
    assert shifted_geometric_mean([1.0, 4.0]) == pytest.approx(math.sqrt(10) - 1)
    # shift 10: exp((ln 10 + ln 10) / 2) - 10 = 0
    assert shifted_geometric_mean([0.0, 0.0], shift=10) == pytest.approx(0.0)
    assert math.isnan(shifted_geometric_mean([]))


def test_summary_counts(table):
    s = summarize(table).set_index("solver")
    assert s.loc["x", "runs"] == 3 and s.loc["x", "failed"] == 1
    # y reaches the reference on A, B and C; it proved optimality on A and B
    assert s.loc["y", "optimal"] == 2 and s.loc["y", "best"] == 3
    # x: gaps 0 and 1/6 over runs with a solution: mean 1/12, max 1/6, in percent
    assert s.loc["x", "mean gap %"] == pytest.approx(100 / 12)
    assert s.loc["x", "max gap %"] == pytest.approx(100 / 6)
    # y's times 4, 1, 10 with shift 1: (5 * 2 * 11) ** (1/3) - 1
    assert s.loc["y", "sgm time s"] == pytest.approx(110 ** (1 / 3) - 1)


def test_report_files(table, tmp_path):
    text = write_report(table, tmp_path, plots=False)
    assert "| x |" in text and "shift 1 s" in text
    for name in ("summary.csv", "summary.md", "profile-time-s-p-10s.csv",
                 "profile-gap-s-p-10s.csv"):
        assert (tmp_path / name).stat().st_size > 0
    plot_profile(time_ratios(table), str(tmp_path / "t.png"), title="t", xlabel="tau")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
