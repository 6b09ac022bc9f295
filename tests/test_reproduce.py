"""``dlsched reproduce``: rows, kinds and verdicts; the stated settings; quick JSON rows."""

from __future__ import annotations

import json

import pytest

from dlsched.benchmarks.claim_rows import Row, as_smoke, beyond, compare, count, verdict
from dlsched.benchmarks.paper_claims import Claim
from dlsched.benchmarks.reproduce_horus import TABLE7_JOBS, _table7_workload, stated_workload
from dlsched.cli import main

KEYS = {"claim", "kind", "paper_value", "ours", "direction_matches", "within_2x", "reason",
        "ablation_of"}


def _cut(**kw) -> Claim:
    base = dict(id="p.fig1", quote="q", source="Fig. 1", value=-0.2, unit="relative change",
                direction="lower", setting="s")
    return Claim(**{**base, **kw})


def test_compare_checks_direction_and_factor_two():
    row = compare(_cut(), "r", [-0.1, -0.3], "why")
    assert (row.paper, row.claim, row.kind, row.cite, row.paper_value) == (
        "p", "p.fig1", "headline", "Fig. 1", "-20.0 %")
    assert row.direction_matches and row.within_2x and row.reason == ""
    row = compare(_cut(), "r", [0.05], "why")
    assert not row.direction_matches and not row.within_2x and row.reason == "why"
    row = compare(_cut(), "r", [-0.5], "why")
    assert row.direction_matches and not row.within_2x
    rise = _cut(id="p.fig7", value=[0.1, 0.3], direction="higher")
    row = compare(rise, "r", [0.55], "why", claimed=[0.1, 0.3])  # a range: [0.05, 0.6]
    assert row.within_2x and row.paper_value == "+10.0 … +30.0 %"
    table = _cut(id="p.table6", value=204.0, baseline=267.3, unit="min")
    assert compare(table, "r", [-0.2], "why").paper_value == "-23.7 %"
    # the boundaries of "within 2x": |lo| / 2 and 2 |hi| are in, just beyond is out
    assert verdict(-0.1, -0.2, -0.2) == (True, True)
    assert verdict(-0.4, -0.2, -0.2) == (True, True)
    assert verdict(-0.0999, -0.2, -0.2) == (True, False)
    assert verdict(0.3, -0.2, -0.2) == (False, False)


def test_a_ratio_claim_is_a_relative_change():
    # "makespan by 2.1x": the best baseline's over SCHED²'s, so SCHED² is 1 / 2.1 of it
    ratio = _cut(value=2.1, unit="ratio (best baseline / SCHED²)")
    assert ratio.change() == pytest.approx(1 / 2.1 - 1)
    row = compare(ratio, "r", [-0.3], "why")
    assert row.paper_value == "-52.4 %" and row.within_2x


def test_kinds_ablations_and_smoke():
    row = compare(_cut(), "r", [0.05], "what changed", kind="ablation", ablation_of="p.fig1")
    assert row.kind == "ablation" and row.ablation_of == "p.fig1" and row.reason
    # a sensitivity or ablation row keeps its reason even when it reproduces
    assert compare(_cut(), "r", [-0.2], "reading", kind="sensitivity").reason == "reading"
    with pytest.raises(ValueError, match="ablation"):
        compare(_cut(), "r", [0.05], "x", kind="ablation")
    with pytest.raises(ValueError, match="kind"):
        Row("p", "p.x", "other", "r", "c", "v", "o", 1, None, None)
    with pytest.raises(ValueError, match="start"):
        Row("p", "q.x", "headline", "r", "c", "v", "o", 1, None, None)
    rows = [compare(_cut(), "r", [-0.2], "x"), compare(_cut(), "r", [0.1], "x"),
            compare(_cut(id="p.fig2"), "r", [-0.2], "x"),
            compare(_cut(), "r", [0.1], "x", kind="ablation", ablation_of="p.fig1"),
            beyond("p", "m-optimum", "m vs optimum", [0.1, 0.3])]
    # an id counts only when every headline row of it reproduces
    assert count(rows) == {"headline_ids": 2, "reproduced": 1}
    assert rows[-1].claim == "p.beyond.m-optimum" and rows[-1].ours.startswith("mean gap 20")
    smoke = as_smoke(rows)
    assert {r.kind for r in smoke} == {"smoke"}
    assert all(r.direction_matches is None and r.within_2x is None for r in smoke)
    assert count(smoke) == {"headline_ids": 0, "reproduced": 0}


def test_horus_stated_settings():
    w = stated_workload(0, "w-small")
    assert len(w.jobs) == 100 and {j.num_gpus for j in w.jobs} == {1}
    assert {j.submit_time for j in w.jobs} == {0.0}
    assert (w.params["queues"], w.params["beta"], w.cluster.num_gpus) == (1, 15, 12)
    t7 = _table7_workload()
    assert len(t7.jobs) == TABLE7_JOBS and t7.cluster.num_gpus == 1024
    assert {j.submit_time for j in t7.jobs} == {0.0}
    # the window oversubscribes 128 x 8 (the reason it was chosen)
    assert sum(j.num_gpus for j in t7.jobs) == 1908


@pytest.mark.parametrize("paper", ["horus", "genie", "liquid", "sched2", "inference"])
def test_reproduce_quick_json_rows_are_smoke(paper, capsys, monkeypatch):
    # one seed: smoke rows carry no verdict, and every row is built per seed the same way
    from dlsched.benchmarks import (
        reproduce_genie,
        reproduce_horus,
        reproduce_inference,
        reproduce_liquid,
        reproduce_sched2,
    )

    # smaller than --quick (the same rows, the same code; this test checks their plumbing,
    # CPU-s of the five in one process: 12.9 -> 4.5): inference 7-s slots, tuned on 1.2-s
    # episodes; liquid 4 servers and the GAs stopped after 2 generations (the GA's
    # search is tested in test_liquid_heuristics.py); sched2 20-job episodes (the same
    # rows and library line-arcs as 40); GENIE 3 h of arrivals; Horus 8 jobs
    monkeypatch.setattr(reproduce_genie, "QUICK_HOURS", 3.0)
    monkeypatch.setattr(reproduce_horus, "QUICK_JOBS", 8)
    monkeypatch.setattr(reproduce_inference, "QUICK_HOURS", 0.002)
    monkeypatch.setattr(reproduce_inference, "QUICK_TUNE_MINUTES", 0.02)
    monkeypatch.setattr(reproduce_liquid, "QUICK_NODES", 4)
    monkeypatch.setattr(reproduce_liquid, "GAS", {
        k: (m, {**o, "max_generations": 2}) for k, (m, o) in reproduce_liquid.GAS.items()})
    monkeypatch.setattr(reproduce_sched2, "QUICK_JOBS", 20)
    assert main(["reproduce", paper, "--quick", "--seeds", "1", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert len(rows) >= 3
    for row in rows:
        assert set(row) >= KEYS
        assert row["paper"] == paper and row["claim"].startswith(paper + ".")
        assert row["kind"] == "smoke"
        assert row["direction_matches"] is None and row["within_2x"] is None
        assert row["result"] and row["paper_value"] and row["ours"]
    if paper == "sched2":
        # the paper's setting: its learner is a DQN, its mean inter-arrival 172 s (Sec. III,
        # IV-A); both readings of the rules' candidates and of the durations are reported
        e_rows = [r["result"] for r in rows if r["claim"].startswith("sched2.fig7.E")]
        assert sum("E, dqn vs the best rule [172 s arrivals" in x for x in e_rows) == 6
        assert sum("E, dqn vs the best rule [rules see the first 10 jobs]" in x
                   for x in e_rows) == 3


def test_gavel_rounds_tiny(capsys):
    from dlsched.benchmarks import gavel_rounds

    assert gavel_rounds.main(["--jobs", "30"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["figures"]
    assert [f["jobs"] for f in figures] == [10, 30, 10, 30]
    # a lease that holds GPUs to a round's end never finishes a FIFO job earlier here
    assert all(f["jct_rounds_s"] >= f["jct_events_s"] for f in figures)


def test_liquid_ps_apart_counts_jobs_whose_ps_has_no_worker_beside_it():
    from dlsched import Instance, Job, homogeneous_cluster
    from dlsched.benchmarks.reproduce_liquid import _ps_apart
    from dlsched.decision import Decision, Placement, TaskPlacement
    from dlsched.jobs import Container

    cluster = homogeneous_cluster(3, 2, gpu_mem_gb=16.0)
    jobs = tuple(Job(id=j, containers=(Container("ps", "ps", 0, 0.0),
                                       Container("w0", "worker", 1, 4.0),
                                       Container("w1", "worker", 1, 4.0))) for j in "ab")
    inst = Instance("liquid", cluster, jobs)

    def placed(job, ps, w0, w1):
        gpus = (f"{w0}/g0", f"{w1}/g1" if w1 == w0 else f"{w1}/g0")
        return Placement(job, gpus, tasks=(TaskPlacement("ps", ps), TaskPlacement("w0", w0),
                                           TaskPlacement("w1", w1)))

    # job a: PS beside w1 (together); job b: PS on n0, workers on n2 (apart)
    decision = Decision((placed("a", "n1", "n0", "n1"), placed("b", "n0", "n2", "n2")))
    assert _ps_apart(inst, decision) == 0.5


def test_horus_stated_long_shares_are_nearest_table6_fifo():
    # the rule of STATED_P_LONG: FIFO's makespan (mean of seeds 0-4) at the chosen share is
    # nearer Table 6's FIFO row than at the neighbouring multiples of 0.05
    from dlsched.benchmarks.reproduce_horus import STATED_P_LONG
    from dlsched.simulate import Policy, simulate

    def makespan(preset: str, p_long: float, seed: int) -> float:
        # from the run's records (last end - first arrival, every job finished), not
        # through summary(): its pandas job table costs nearly what a 100-job run does
        run = simulate(stated_workload(seed, preset, p_long=p_long), Policy("fifo"),
                       record_events=False, frag_samples=False)
        assert all(r.end is not None for r in run.records)
        return max(r.end for r in run.records) - min(r.job.submit_time for r in run.records)

    def fifo_min(preset: str, p_long: float) -> float:
        return sum(makespan(preset, p_long, s) for s in range(5)) / 5 / 60

    for preset, table6 in (("w-small", 267.3), ("w-large", 306.9)):
        p = STATED_P_LONG[preset]
        here = abs(fifo_min(preset, p) - table6)
        assert here < abs(fifo_min(preset, round(p - 0.05, 2)) - table6)
        assert here < abs(fifo_min(preset, round(p + 0.05, 2)) - table6)
