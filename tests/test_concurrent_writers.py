"""Writers that run at the same time lose nothing: rows added to one results table from
several processes at once all arrive, two ``dlsched bench`` or two ``dlsched compete``
runs into one output keep every row of both, and two runs that improve one suite's best
known values keep both's improvements."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import readable_dir

from dlsched import solve
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.library import Offer, load_manifest
from dlsched.benchmarks.results_table import COLUMNS, TableWriter, read_table
from dlsched.benchmarks.runner import store_best
from dlsched.cli import main

WRITERS, ROWS = 4, 4  # each writer's rows overlap the others' (~20 ms a row)


def _add_rows(path: str, writer: int) -> None:
    out = TableWriter(Path(path))
    for k in range(ROWS):
        row = dict.fromkeys(COLUMNS)
        row.update(instance_sha256=f"sha{writer}", method="m", backend="", seed=k,
                   time_limit=1.0, status="feasible", objective=float(writer * 100 + k))
        out.add(row)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_rows_added_by_several_processes_at_once_all_arrive(tmp_path, suffix):
    path = tmp_path / f"results{suffix}"
    if suffix == ".parquet":  # the Parquet engine loaded once here, not in each writer
        pd.DataFrame({"x": [1]}).to_parquet(io.BytesIO())
    context = multiprocessing.get_context("fork")
    procs = [context.Process(target=_add_rows, args=(str(path), w)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    table = read_table(path)
    assert len(table) == WRITERS * ROWS
    assert sorted(table["objective"]) == sorted(float(w * 100 + k) for w in range(WRITERS)
                                                 for k in range(ROWS))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_a_run_already_in_the_table_is_not_added_twice(tmp_path):
    path = tmp_path / "results.csv"
    _add_rows(str(path), 0)
    _add_rows(str(path), 0)  # the same runs again, as a second benchmark would write them
    assert len(read_table(path)) == ROWS


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib") / "two"
    root.mkdir()
    (root / "suite.json").write_text(json.dumps({
        "name": "two", "best_known": {"runs": [{"method": "greedy"}]},
        "instances": [{"name": "h", "generator": "horus", "seeds": [0, 1, 2],
                       "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 2}}]}))
    build_suite(root, jobs=1, progress=False)
    return root


def _main_into(argv: list[str], err: str) -> None:
    """``dlsched ARGV`` in this (forked) process, its stderr into the file ``err``."""
    with open(err, "w", encoding="utf-8") as fh:
        os.dup2(fh.fileno(), 2)
        sys.stderr = fh  # pytest's capture had replaced it
        code = main(argv)
    sys.exit(code)


def _dlsched(err: Path, *argv: str) -> tuple[multiprocessing.Process, Path]:
    """``dlsched ARGV`` started in a process of its own, forked from this one: a separate
    process as a second command would be, without a fresh interpreter importing the
    package (~0.8 CPU-s each); its stderr goes to the file ``err``."""
    proc = multiprocessing.get_context("fork").Process(target=_main_into,
                                                       args=(list(argv), str(err)))
    proc.start()
    return proc, err


def _both(a: tuple[multiprocessing.Process, Path], b: tuple[multiprocessing.Process, Path]
          ) -> None:
    for proc, err in (a, b):
        proc.join(timeout=600)
        assert proc.exitcode == 0, err.read_text() if err.exists() else "no stderr file"


def test_two_benchmarks_into_one_table_keep_both(suite, tmp_path):
    # CSV only: the runner adds its rows through TableWriter whatever the suffix, which
    # decides only how TableWriter reads and writes the file; TableWriter's Parquet form
    # under several writers at once is test_rows_added_by_several_processes_at_once_all_
    # arrive[.parquet]; a bench run into a .parquet table, test_bench_runner's
    # test_parquet_output_and_parallel_pool
    out = tmp_path / "r.csv"
    runs = [_dlsched(tmp_path / f"{method}.err", "bench", "--suite", str(suite), "--methods",
                     method, "--jobs", "1", "--no-progress", "--output", str(out))
            for method in ("greedy", "obp")]
    _both(*runs)
    table = read_table(out)
    assert sorted(table["method"]) == ["greedy"] * 3 + ["obp"] * 3


def test_two_competitions_into_one_folder_keep_both(suite, tmp_path):
    scripts = readable_dir()
    try:
        script = scripts / "waits.sh"
        script.write_text('sha=$(sed -n \'s/^  "sha256": "\\([0-9a-f]*\\)".*/\\1/p\' "$1")\n'
                          'printf \'{"format_version": 1, "instance_sha256": "%s", '
                          '"placements": []}\' "$sha" > "$2"\n')
        out = tmp_path / "c"
        runs = [_dlsched(tmp_path / f"{name}.err", "compete", "--suite", str(suite),
                         "--no-progress", "--time-limit", "30", "--solver",
                         f"/bin/sh {script} {{instance}} {{solution}}", "--name", name,
                         "--output", str(out), "--no-plots")
                for name in ("one", "two")]
        _both(*runs)
    finally:
        shutil.rmtree(scripts, ignore_errors=True)
    scores = pd.read_csv(out / "scores.csv")
    assert sorted(scores["entrant"]) == ["one"] * 3 + ["two"] * 3
    assert set(scores["outcome"]) == {"ok"}
    board = pd.read_csv(out / "leaderboard.csv")  # written by the one that ended last
    assert sorted(board["entrant"]) == ["one", "two"]


def _offer_optimum(directory: str, name: str, barrier) -> None:
    manifest = load_manifest(directory)  # both writers hold the manifest of the start
    result = solve(manifest.load(name), "exact", backend="cbc", time_limit=60)
    barrier.wait(timeout=120)
    store_best(manifest, [Offer(name, result.decision, result.objective,
                                result.status.value, result.bound, "exact", "cbc", 0)])


def test_two_writers_improving_one_suite_keep_both_improvements(tmp_path):
    root = tmp_path / "weak"
    root.mkdir()
    (root / "suite.json").write_text(json.dumps({
        "name": "weak", "best_known": {"runs": [{"method": "fifo"}]},
        "instances": [{"name": "h", "generator": "horus", "seeds": [0, 1],
                       "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                     "busy": 0.5}}]}))
    build_suite(root, jobs=1, progress=False)
    before = {n: r["best"]["objective"] for n, r in load_manifest(root).entries.items()}
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    procs = [context.Process(target=_offer_optimum, args=(str(root), name, barrier))
             for name in before]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    after = load_manifest(root).entries
    for name, value in before.items():  # the exact model proves (or improves) fifo's value
        best = after[name]["best"]
        assert (best["method"], best["status"]) == ("exact", "optimal"), best
        assert best["objective"] <= value
