"""benchmarks/offline_scale.py on a tiny setting: rows per solve, and the printed summary."""

import json

from dlsched.benchmarks.offline_scale import main, scale_rows


def test_scale_rows_one_row_per_workload_and_objective():
    rows = scale_rows([3, 4], servers=1, gpus_per_server=2, seeds=[0],
                      objectives=["makespan", "weighted_jct"], time_limit=20)
    assert [(r["jobs"], r["objective"]) for r in rows] == [
        (3, "makespan"), (3, "weighted_jct"), (4, "makespan"), (4, "weighted_jct")]
    for r in rows:
        assert r["cluster"] == "1x2"
        assert r["status"] == "optimal"  # 3-4 jobs on 2 GPUs: CP-SAT proves at once
        assert abs(r["objective_value"] - r["bound"]) <= 1e-6 * r["objective_value"]


def test_main_prints_the_summary_as_its_last_line(capsys):
    main(["--clusters", "1x2", "--jobs", "3", "--seeds", "1", "--objectives", "makespan",
          "--time-limit", "20"])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["benchmark"] == "offline_scale"
    assert last["results"]["1x2 3 makespan"]["proven"] == 1
