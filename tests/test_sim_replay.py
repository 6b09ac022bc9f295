"""Whole traces shipped with the package, the packed reading of trace durations, and the
replay benchmark's machine-readable last line."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest
from trace_heads import committed_doc

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.benchmarks import trace_replay
from dlsched.simulate import SpeedModel, job_table, simulate

WORKLOADS = resources.files("dlsched.instances").joinpath("workloads")


def test_whole_traces_ship_compressed_and_small():
    names = [p.name for p in WORKLOADS.iterdir()]
    for files in trace_replay.TRACE_FILES.values():
        assert set(files) <= set(names)
    shipped = {f for files in trace_replay.TRACE_FILES.values() for f in files}
    total = sum(p.stat().st_size for p in WORKLOADS.iterdir() if p.name in shipped)
    assert total < 3_000_000  # a few MB at most


def test_itp_clusters_hold_the_whole_trace():
    # the committed files' own fields (committed_doc checks that each file's stated sha256
    # is that of its content), read without building ten workloads; one cluster is loaded
    # in full, as each problem
    docs = {name.split(".")[0]: committed_doc(name) for name in trace_replay.TRACE_FILES["itp"]}
    assert len(docs) == 10
    assert sum(len(d["jobs"]) for d in docs.values()) == 69_351
    assert all(d["provenance"]["generator"] == "instances.traces" and d["problem"] == "sched2"
               for d in docs.values())
    # each_workload loads lazily, in the files' order: the first cluster as each problem
    name, sched2 = next(trace_replay.each_workload("itp", "sched2"))
    same, horus = next(trace_replay.each_workload("itp", "horus"))
    assert name == same == "itp-cluster01" and sched2.problem == "sched2"
    assert len(sched2.jobs) == len(docs[name]["jobs"]) and sched2.sha256 == docs[name]["sha256"]
    assert horus.problem == "horus" and len(horus.jobs) == len(sched2.jobs)


def _two_servers(duration: float, gpus: int, provenance: dict) -> Instance:
    jobs = (Job(id="a", submit_time=0.0, num_gpus=gpus, duration=duration, model="vgg16"),)
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 4), jobs=jobs,
                    params={}, provenance=provenance)


def test_packed_reading_runs_a_packed_job_exactly_its_duration():
    traced = {"generator": "instances.traces"}
    assert SpeedModel.for_workload(_two_servers(100.0, 4, traced)).reference == "packed"
    assert SpeedModel.for_workload(_two_servers(100.0, 4, {})).reference == "ideal"
    # 4 GPUs on one 4-GPU server: packed, so exactly 100 s under the packed reading
    run = simulate(_two_servers(100.0, 4, traced), "fifo")
    assert job_table(run)["run"].iloc[0] == 100.0
    # 6 GPUs: packing gives 4 + 2, which is the packed placement itself -> 100 s; the
    # ideal reading slows it: VGG16 S = 5.9, remote share c = 1 - (12 + 2) / 30 = 16/30,
    # slowdown 1 + 4.9 * (16/30) / (2/3) = 4.92
    run = simulate(_two_servers(100.0, 6, traced), "fifo")
    assert job_table(run)["run"].iloc[0] == pytest.approx(100.0)
    ideal = simulate(_two_servers(100.0, 6, traced), "fifo", SpeedModel(locality="sched2"))
    assert job_table(ideal)["run"].iloc[0] == pytest.approx(100.0 * (1 + 4.9 * 0.8))


def test_packed_reading_charges_placements_worse_than_packed():
    # two 3-GPU jobs leave one idle GPU per server, so a 2-GPU job is split 1 + 1:
    # c = 1 - 0 / 2 = 1, slowdown 1 + 4.9 * 1 / (2/3) = 8.35 against 1.0 packed -> 835 s
    jobs = (Job(id="busy", submit_time=0.0, num_gpus=3, duration=1000.0, model="vgg16"),
            Job(id="busy2", submit_time=0.0, num_gpus=3, duration=1000.0, model="vgg16"),
            Job(id="a", submit_time=1.0, num_gpus=2, duration=100.0, model="vgg16"))
    w = Instance(problem="sched2", cluster=homogeneous_cluster(2, 4), jobs=jobs, params={},
                 provenance={"generator": "instances.traces"})
    table = job_table(simulate(w, "fifo")).set_index("job")
    assert table.loc["a", "nodes"] == 2
    assert table.loc["a", "run"] == pytest.approx(835.0)
    assert table.loc["a", "locality_slowdown"] == pytest.approx(8.35)
    assert table.loc["busy", "run"] == 1000.0  # 3 GPUs on one server: packed


def test_replay_benchmark_prints_one_json_object_last(capsys, monkeypatch):
    # the benchmark's tiny test: its code on two small committed clusters (the figures
    # summed over them), not a whole trace (the whole Alibaba file replayed under Horus
    # FIFO cost 1.1 CPU-s; replaying whole traces is the benchmark's own run)
    monkeypatch.setitem(trace_replay.TRACE_FILES, "itp",
                        ["itp-cluster10.json.gz", "itp-cluster07-d25-26.json.gz"])
    assert trace_replay.main(["--trace", "itp", "--problem", "horus"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    row = json.loads(lines[-1])
    for key in ("jobs", "events", "cpu_s", "wall_s", "events_per_cpu_s", "peak_rss_mb",
                "jct_mean_s", "makespan_s"):
        assert key in row
    assert row["problem"] == "horus"
    assert row["jobs"] == 260 + 218 and row["events"] == 2 * (260 + 218)
    assert np.isfinite(row["jct_mean_s"]) and row["makespan_s"] > 0
    assert [line.split()[0] for line in lines[1:-1]] == ["itp-cluster10", "itp-cluster07-d25-26"]


def test_replay_benchmark_rejects_sched2_alibaba(capsys):
    assert trace_replay.main(["--trace", "alibaba", "--problem", "sched2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--problem horus" in err
