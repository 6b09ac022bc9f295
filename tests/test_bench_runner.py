"""The benchmark runner on a two-instance suite: table shape, gaps, resume, isolation."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time

import pandas as pd
import pytest

from dlsched import save_instance, solve
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.library import load_manifest
from dlsched.benchmarks.results_table import COLUMNS, read_table
from dlsched.benchmarks.runner import BenchSettings, gap_to_best, run_bench
from dlsched.registry import _METHODS, MethodSpec, register_method
from dlsched.result import MethodOutput
from dlsched.validate import evaluate
from factories import horus_instance, running

# f(x) = x up to 100 % (the quadratic x² above is convex and meets the line at 1)
PARAMS = {"unplaced_penalty": 10.0,
          "interference": {"gtx1080": {"quadratic": [1.0, 0.0, 0.0], "linear": [1.0, 0.0]}}}


def make_suite(root):
    """A suite of two instances: a hand-made one-GPU snapshot and a generated 2 × 4 one."""
    root.mkdir(parents=True, exist_ok=True)
    # one GPU (8 GB) runs a job at 10 % using 1 GB; one pending job needs 10 % and 1 GB
    hand = horus_instance([("j0", 1, 10.0, 1.0)], [running("r0", ["n0/g0"], 10.0, 1.0)],
                          gpus_per_node=1, params=PARAMS)
    save_instance(hand, root / "hand.json")
    spec = {"name": "two", "best_known": {"runs": [{"method": "exact", "backend": "cbc"}],
                                          "time_limit": 30},
            "instances": [{"name": "hand", "file": "hand.json"},
                          {"name": "gen", "generator": "horus", "seeds": [3],
                           "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    return build_suite(root, jobs=1, progress=False)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """The two-instance suite, built once for this module."""
    return make_suite(tmp_path_factory.mktemp("lib") / "two")


def settings(**kw):
    base = dict(time_limit=20.0, jobs=1, progress=False)
    base.update(kw)
    return BenchSettings(**base)


def test_gap_formula_by_hand():
    # minimization: (12 - 10) / max(12, 10) = 1/6
    assert gap_to_best(12.0, 10.0, "min") == pytest.approx(1 / 6)
    # maximization: (10 - 8) / max(8, 10) = 0.2
    assert gap_to_best(8.0, 10.0, "max") == pytest.approx(0.2)
    # better than the best known: (9 - 10) / 10 = -0.1
    assert gap_to_best(9.0, 10.0, "min") == pytest.approx(-0.1)
    assert gap_to_best(0.0, 0.0, "min") == 0.0
    assert gap_to_best(None, 10.0, "min") is None


def test_table_shape_and_hand_checked_gap(suite, tmp_path):
    out = tmp_path / "r.csv"
    # the default methods on the hand-made instance: exact on 4 backends + fifo, greedy,
    # obp, pab (× 1 seed), each in a process of its own; on the generated one the
    # heuristics, into the same table (the exact model's four runs there, ~0.4 CPU-s of
    # forks, checked nothing the hand-made instance's do not: their objective is checked
    # there, their status and backends below)
    rows, _ = run_bench(suite, settings(), out, instances=["hand"])
    assert len(rows) == 8
    heuristics = ["fifo", "greedy", "obp", "pab"]
    rows, _ = run_bench(suite, settings(methods=heuristics), out, instances=["gen-s3"])
    assert sorted(rows["method"]) == heuristics
    table = read_table(out)
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == 12
    assert set(table["status"]) <= {"optimal", "feasible"}
    exact = table[(table["instance"] == "hand") & (table["method"] == "exact")]
    assert set(exact["backend"]) == {"cbc", "highs", "scip", "cpsat"}
    # optimum: place j0 on the busy GPU: memory (1 + 1) / 8 = 0.25, interference
    # f(0.10 + 0.10) = 0.2, total 0.45; FIFO uses idle GPUs only, so j0 waits: penalty 10
    assert exact["objective"].tolist() == pytest.approx([0.45] * 4)
    assert (exact["status"] == "optimal").all()
    fifo = table[(table["instance"] == "hand") & (table["method"] == "fifo")].iloc[0]
    assert fifo["objective"] == pytest.approx(10.0)
    assert fifo["best_known"] == pytest.approx(0.45)
    # (10 - 0.45) / 10 = 0.955
    assert fifo["gap_to_best"] == pytest.approx(0.955)
    # the generated instance: the row's objective is the evaluator's value of the decision
    gen = table[(table["instance"] == "gen-s3") & (table["method"] == "obp")].iloc[0]
    decision = solve(suite.load("gen-s3"), "obp").decision
    assert gen["objective"] == pytest.approx(evaluate(suite.load("gen-s3"), decision))
    assert table["peak_rss_mb"].min() > 0
    assert table["wall_time"].min() > 0


# The tests below run in the worker process (isolate=False): what they check (resuming, the
# output format, the pool's determinism) does not depend on where a run happens, and a
# fork per run was ~25 ms of CPU each. The forked path is checked above (every method and
# backend, peak memory), by test_crash_hang_and_bug_are_rows_not_fatal (crash, hang) and by
# test_bench_cli.py (the command's default).


def test_resume_skips_rows_already_present(suite, tmp_path):
    out = tmp_path / "r.csv"
    first, _ = run_bench(suite, settings(methods=["greedy", "fifo"], isolate=False), out)
    again, _ = run_bench(suite, settings(methods=["greedy", "fifo", "obp"], isolate=False),
                         out)
    assert len(first) == 4
    assert set(again["method"]) == {"obp"} and len(again) == 2
    assert len(read_table(out)) == 6
    # another time limit is another run
    other, _ = run_bench(suite, settings(methods=["greedy"], time_limit=5.0, isolate=False),
                         out)
    assert len(other) == 2


def test_parquet_output_and_parallel_pool(suite, tmp_path):
    out = tmp_path / "r.parquet"
    rows, _ = run_bench(suite, settings(methods=["greedy", "obp"], jobs=2, isolate=False), out)
    assert len(rows) == 4
    assert len(read_table(out)) == 4


def test_same_settings_same_objectives(suite, tmp_path):
    # the generated instance (the hand-made one has one job): 8 runs per benchmark
    methods, only = ["exact:cpsat", "greedy", "obp", "fifo"], ["gen-s3"]
    a, _ = run_bench(suite, settings(methods=methods, seeds=(0, 1), isolate=False),
                     tmp_path / "a.csv", instances=only)
    b, _ = run_bench(suite, settings(methods=methods, seeds=(0, 1), jobs=2, isolate=False),
                     tmp_path / "b.csv", instances=only)
    assert len(a) == 8
    key = ["instance", "method", "backend", "seed"]
    a = a.sort_values(key).reset_index(drop=True)
    b = b.sort_values(key).reset_index(drop=True)
    assert a[key].equals(b[key])
    assert a["objective"].tolist() == pytest.approx(b["objective"].tolist(), rel=1e-9)


def _crash(instance, **_):
    os.kill(os.getpid(), signal.SIGSEGV)


def _hang(instance, **_):
    time.sleep(60)


def _bug(instance, **_):
    raise RuntimeError("a bug")


def _none(instance, **_):
    from dlsched.result import Status

    return MethodOutput(None, Status.NO_SOLUTION, bound=0.1)


@pytest.fixture
def broken_methods():
    """Methods that segfault, hang, raise, or find nothing, registered for horus."""
    names = {"t-crash": _crash, "t-hang": _hang, "t-bug": _bug, "t-none": _none}
    for name, run in names.items():
        register_method(MethodSpec("horus", name, "heuristic", run))
    yield list(names)
    for name in names:
        _METHODS.pop(("horus", name), None)


def test_crash_hang_and_bug_are_rows_not_fatal(suite, tmp_path, broken_methods):
    hang = ["t-hang"]
    rest = [m for m in broken_methods if m not in hang]
    # the default hard limit for the methods that end by themselves (a verdict a busy
    # machine cannot change); a short one for the hang, which never ends: killed at any
    # limit, so 0.2 s gives the verdict 1 s did, waiting less. One table: the second
    # benchmark adds its row to the first one's
    first, _ = run_bench(suite, settings(methods=[*rest, "greedy"]), tmp_path / "r.csv",
                         instances=["hand"])
    second, _ = run_bench(suite, settings(methods=hang, kill_after=0.2), tmp_path / "r.csv",
                          instances=["hand"])
    assert len(read_table(tmp_path / "r.csv")) == 5
    rows = pd.concat([first, second], ignore_index=True)
    status = dict(zip(rows["method"], rows["status"], strict=True))
    assert status == {"t-crash": "crash", "t-hang": "killed", "t-bug": "error",
                      "t-none": "no_solution", "greedy": "feasible"}
    msg = dict(zip(rows["method"], rows["message"], strict=True))
    assert "signal 11" in msg["t-crash"]
    assert "a bug" in msg["t-bug"]
    assert rows[rows["method"] == "t-hang"]["wall_time"].iloc[0] < 10


def test_update_best_only_with_validated_improvement(suite, tmp_path):
    # a copy of the module's suite (this test rewrites its manifest), not a second build:
    # the same files (the build is deterministic: test_library.py)
    manifest = load_manifest(shutil.copytree(suite.directory, tmp_path / "two"))
    rec = manifest.entries["hand"]
    assert rec["best"]["objective"] == pytest.approx(0.45)
    assert rec["best"]["status"] == "optimal"
    # worse heuristic results do not replace the stored best
    run_bench(manifest, settings(methods=["fifo"], isolate=False), None, update_best=True)
    assert load_manifest(tmp_path / "two").entries["hand"]["best"]["objective"] == \
        pytest.approx(0.45)
