"""GENIE reproduction (issue 12): SWAF's order on a hand-made queue, the Sec. 7 workload
preset, and the measured reasons of ``dlsched reproduce genie`` on hand-worked runs."""

from __future__ import annotations

import pytest

from dlsched import Decision, Placement, solve, validate
from dlsched.benchmarks.reproduce_genie import _genie_fastest, _genie_run
from dlsched.cli import main
from dlsched.heuristics.genie import swaf_order
from dlsched.instance_io import load_instance, save_instance
from dlsched.instances.genie_gen import PRESETS, generate_genie, generate_genie_workload
from dlsched.problems.genie import genie_table
from dlsched.simulate import Policy
from genie_factories import toy_instance, toy_job


def _late_queue():
    # 2 x 2 toy platform, all idle, time 50 (shape table in tests/genie_factories.py).
    # p: deadline 30, already past: no on-time shape, s* = best CER overall <2,2>
    #    (25.595, Lat 11.163), w = 30 - 61.163 = -31.16
    # b: deadline 70: only <2,2> meets (50 + 11.163 <= 70), w = 70 - 61.163 = 8.84
    # a: deadline 100: every shape meets, s* = <2,2>, w = 100 - 61.163 = 38.84
    return toy_instance([toy_job("a", deadline=100.0), toy_job("b", deadline=70.0),
                         toy_job("p", deadline=30.0)], time=50.0)


def test_swaf_runs_the_task_past_its_deadline_first():
    inst = _late_queue()
    order = swaf_order(inst, genie_table(inst))
    assert [inst.jobs[j].id for j, _o, _w in order] == ["p", "b", "a"]
    assert [round(w, 2) for _j, _o, w in order] == [-31.16, 8.84, 38.84]
    assert not order[0][1].on_time and order[1][1].on_time
    # the paper's order: p (a lost cause) takes all four GPUs, b (still on time) waits
    every_gpu = ("n0/g0", "n0/g1", "n1/g0", "n1/g1")
    got = solve(inst, "swaf").decision
    assert got == Decision.of([Placement("p", every_gpu)])
    assert validate(inst, got).ok
    # the documented variant puts late tasks last: b starts and meets its ECT
    assert [inst.jobs[j].id for j, _o, _w in
            swaf_order(inst, genie_table(inst), late_last=True)] == ["b", "a", "p"]
    assert solve(inst, "swaf", late_last=True).decision == Decision.of(
        [Placement("b", every_gpu)])


def test_measured_reasons_on_a_hand_worked_run():
    # 1 x 2 toy platform (Cost = n/2 + 0.4): r has batch 1 (only <1,1>, Lat 100/10 = 10 s),
    # p has batch 4: <1,1> Lat 40, CER 10/0.9 = 11.1; <1,2> PR 17.5, Lat 22.857, CER 12.5.
    # Both arrive at 0. r: deadline 5 -> lost already, w = -5; p: deadline 1000, s* = <1,2>,
    # w = 977. SWAF starts r (0-10) on one GPU; p needs two: strict order, one GPU idles
    # 10 s while p waits; p runs 10-32.857 and is on time.
    jobs = [toy_job("r", batch=1, deadline=5.0), toy_job("p", deadline=1000.0)]
    w = toy_instance(jobs, nodes=1, gpus_per_node=2)
    fastest = _genie_fastest(w)
    assert fastest == pytest.approx({"r": 10.0, "p": 400 / 17.5})
    got = _genie_run(w, Policy("swaf"), fastest)
    assert got["qos"] == pytest.approx(50.0)
    assert got["makespan"] == pytest.approx((10 + 400 / 17.5) / 3600)
    assert got["lost_starts"] == pytest.approx(0.5)
    assert got["lost_gpu"] == pytest.approx(10 / (10 + 2 * 400 / 17.5))
    assert got["idle_wait_h"] == pytest.approx(10 / 3600)
    assert got["gpu_h"] == pytest.approx((10 + 800 / 17.5) / 3600)
    assert got["cap"] == pytest.approx(100.0)


def test_paper_preset_task_lengths():
    w = generate_genie_workload(seed=3, density=5.0, duration=24.0, preset="paper")
    lo, hi = PRESETS["paper"]["iter_min"], PRESETS["paper"]["iter_max"]
    assert (lo, hi) == (5000, 50000)
    assert all(lo <= j.iterations <= hi for j in w.jobs)
    assert w.provenance["arguments"]["preset"] == "paper"
    assert w.name.endswith("-paper")
    # explicit iterations override the preset
    short = generate_genie_workload(seed=3, preset="paper", iter_min=10, iter_max=20)
    assert all(10 <= j.iterations <= 20 for j in short.jobs)
    with pytest.raises(ValueError, match="preset"):
        generate_genie_workload(preset="nope")


def test_defaults_unchanged_by_the_preset_option(tmp_path):
    # no preset: the same bytes as the explicit former defaults, and no "preset" key
    save_instance(generate_genie(seed=5, duration=6.0), tmp_path / "a.json")
    save_instance(generate_genie(seed=5, duration=6.0, iter_min=500, iter_max=5000),
                  tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert "preset" not in load_instance(tmp_path / "a.json").provenance["arguments"]


def test_cli_preset(tmp_path):
    out = tmp_path / "w.json"
    assert main(["generate", "genie", "--preset", "paper", "--density", "5", "--duration",
                 "2", "--seed", "1", "-o", str(out)]) == 0
    inst = load_instance(out)
    assert inst.provenance["arguments"]["preset"] == "paper"
    assert inst.provenance["arguments"]["iter_min"] == 5000
