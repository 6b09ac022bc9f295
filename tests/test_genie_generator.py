"""GENIE generator: byte-identical files, Table-3 proportions, snapshots, the CLI."""

from __future__ import annotations

from collections import Counter

import pytest

from dlsched.cli import main
from dlsched.instance_io import load_instance, save_instance
from dlsched.instances.genie_gen import generate_genie, generate_genie_workload, genie_snapshot
from dlsched.problems.genie import parse_genie_params, task_of
from dlsched.problems.genie.model import TABLE3_MODELS, solo_latency


def test_same_arguments_same_bytes(tmp_path):
    for i in range(2):
        save_instance(generate_genie(seed=7, snapshot=True), tmp_path / f"s{i}.json")
        save_instance(generate_genie(seed=7, duration=6.0), tmp_path / f"w{i}.json")
    assert (tmp_path / "s0.json").read_bytes() == (tmp_path / "s1.json").read_bytes()
    assert (tmp_path / "w0.json").read_bytes() == (tmp_path / "w1.json").read_bytes()
    save_instance(generate_genie(seed=8, duration=6.0), tmp_path / "other.json")
    assert (tmp_path / "other.json").read_bytes() != (tmp_path / "w0.json").read_bytes()


def test_table3_proportions():
    # 20 tasks/hour over 200 h: about 4000 tasks; tolerances are ~4 standard deviations
    w = generate_genie_workload(seed=1, density=20.0, duration=200.0)
    n = len(w.jobs)
    assert 4000 * 0.94 < n < 4000 * 1.06
    qos = Counter(j.qos for j in w.jobs)
    assert qos["urgent"] / n == pytest.approx(0.05, abs=0.015)
    assert qos["prior"] / n == pytest.approx(0.35, abs=0.03)
    assert qos["normal"] / n == pytest.approx(0.60, abs=0.03)
    assert Counter(j.kind for j in w.jobs)["train"] / n == pytest.approx(0.5, abs=0.03)
    models = Counter(j.model for j in w.jobs)
    assert set(models) == set(TABLE3_MODELS)
    assert all(c / n == pytest.approx(1 / 6, abs=0.03) for c in models.values())
    assert {j.batch_size for j in w.jobs} == {16, 32, 64, 128, 256}
    assert all(500 <= j.iterations <= 5000 for j in w.jobs)
    submits = [j.submit_time for j in w.jobs]
    assert submits == sorted(submits) and submits[0] > 0 and submits[-1] <= 200 * 3600
    assert not w.running and w.time == 0.0


def test_deadlines_follow_eq9():
    w = generate_genie_workload(seed=2, duration=10.0)
    coefs = parse_genie_params(w.params).coefficients
    factor = {"urgent": 0.0, "prior": 1.0, "normal": 2.0}
    for j in w.jobs:
        solo = solo_latency(coefs[j.model], task_of(j))
        assert j.deadline == pytest.approx(j.submit_time + factor[j.qos] * solo, abs=1e-3)


def test_snapshot_shape():
    base = generate_genie_workload(seed=4, density=10.0, duration=24.0)
    snap = genie_snapshot(base, seed=5, waiting=12, busy=0.5)
    assert len(snap.jobs) == 12
    assert all(j.submit_time <= snap.time for j in snap.jobs)
    assert snap.time == max(j.submit_time for j in snap.jobs)
    busy = int(snap.gpu_busy.sum())
    assert 0 < busy <= 8  # never above the target of 0.5 * 16 GPUs
    assert all(r.remaining_s > 0 and r.extra["model"] in TABLE3_MODELS for r in snap.running)
    started = {r.job for r in snap.running}
    assert not started & {j.id for j in snap.jobs}
    # defaults: 10-20 waiting tasks
    assert all(10 <= len(generate_genie(seed=s, snapshot=True).jobs) <= 20 for s in range(5))


def test_larger_platform():
    w = generate_genie(seed=0, nodes=16, gpus_per_node=8, duration=2.0, waiting=10)
    assert w.cluster.num_gpus == 128 and len(w.jobs) == 10


def test_bad_arguments():
    with pytest.raises(ValueError, match="qos_mix"):
        generate_genie_workload(qos_mix=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="waiting"):
        generate_genie(seed=0, duration=0.5, waiting=1000)


def test_cli_generate_and_solve(tmp_path, capsys):
    out = tmp_path / "snap.json"
    assert main(["generate", "genie", "--snapshot", "--waiting", "10", "--seed", "3",
                 "-o", str(out)]) == 0
    inst = load_instance(out)
    assert inst.problem == "genie" and len(inst.jobs) == 10
    sol = tmp_path / "sol.json"
    assert main(["solve", str(out), "--method", "swaf", "-o", str(sol)]) == 0
    assert main(["validate", str(out), str(sol)]) == 0
