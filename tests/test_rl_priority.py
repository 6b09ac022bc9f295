"""SCHED²'s learned priority: the fast episode loop against the simulator, the method's
decisions, the size-agnostic weights, and deterministic training (numpy only)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from trace_heads import committed_workload, trace_head

from dlsched import InputError, solve, validate
from dlsched.cli import build_parser, main
from dlsched.heuristics.sched2_priority import FEATURES, PriorityScorer, load_scorer
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.rl.sched2_search import (
    SPF_WEIGHTS,
    Episode,
    SearchSettings,
    cross_entropy_search,
    play,
)
from dlsched.rl.sched2_train import episodes_from_workload
from dlsched.simulate import Policy, job_table, simulate

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "instances" / "workloads"
# every feature with a non-zero weight, so a feature computed differently in the fast loop
# and in the method would change the order somewhere
MIXED = np.array([1.0, 0.9, 0.15, 0.5, 0.06, 0.5, -0.5, -0.12, 0.8])


def weights_file(tmp_path, weights=MIXED, features=FEATURES) -> str:
    path = tmp_path / "w.safetensors"
    save_file({"weights": np.asarray(weights, dtype=np.float64)}, str(path),
              metadata={"features": json.dumps(list(features))})
    return str(path)


def simulated(workload, policy: Policy) -> dict[str, tuple[float, float]]:
    table = job_table(simulate(workload, policy, record_events=False))
    return {j: (s, e) for j, s, e in zip(table["job"], table["start"], table["end"],
                                           strict=True)}


def queued_snapshot(seed: int):
    """30 jobs on 2 x 4 idle GPUs, all submitted, at the last submission time."""
    w = generate_sched2(seed=seed, jobs=30, servers=2, gpus_per_server=4, interarrival=1.0)
    return w.replace(time=max(j.submit_time for j in w.jobs))


@pytest.mark.parametrize("seed", [0, 1])
def test_fast_episodes_give_the_simulators_schedule(tmp_path, seed):
    workload = generate_sched2(seed=seed, jobs=150, servers=3, gpus_per_server=4,
                               interarrival=200.0)
    sim = simulated(workload, Policy("learned-priority",
                                     options={"weights": weights_file(tmp_path)}))
    start, end = play(Episode.of(workload), PriorityScorer(MIXED))
    jobs = sorted(workload.jobs, key=lambda j: j.submit_time)
    assert len(sim) == len(jobs)
    for k, job in enumerate(jobs):
        assert sim[job.id] == pytest.approx((start[k], end[k]), abs=1e-6)


def test_spf_weights_order_jobs_as_spf(tmp_path):
    workload = generate_sched2(seed=3, jobs=120, servers=2, gpus_per_server=4,
                               interarrival=150.0)
    learned = simulated(workload, Policy("learned-priority", options={
        "weights": weights_file(tmp_path, SPF_WEIGHTS)}))
    assert learned == simulated(workload, Policy("spf"))


def test_shipped_weights_act_on_any_cluster_and_every_decision_is_valid():
    for servers, per_server in ((2, 4), (10, 8), (30, 8)):
        workload = generate_sched2(seed=0, jobs=60, servers=servers,
                                   gpus_per_server=per_server, interarrival=30.0)
        run = simulate(workload, Policy("learned-priority"), record_events=False)
        assert len(job_table(run)) == 60
    snapshot = queued_snapshot(seed=1)
    result = solve(snapshot, "learned-priority")
    assert result.decision.placements
    assert validate(snapshot, result.decision).ok


def test_window_restricts_the_scored_jobs(tmp_path):
    workload = queued_snapshot(seed=2)
    # with a window of one, only the oldest job may start
    result = solve(workload, "learned-priority", window=1)
    oldest = min(workload.jobs, key=lambda j: j.submit_time).id
    assert [p.job for p in result.decision.placements] == [oldest]


def test_bad_weights_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such weights file"):
        load_scorer(str(tmp_path / "missing.safetensors"))
    with pytest.raises(InputError, match="not a dlsched priority scorer"):
        load_scorer(weights_file(tmp_path, MIXED[:3], FEATURES[:3]))


def test_search_is_deterministic_and_improves_on_its_training_episodes():
    # 20-job episodes, not 40: the same library line-arcs for half the CPU
    episodes = [Episode.of(generate_sched2(seed=s, jobs=20, servers=2, gpus_per_server=4,
                                           interarrival=120.0)) for s in range(2)]
    settings = SearchSettings(generations=2, population=6, elites=2)
    a = cross_entropy_search(episodes, episodes, settings=settings, seed=5)
    b = cross_entropy_search(episodes, episodes, settings=settings, seed=5)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.curve[-1]["valid_E"] == b.curve[-1]["valid_E"]
    # the result is the best validation mean seen, the warm start's included
    assert max(r["valid_E"] for r in a.curve) >= a.curve[0]["valid_E"]


def test_trace_episodes_give_the_simulators_schedule(tmp_path):
    # a committed trace slice: durations are the packed placement's time there
    workload = committed_workload("itp-cluster07-d25-26.json.gz")
    sim = simulated(workload, Policy("learned-priority",
                                     options={"weights": weights_file(tmp_path)}))
    start, end = play(Episode.of(workload), PriorityScorer(MIXED))
    jobs = sorted(workload.jobs, key=lambda j: j.submit_time)
    for k, job in enumerate(jobs):
        assert sim[job.id] == pytest.approx((start[k], end[k]), abs=1e-6)


def test_train_command_on_a_tiny_cluster_then_evaluate(tmp_path, capsys):
    out = tmp_path / "agent"
    common = ["--servers", "2", "--gpus-per-server", "4", "--jobs", "40",
              "--interarrival", "200", "--single-share", "0.68"]
    assert main(["rl", "train", "sched2", "--out", str(out), "--generations", "1",
                 "--population", "4", "--elites", "2", "--train-episodes", "1",
                 "--valid-episodes", "1", "--no-progress", *common]) == 0
    summary = json.loads((out / "training.json").read_text())
    assert summary["learner"] == "cross-entropy method"
    assert summary["command"].startswith("dlsched rl train sched2 --out ")
    weights = out / "sched2_priority.safetensors"
    assert load_scorer(str(weights)).weights.shape == (len(FEATURES),)
    capsys.readouterr()
    assert main(["rl", "evaluate", "sched2", "--weights", str(weights), "--episodes", "1",
                 *common]) == 0
    table = capsys.readouterr().out
    assert "| learned-priority |" in table and "| spf |" in table


def test_workload_file_is_cut_into_episodes_by_time():
    workload = committed_workload("itp-cluster07-d25-26.json.gz")
    sets = episodes_from_workload(workload, 40)  # 218 jobs: 5 episodes of 40
    assert [len(sets[k]) for k in ("train", "valid", "test")] == [3, 1, 1]
    firsts = [min(j.submit_time for j in w.jobs) for k in sets for w in sets[k]]
    assert firsts == [0.0] * 5
    ordered = sorted(workload.jobs, key=lambda j: (j.submit_time, j.id))
    assert [j.id for j in sets["test"][0].jobs] == [j.id for j in ordered[160:200]]
    with pytest.raises(InputError, match="episodes"):
        episodes_from_workload(workload, 50)


def test_every_flag_the_sched2_learners_suggest_exists():
    parser = build_parser()
    known = set()
    for verb in ("train", "evaluate"):
        sub = parser.parse_args(["rl", verb, "sched2", "--out", "x"] if verb == "train"
                                else ["rl", verb, "sched2"])
        assert sub.problem == "sched2"
    for action in _subparser(parser, "rl", "train", "sched2")._actions:
        known.update(action.option_strings)
    for action in _subparser(parser, "rl", "evaluate", "sched2")._actions:
        known.update(action.option_strings)
    sources = [*ROOT.joinpath("solver", "rl").glob("sched2_*.py"),
               *ROOT.joinpath("heuristics").glob("sched2_*.py")]
    suggested = {flag for path in sources
                 for flag in re.findall(r"`dlsched rl \w+ sched2[^`]*`", path.read_text())
                 for flag in re.findall(r"--[a-z][a-z-]*", flag)}
    assert suggested, "expected the learners to suggest commands"
    assert suggested <= known, suggested - known


def _subparser(parser, *path):
    for word in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


@pytest.mark.parametrize("name", sorted(p.name for p in WORKLOADS.glob("*.json.gz")
                                        if p.name.startswith(("itp-", "philly-"))))
def test_shipped_policies_act_on_every_committed_trace(name):
    """Both shipped learned SCHED² policies (these priority weights and the DQN agent,
    which acts with numpy: no torch) on the head of each trace, read once for both."""
    head = trace_head(name)
    for method in ("learned-priority", "dqn"):
        table = job_table(simulate(head, Policy(method), record_events=False))
        assert len(table) == 150 and table["end"].notna().all(), method
