"""CPU-time limits and CPU seconds: a run over its CPU limit is stopped however busy the
machine is (the verdict never depends on the wall clock), and every result records the
CPU seconds it used, a solver subprocess's included."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pandas as pd
import pytest
from conftest import readable_dir

from dlsched import solve
from dlsched.benchmarks import runner
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.compete import compete, parse_entrant
from dlsched.benchmarks.library import load_manifest
from dlsched.benchmarks.sandbox import fork_call
from dlsched.cli import main
from dlsched.registry import generators
from dlsched.solve import cpu_seconds

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _spin() -> bytes:
    while True:
        pass


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib") / "one"
    root.mkdir()
    (root / "suite.json").write_text(json.dumps({
        "name": "one", "best_known": {"runs": [{"method": "greedy"}]},
        "instances": [{"name": "h", "generator": "horus", "seeds": [0],
                       "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 2}}]}))
    build_suite(root, jobs=1, progress=False)
    return root


def test_a_benchmark_run_over_its_cpu_limit_is_killed_with_the_reason(suite, monkeypatch):
    # one spinning run (a whole CPU second, the finest RLIMIT_CPU) checks both layers: the
    # forked run stops at its CPU limit, not the clock, and the runner's row says so
    forked = []

    def recording_fork_call(*args, **kwargs):
        forked.append(fork_call(*args, **kwargs))
        return forked[-1]

    monkeypatch.setattr(runner, "fork_call", recording_fork_call)
    monkeypatch.setattr(runner, "_execute", lambda task: _spin())
    settings = runner.BenchSettings(methods=["greedy"], time_limit=600, jobs=1,
                                    progress=False, cpu_limit=1)
    task = runner.plan(load_manifest(suite), settings)[0]
    out = runner.run_task(task)
    [run] = forked
    assert not run.killed  # not the wall clock (600 s): the CPU limit
    assert os.WIFSIGNALED(run.status)
    assert os.WTERMSIG(run.status) in (signal.SIGXCPU, signal.SIGKILL)
    assert run.cpu is not None and 0.8 <= run.cpu < 3.0  # the kernel counts in ticks
    assert out["status"] == runner.CPU_LIMIT
    assert "CPU limit of 1 s" in out["message"]
    assert 0.8 <= out["cpu_time"] < 3.0


def test_bench_records_cpu_seconds_and_the_cpu_limit(suite, tmp_path, capsys):
    table = tmp_path / "r.csv"
    assert main(["bench", "--suite", str(suite), "--methods", "greedy", "--jobs", "1",
                 "--cpu-limit", "3", "--no-progress", "--output", str(table)]) == 0
    rows = pd.read_csv(table)
    assert rows["cpu_limit"].tolist() == [3.0]
    # no --time-limit: the wall-clock limit does not bind before the CPU limit
    assert rows["time_limit"].tolist() == [30.0]
    assert rows["cpu_time"].iloc[0] > 0
    # the same run without a CPU limit is another run (the key has the CPU limit)
    assert main(["bench", "--suite", str(suite), "--methods", "greedy", "--jobs", "1",
                 "--time-limit", "30", "--no-progress", "--output", str(table)]) == 0
    assert len(pd.read_csv(table)) == 2


def test_an_entrant_over_its_cpu_limit_crashes_with_the_reason(suite, tmp_path):
    folder = readable_dir()
    try:
        (folder / "spin.sh").write_text("while :; do :; done\n")
        entrant = parse_entrant(f"/bin/sh {folder / 'spin.sh'} {{instance}} {{solution}}",
                                "spin")
        compete(load_manifest(suite), [entrant], tmp_path / "out", time_limit=600, grace=1,
                progress=False, cpu_limit=1, plots=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    row = pd.read_csv(tmp_path / "out" / "scores.csv").iloc[0]
    assert row["outcome"] == "crash"
    assert "SIGXCPU" in row["reason"] or "SIGKILL" in row["reason"], row["reason"]


def test_cpu_seconds_count_a_child_process_that_was_waited_for():
    code = ("import time\nend = time.process_time() + 0.1\n"
            "while time.process_time() < end: pass\nprint(time.process_time())")
    before = cpu_seconds()
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)
    assert cpu_seconds() - before >= float(child.stdout)


@pytest.mark.parametrize("how", ["greedy", "exact:cbc", "exact:cpsat"])
def test_every_result_records_its_cpu_seconds(how):
    method, _, backend = how.partition(":")
    backend = backend or None
    inst = generators()["horus"].build(seed=1, nodes=2, gpus_per_node=2, beta=3)
    result = solve(inst, method, backend=backend, time_limit=30)
    assert result.cpu_time is not None and result.cpu_time >= 0
    assert result.to_dict()["cpu_time"] == result.cpu_time
    assert "cpu time" in result.summary()
    if backend is not None:  # building and solving a model costs some CPU
        assert result.cpu_time > 0
