"""The window-scan benchmark: its classes mean what they say, its summary counts its rows,
and its last line is one JSON object."""

from __future__ import annotations

import json

from dlsched.benchmarks.inference_windows import classify, main, scan, summary


def test_classes_by_hand():
    assert classify(200.0, 200.0, 200.0) == "free"
    assert classify(200.0 - 1e-9, 200.0, 200.0) == "free"  # within the tolerance
    assert classify(185.9, 188.4, 200.0) == "congested"  # the bound excludes "all at most"
    assert classify(199.984, 200.0, 200.0) == "open"  # neither is known
    assert classify(None, 190.0, 200.0) == "congested"
    assert classify(None, None, 200.0) == "open"


def test_tiny_scan_rows_are_consistent():
    rows = scan(window=5, step=5, count=3, time_limit=None, scale=3.0)
    assert [r["window"] for r in rows] == [[0, 5], [5, 10], [10, 15]]
    for r in rows:
        # no schedule earns more than every query's most, and none more than the bound
        assert r["objective"] <= r["per_query_bound"] + 1e-9
        assert r["objective"] <= r["bound"] + 1e-9
        assert r["class"] == classify(r["objective"], r["bound"], r["per_query_bound"])
        if r["status"] == "optimal":
            assert abs(r["bound"] - r["objective"]) <= 1e-6 * max(1.0, r["bound"])
    s = summary(rows)
    assert sum(s[c]["windows"] for c in ("free", "congested", "open")) == len(rows)
    assert s["free"]["proven"] == sum(r["class"] == "free" and r["status"] == "optimal"
                                      for r in rows)


def test_main_ends_with_one_json_line(capsys):
    assert main(["--window", "4", "--count", "2", "--step", "4", "--time-limit", "20"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    figures = json.loads(last)
    assert figures["benchmark"] == "inference_windows"
    assert len(figures["windows"]) == 2
    assert figures["arguments"]["window"] == 4
