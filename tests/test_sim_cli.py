"""``dlsched simulate``: end to end on a tiny workload, and its input errors."""

from __future__ import annotations

import json

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.cli import main
from dlsched.instance_io import save_instance


def _workload(path):
    jobs = (Job(id="a", submit_time=0.0, num_gpus=2, duration=10.0, model="vgg16"),
            Job(id="b", submit_time=1.0, num_gpus=1, duration=5.0, model="transformer"))
    w = Instance(problem="sched2", cluster=homogeneous_cluster(1, 2, gpu_type="g"), jobs=jobs,
                 params={}, name="cli")
    save_instance(w, path)
    return path


def test_simulate_writes_results(tmp_path, capsys):
    wl = _workload(tmp_path / "w.json")
    code = main(["simulate", str(wl), "--policy", "fifo", "--out", str(tmp_path / "out"),
                 "--no-plots", "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "makespan" in out and "results written" in out
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    # a (2 GPUs, 10 s) runs 0-10, b waits until 10 and runs 5 s: makespan 15 - 0
    assert doc["summary"]["makespan"] == 15.0
    assert doc["policy"] == "fifo"


def test_simulate_bad_inputs(tmp_path, capsys):
    wl = _workload(tmp_path / "w.json")
    assert main(["simulate", str(wl), "--out", str(tmp_path / "o")]) == 2  # no policy
    assert main(["simulate", str(wl), "--policy", "nope", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2
    assert main(["simulate", str(tmp_path / "missing.json"), "--policy", "fifo",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no policy given" in err and "no method 'nope'" in err
