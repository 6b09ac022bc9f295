"""Pairs a method declares it does not take are `n/a`, not failures (issue 31, item 4):
`dlsched bench` records them with the reason without running them, the summary counts
them apart, and the profiles measure a solver over the problems it takes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from dlsched.benchmarks.results_table import COLUMNS, read_table
from dlsched.cli import main


@pytest.fixture
def dlsched(monkeypatch, capsys):
    """``dlsched ARGS`` in ``cwd``, through main() (no interpreter of its own): its exit
    code, stdout and stderr."""
    def run(*args: str, cwd: Path) -> SimpleNamespace:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(list(args))
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)
    return run


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """Two SCHED² workloads: 4 jobs on 2 servers (the offline model takes it) and 200 jobs
    on 15 servers (more placement shapes than it holds: it declines)."""
    root = tmp_path_factory.mktemp("lib") / "mixed"
    root.mkdir()
    spec = {"name": "mixed", "bench": {"time_limit": 10},
            "best_known": {"runs": [{"method": "fifo"}], "time_limit": 10},
            "instances": [
                {"name": "small", "generator": "sched2", "seeds": [0],
                 "arguments": {"jobs": 4, "servers": 2, "gpus_per_server": 4}},
                {"name": "big", "generator": "sched2", "seeds": [0],
                 "arguments": {"jobs": 200}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    assert main(["library", "build", "--suite", str(root), "--no-progress"]) == 0
    return root


def test_bench_records_declined_pairs_as_na_with_the_reason(suite, tmp_path, dlsched):
    out = tmp_path / "r.csv"
    run = dlsched("bench", "--suite", str(suite), "--methods", "offline-makespan,fifo",
                  "--output", str(out), "--no-progress", "--jobs", "1", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAILED" not in run.stdout
    table = read_table(out)
    skipped = table[table["status"] == "n/a"]
    assert list(zip(skipped["instance"], skipped["method"], strict=True)) == [
        ("big-s0", "offline-makespan")]
    assert "placement shapes, more than the offline model's" in skipped["message"].iloc[0]
    assert pd.isna(skipped["wall_time"].iloc[0])  # not run
    made = table[table["status"] != "n/a"]
    assert len(made) == 3 and made["objective"].notna().all()
    # the summary: one run made, one n/a, no failure
    line = next(x for x in run.stdout.splitlines() if x.startswith("| offline-makespan/"))
    header = next(x for x in run.stdout.splitlines() if x.startswith("| solver |"))
    cells = dict(zip(_cells(header), _cells(line), strict=True))
    assert (cells["solver"], cells["runs"], cells["failed"], cells["n/a"]) == (
        "offline-makespan/cpsat", "1", "0", "1")
    assert "Not run (n/a)" in run.stdout and "big-s0" in run.stdout


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _row(instance: str, method: str, status: str, objective: float | None,
         wall: float | None, message: str = "") -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(suite="s", instance=instance, instance_sha256=instance, problem="horus",
               sense="min", method=method, kind="heuristic", backend="", seed=0,
               time_limit=10.0, status=status, objective=objective, wall_time=wall,
               message=message)
    return row


def test_profiles_leave_declined_pairs_out(tmp_path, dlsched):
    # a declines i1 and solves i2 fastest at the best value: over the problems it takes
    # it always reaches the best value (share 1), where counting i1 as failed gives 0.5
    rows = [_row("i1", "a", "n/a", None, None, "a does not take i1"),
            _row("i1", "b", "feasible", 10.0, 1.0),
            _row("i2", "a", "feasible", 5.0, 1.0),
            _row("i2", "b", "feasible", 6.0, 1.0)]
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(tmp_path / "t.csv", index=False)
    run = dlsched("report", "--input", "t.csv", "--output-dir", "rep", "--no-plots",
                  cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    gap = pd.read_csv(next((tmp_path / "rep").glob("profile-gap-*.csv")), index_col=0)
    assert gap.loc[0.0, "a"] == 1.0 and gap.loc[0.0, "b"] == 0.5
    summary = pd.read_csv(tmp_path / "rep" / "summary.csv").set_index("solver")
    assert (summary.loc["a", "runs"], summary.loc["a", "failed"],
            summary.loc["a", "n/a"]) == (1, 0, 1)
    text = (tmp_path / "rep" / "summary.md").read_text()
    assert "- a on 1 instance(s) (i1): a does not take i1" in text
