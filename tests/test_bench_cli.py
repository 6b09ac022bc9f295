"""The bench, report and library commands end to end on a two-instance suite."""

from __future__ import annotations

import json

import pytest

from dlsched.benchmarks.results_table import read_table
from dlsched.cli import main


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory):
    """A built two-instance Horus suite directory."""
    root = tmp_path_factory.mktemp("lib") / "two"
    root.mkdir()
    spec = {"name": "two", "bench": {"time_limit": 15},
            "best_known": {"runs": [{"method": "exact", "backend": "highs"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [0, 1],
                           "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    assert main(["library", "build", "--suite", str(root), "--jobs", "1",
                 "--no-progress"]) == 0
    return root


def test_bench_then_report(suite_dir, tmp_path, capsys):
    out = tmp_path / "r.csv"
    code = main(["bench", "--suite", str(suite_dir), "--methods", "greedy,exact:cbc",
                 "--methods", "obp", "--output", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "| exact/cbc | 2 | 2 | 2 | 2 | 0 |" in text
    table = read_table(out)
    assert len(table) == 6 and set(table["time_limit"]) == {15.0}
    assert main(["report", "--input", str(out), "--output-dir", str(tmp_path / "rep"),
                 "--no-plots"]) == 0
    summary = (tmp_path / "rep" / "summary.md").read_text()
    assert "two · horus · time limit 15 s · 2 instances" in summary


def test_bench_bad_input_exits_2(suite_dir, tmp_path, capsys):
    args = ["bench", "--suite", str(suite_dir), "--output", str(tmp_path / "r.csv"),
            "--no-progress"]
    assert main([*args, "--methods", "no-such-method"]) == 2
    assert "exist for none of the suite's problems" in capsys.readouterr().err
    assert main([*args, "--methods", "exact:gurobi"]) == 2
    assert main([*args, "--jobs", "0"]) == 2
    assert main([*args, "--executor", "ray"]) == 2
    assert main(["report", "--input", str(tmp_path / "none.csv")]) == 2


def test_dask_executor_joins_a_scheduler(suite_dir, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    # an in-process cluster keeps the test fast; the runner joins it by address
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tcp://", dashboard_address=None) as cluster:
        address = cluster.scheduler_address.removeprefix("tcp://")
        out = tmp_path / "r.csv"
        assert main(["bench", "--suite", str(suite_dir), "--methods", "greedy",
                     "--executor", f"dask://{address}", "--output", str(out),
                     "--no-progress"]) == 0
    assert sorted(read_table(out)["instance"]) == ["h-s0", "h-s1"]
