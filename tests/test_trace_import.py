"""Raw trace readers and ``dlsched import-trace``: each committed excerpt imports, with the
row count and values checked by hand against the file, and the workload replays."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance_io import load_instance
from dlsched.instances.trace_formats import read_raw_trace
from dlsched.instances.trace_import import import_trace
from dlsched.instances.traces import read_trace
from dlsched.simulate import job_table, simulate

DATA = Path(__file__).resolve().parent / "data" / "traces"


def replays(work) -> None:
    rule = "fifo" if work.problem == "sched2" else "obp"
    table = job_table(simulate(work, rule, record_events=False))
    assert len(table) == len(work.jobs)
    assert table["end"].notna().all() and (table["wait"] >= 0).all()


def job(work, job_id):
    return next(j for j in work.jobs if j.id == job_id)


def test_dirlab_excerpt():
    work, table, _ = import_trace("dirlab", DATA / "dirlab_philly_40.csv")
    assert len(work.jobs) == 40 and not table.excluded
    # rows 0-3: interval 0, 395146, 257893, 0 -> submits 0, 395146, 653039, 653039
    assert job(work, "0").submit_time == 0 and job(work, "0").duration == 1389243
    assert job(work, "1").submit_time == 395146 and job(work, "1").num_gpus == 8
    assert job(work, "3").submit_time == 653039 and job(work, "3").duration == 1042044
    assert "dropped" in table.columns["node_num"] and "kept" in table.columns["cpu_num"]
    assert work.cluster.num_gpus % 8 == 0
    replays(work)


def test_helios_is_the_dirlab_layout_and_read_trace_names_the_choices():
    work, _, _ = import_trace("helios", DATA / "dirlab_philly_40.csv")
    assert len(work.jobs) == 40
    with pytest.raises(InputError, match="import-trace"):
        read_trace("helios")


def test_itp_excerpt():
    work, table, _ = import_trace("itp", DATA / "itp_cluster10_40.csv")
    assert len(work.jobs) == 40
    first = job(work, "5dc7d9cd-c300-9a4f-c3cd-dc2cc0935548")
    assert first.submit_time == 0 and first.duration == 604 and first.num_gpus == 16
    # 2371685 - 2266647
    assert job(work, "ec42aa41-3a0d-71f3-62dc-31b28dfb54c4").submit_time == 105038
    assert set(table.columns) == {"job_id", "submission_time", "duration", "num_gpu"}
    replays(work)


def test_alibaba_excerpt_fractional_gpus_and_node_list():
    work, table, _ = import_trace("alibaba", DATA / "alibaba_pods_40.csv", problem="horus")
    # 40 pods: 4 CPU-only, 5 never scheduled (counted by awk on the file)
    assert len(work.jobs) == 31
    assert table.excluded == {"no GPU (CPU-only pod)": 4,
                              "never scheduled (no scheduled_time)": 5}
    p0 = job(work, "openb-pod-6000")  # created 12347558, scheduled ..559, deleted ..8084
    assert p0.submit_time == 0 and p0.duration == 525
    assert p0.cpu_per_gpu == pytest.approx(11.4) and p0.ram_gb_per_gpu == pytest.approx(47.0)
    p3 = job(work, "openb-pod-6003")  # gpu_milli 460 of an 8 GB GPU
    assert p3.gpu_util == pytest.approx(46.0) and p3.gpu_mem_gb == pytest.approx(3.68)
    assert "dropped" in table.columns["gpu_spec"]
    replays(work)
    nodes, _, _ = import_trace("alibaba", DATA / "alibaba_pods_40.csv", problem="horus",
                               nodes=DATA / "alibaba_nodes_12.csv")
    assert nodes.cluster.num_nodes == 12 and nodes.cluster.node_ids[0] == "openb-node-0123"
    assert nodes.cluster.num_gpus == 24  # 12 P100 servers of 2 GPUs
    replays(nodes)


def test_gavel_excerpt_duration_from_measured_throughput():
    work, table, notes = import_trace("gavel", DATA / "gavel_artifact_evaluation.trace")
    assert len(work.jobs) == 15
    first, second = job(work, "gavel-00001"), job(work, "gavel-00002")
    # ResNet-50 (batch size 64): 2931 steps at Gavel's 4.394775 steps/s on one V100
    assert first.duration == pytest.approx(2931 / 4.394775, rel=1e-5)
    assert first.model == "resnet50" and first.batch_size == 64 and first.iterations == 2931
    # Transformer (batch size 16) on 2 GPUs: 11005 steps at 14.15382 steps/s
    assert second.num_gpus == 2 and second.duration == pytest.approx(11005 / 14.15382,
                                                                     rel=1e-5)
    assert second.model == "transformer"
    assert any("seeded model" in n for n in notes)  # ResNet-18, LM, ... have no sensitivity
    assert "dropped" in table.columns["SLO"]
    replays(work)


def test_tiresias_excerpt():
    work, table, _ = import_trace("tiresias", DATA / "tiresias_60_job.csv")
    assert len(work.jobs) == 60
    j5 = job(work, "5")  # 5,8,132,288,inception3,138,44
    assert (j5.submit_time, j5.num_gpus, j5.duration, j5.iterations) == (132, 8, 138, 288)
    assert j5.model == "inception3"
    assert "dropped" in table.columns["interval"]
    replays(work)


def test_philly_synthetic_log_attempts_and_time_zone():
    work, table, notes = import_trace("philly", DATA / "philly_cluster_job_log_synthetic.json")
    assert len(work.jobs) == 4
    assert table.excluded == {"no scheduling attempt (never ran)": 1,
                              "still running when the trace was taken (no end_time)": 1}
    a = job(work, "application_synthetic_0001")
    # attempts: 74 s + (2 d 05:39:42 = 193182 s); 8 GPUs
    assert a.submit_time == 0 and a.duration == 193256 and a.num_gpus == 8
    assert job(work, "application_synthetic_0002").num_gpus == 4  # 2 + 2 on two servers
    assert job(work, "application_synthetic_0004").duration == 1800  # no-start attempt
    late = job(work, "application_synthetic_0006")
    # 2017-11-05 01:30 PDT -> 03:30 PST is 3 h, not 2; submit 29 days + 501 s after job 1
    assert late.duration == 10800 and late.submit_time == 29 * 86400 + 501
    assert any("without start or end" in n for n in notes)
    replays(work)


def test_generic_mapping_on_the_alibaba_excerpt():
    cols = ("id=name,submit=creation_time,start=scheduled_time,end=deletion_time,"
            "gpus=num_gpu,gpu_milli=gpu_milli")
    path = DATA / "alibaba_pods_40.csv"
    # the generic reader knows no "never scheduled" rule: an empty start is a bad row
    with pytest.raises(InputError, match="line 12: empty time"):
        import_trace("generic", path, problem="horus", columns=cols)
    work, table, _ = import_trace("generic", path, problem="horus", columns=cols,
                                  skip_bad=True)
    assert len(work.jobs) == 31 and sum(table.skipped.values()) == 5
    assert table.excluded["no GPU (CPU-only job)"] == 4
    assert job(work, "openb-pod-6000").duration == 525
    assert "dropped" in table.columns["qos"] and "kept" in table.columns["gpu_milli"]
    replays(work)


def test_generic_date_times_in_a_time_zone(tmp_path):
    path = tmp_path / "helios_like.csv"
    path.write_text("job,gpus,submit,start,end\n"
                    "a,2,2020-04-01 00:00:00,2020-04-01 00:10:00,2020-04-01 01:10:00\n"
                    "b,1,2020-04-01 08:00:00+08:00,2020-04-01 08:00:00+08:00,"
                    "2020-04-01 08:30:00+08:00\n")
    work, _, _ = import_trace("generic", path, tz="Asia/Shanghai",
                              columns="id=job,submit=submit,start=start,end=end,gpus=gpus")
    a, b = job(work, "a"), job(work, "b")
    assert a.duration == 3600 and b.duration == 1800
    assert b.submit_time == 8 * 3600  # both read as China time


def test_malformed_row_names_its_line_or_is_skipped(tmp_path):
    text = (DATA / "itp_cluster10_40.csv").read_text().splitlines()
    text[5] = "bad-job,12x,604,1"
    path = tmp_path / "itp.csv"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError) as err:
        read_raw_trace("itp", path)
    assert "line 6" in str(err.value) and "submission_time" in str(err.value)
    table = read_raw_trace("itp", path, skip_bad=True)
    assert len(table.frame) == 39 and sum(table.skipped.values()) == 1
    assert table.first_skipped == [6]


def test_cli_imports_replays_and_reports(tmp_path, capsys):
    out = tmp_path / "w.json.gz"
    assert main(["import-trace", "tiresias", str(DATA / "tiresias_60_job.csv"), "-o",
                 str(out), "--cluster", "4x8"]) == 0
    text = capsys.readouterr().out
    assert "interval" in text and "dropped" in text and "wrote" in text
    work = load_instance(out)
    assert work.cluster.num_gpus == 32 and len(work.jobs) == 60
    replays(work)
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,num_gpu,submit_time,duration\n1,2,0,10\n2,x,5,10\n")
    assert main(["import-trace", "tiresias", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 3" in err and "num_gpu" in err
    assert main(["import-trace", "tiresias", str(bad), "-o", str(out),
                 "--skip-bad-rows"]) == 0
    assert "skipped 1 malformed rows" in capsys.readouterr().out


def test_seeded_import_is_byte_identical(tmp_path):
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    for path in (a, b):
        assert main(["import-trace", "dirlab", str(DATA / "dirlab_philly_40.csv"), "-o",
                     str(path), "--seed", "3"]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert not math.isnan(load_instance(a).jobs[0].gpu_util)


def test_topology_file_gives_the_cluster(tmp_path):
    from dlsched.topology import homogeneous_cluster
    from dlsched.topology_io import save_topology

    graph = tmp_path / "cluster.json"
    save_topology(homogeneous_cluster(2, 8, nodes_per_rack=1), graph)
    out = tmp_path / "w.json.gz"
    assert main(["import-trace", "tiresias", str(DATA / "tiresias_60_job.csv"), "-o",
                 str(out), "--topology", str(graph)]) == 0
    work = load_instance(out)
    assert work.cluster.num_gpus == 16 and work.cluster.num_nodes == 2
    replays(work)
