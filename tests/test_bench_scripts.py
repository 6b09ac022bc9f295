"""Every benchmark script runs on a tiny setting (seconds) and prints its tables and a last
JSON line; docs/benchmarks.md lists each script."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from dlsched.benchmarks import (
    exact_scale,
    fuzz,
    genie_snapshots,
    inference_paper,
    interrupt_moments,
    liquid_fig19,
    policy_latency,
    sched2_optimum,
    sched2_rl,
    sched2_rl_dqn,
    sim_queue_latency,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
# call_entrant runs a Python entrant of `dlsched compete` (docs/competition.md)
NOT_SCRIPTS = {"call_entrant"}


def _lines(capsys) -> tuple[list[str], dict]:
    lines = capsys.readouterr().out.strip().splitlines()
    return lines, json.loads(lines[-1])


def _rows(lines: list[str], first_cell: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines
            if line.startswith(f"| {first_cell}")]


def test_every_script_has_a_line_in_docs_benchmarks():
    text = DOCS.read_text(encoding="utf-8")
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")
               if '__name__ == "__main__"' in p.read_text(encoding="utf-8")} - NOT_SCRIPTS
    assert len(scripts) >= 10
    for name in sorted(scripts):
        assert f"python -m dlsched.benchmarks.{name}" in text, name


def test_exact_scale_tiny(capsys):
    exact_scale.main(["--families", "liquid", "--only", "liquid-5,liquid-10",
                      "--backends", "highs", "--time-limit", "60"])
    lines, figures = _lines(capsys)
    rows = _rows(lines, "liquid-")
    assert [r[:3] for r in rows] == [["liquid-5", "highs", "optimal 1"],
                                     ["liquid-10", "highs", "optimal 1"]]
    assert set(figures["families"]) == {"liquid-5", "liquid-10"}
    assert figures["families"]["liquid-5"]["highs"]["gap_max"] == 0


@dataclass(frozen=True)
class _BriefDqn(sched2_rl.DqnSettings):
    """The shipped DQN settings but 20 demonstration updates instead of 2000 (they were
    nearly all of this test's CPU): the tables' shape is what the test checks."""

    pretrain_updates: int = 20


@pytest.mark.torch
def test_sched2_rl_tiny(capsys, monkeypatch):
    monkeypatch.setattr(sched2_rl, "DqnSettings", _BriefDqn)
    # the learners train on one training and one validation seed's episodes (per share)
    # instead of four and five, of 10 jobs: every part's tables still come out (4.8 -> 3.8
    # CPU-s with torch imported; 1.5 of them the DQN's torch.use_deterministic_algorithms,
    # which imports torch._dynamo)
    monkeypatch.setattr(sched2_rl, "TRAINING_SEEDS", sched2_rl.TRAINING_SEEDS[:1])
    monkeypatch.setattr(sched2_rl, "VALIDATION", sched2_rl.VALIDATION[:1])
    monkeypatch.setattr(sched2_rl_dqn, "VALIDATION", sched2_rl_dqn.VALIDATION[:1])
    # and one one-GPU share (68 %, the generalization's) instead of three: the loop over
    # the shares is the same code for one (1.7 -> 0.9 CPU-s, torch imported)
    for module in (sched2_rl, sched2_rl_dqn):
        monkeypatch.setattr(module, "SHARES", (0.68,))
    assert sched2_rl.main(["--episodes", "1", "--jobs", "10", "--train-seeds", "1",
                           "--generations", "1", "--population", "2",
                           "--generalization-episodes", "1", "--small-workloads", "1",
                           "--dqn-episodes", "2",
                           "--small-jobs", "4", "--time-limit", "20",
                           "--parts", "main,heavy,ablation,small"]) == 0
    lines, figures = _lines(capsys)
    # the agent, the composite, the DQN agent and the six rules, per one-GPU share
    assert len(_rows(lines, "learned-priority ")) == 1 + 3 + 1  # + 10, 30, 101 x 8, heavy
    assert len(_rows(lines, "dqn ")) == 1 + 3  # + 10, 30, 101 x 8
    assert len(_rows(lines, "spf ")) == 5
    assert set(figures["by_share"]) == {"0.68"}
    for row in figures["by_share"].values():
        assert row["best_rule"] in ("fifo", "sif", "dsif", "saf", "lrf", "spf")
        assert row["best_rule_E"] == max(r["effectiveness_mean"] for r in row["rules"].values())
    assert set(figures["generalization"]) == {"10x8", "30x8", "101x8"}
    assert all(0 < row["dqn_E"] <= 1 for row in figures["generalization"].values())
    assert figures["seed0_reproduces_shipped_weights"] is None  # not the shipped settings
    assert figures["dqn_seed0_reproduces_shipped_weights"] is None
    assert figures["heavy"]["best_rule_E"] > 0
    assert set(figures["ablation"]) == {"warm start only (SPF order)", "shipped",
                                        "no warm start", "window 10", "window 30"}
    (small,) = _rows(lines, "0 ")
    assert "offline-makespan: optimal" in small[-1]
    # neither the agent nor a rule beats the proven optimal makespan
    optimum = figures["small"]["workloads"][0]["offline-makespan"]["objective"]
    assert min(float(x) for x in small[1:-1]) >= round(optimum) - 1


def test_sched2_optimum_tiny(capsys):
    assert sched2_optimum.main(["--workloads", "2", "--jobs", "5", "--effort", "5"]) == 0
    lines, figures = _lines(capsys)
    assert figures["instances"] == 2 and figures["proven"] == 2  # 5 jobs: proven at once
    assert figures["best_rule"] in ("fifo", "sif", "dsif", "saf", "lrf", "spf")
    assert figures["best_rule_gap"] == min(figures["rule_gaps"].values())
    for name in ("agent_gap", "best_rule_gap", "composite_gap"):
        assert figures[name] >= -1e-9  # no online policy beats the clairvoyant optimum
    # dqn: a gap, or the reason it refused this cluster
    assert (figures["dqn_gap"] is None) == isinstance(figures["dqn_refused"], str)
    assert figures["seeds"] == [5000, 5001]  # not the training seeds 0-29
    assert len(_rows(lines, "spf ")) == 1


def test_sched2_rl_reports_the_optimum_part(capsys, monkeypatch):
    # the composite's exponent tuned on one training episode of one share instead of 4 x 3
    # (nearly all of the test's CPU): the part's figures come out the same way
    monkeypatch.setattr(sched2_rl, "TRAINING_SEEDS", sched2_rl.TRAINING_SEEDS[:1])
    monkeypatch.setattr(sched2_rl, "SHARES", (0.68,))
    assert sched2_rl.main(["--parts", "optimum", "--jobs", "10", "--optimum-workloads", "1",
                           "--optimum-jobs", "4"]) == 0
    _, figures = _lines(capsys)
    optimum = figures["optimum"]
    assert optimum["instances"] == 1 and optimum["proven"] == 1
    assert {"agent_gap", "dqn_gap", "best_rule_gap", "composite_gap", "best_rule",
            "gap_spread"} <= set(optimum)


def test_genie_snapshots_tiny(capsys):
    assert genie_snapshots.main(["--snapshots", "2", "--time-limit", "20",
                                 "--backends", "highs"]) == 0
    lines, figures = _lines(capsys)
    (exact,) = _rows(lines, "exact ")
    assert exact[2] == "100.0"
    assert figures["backends"]["highs"]["statuses"] == ["optimal", "optimal"]
    # a heuristic never starts more tasks on time than the proven optimum
    total = sum(figures["exact_on_time"])
    assert all(sum(r[0] for r in rows) <= total for rows in figures["heuristics"].values())


def test_liquid_fig19_tiny(capsys):
    # the GA's wall-clock limit 0.02 s, not 0.2: both GA rows ran to it (0.4 CPU-s of the
    # test's ~0.5); a GA run evaluates its first-fit initial population before it looks at
    # the clock, so it returns a plan however short the limit (the rows' verdicts)
    assert liquid_fig19.main(["--nodes", "2", "--seeds", "1", "--time-limit", "20",
                              "--gga-time-limit", "0.02", "--backends", "highs"]) == 0
    lines, figures = _lines(capsys)
    (exact,) = figures["exact"]
    assert exact["status"] == "optimal"
    by_method = {r[1]: r for r in _rows(lines, "2 ")}
    assert by_method["reference"][5] == "proven"
    for method in ("bestfit", "gga", "gga+bestfit", "random", "spread"):
        assert by_method[method][2] == "1/1"
        assert float(by_method[method][4]) >= 0  # mean gap: never better than the optimum


def test_policy_latency_tiny(capsys):
    assert policy_latency.main(["--repeat", "1", "--gpus", "64"]) == 0
    _, figures = _lines(capsys)
    for problem, methods in policy_latency.METHODS.items():
        for method in methods:
            assert figures[f"{problem}:{method}"] > 0
    assert figures["max_ms"] == max(v for k, v in figures.items() if ":" in k)


def test_sim_queue_latency_tiny(capsys):
    assert sim_queue_latency.main(["--gpus", "32", "--queue", "12", "--idle", "16",
                                   "--repeat", "1", "--policies", "fifo,dqn"]) == 0
    lines, figures = _lines(capsys)
    assert (figures["gpus"], figures["queue"], figures["idle"]) == (32, 12, 16)
    for method in ("fifo", "dqn"):
        row = figures[method]
        assert 1 <= row["started"] <= 12 and row["ms_median"] > 0
        assert 0 < row["policy_ms_median"] <= row["ms_median"]
        assert any(line.startswith(method) for line in lines[:-1])


def test_fuzz_tiny(capsys):
    assert fuzz.main(["--mutants", "6", "--seed", "3"]) == 0
    _, figures = _lines(capsys)
    assert figures["mutants"] == 6
    assert figures["internal"] == figures["bad_exit"] == figures["unnamed"] == 0
    assert sum(figures["by_kind"].values()) == 6


def test_inference_paper_tiny(capsys):
    assert inference_paper.main(["--hours", "0.005", "--no-pg"]) == 0
    lines, figures = _lines(capsys)
    assert set(figures["tables"]) == {"p2:1", "g2:5,p2:5"}
    # the paper's Table 2 numbers, printed beside ours (typed in from the paper)
    assert _rows(lines, "12-15 h | fixed")[0][2] == "0.883"
    assert _rows(lines, "12-15 h | heuristic − fixed")[0][2] == "+0.085"


def test_gavel_replay_tiny(capsys):
    from dlsched.benchmarks import gavel_replay

    assert gavel_replay.main(["--jobs", "20", "--trace", "fifo-l1900-s0"]) == 0
    lines, out = _lines(capsys)
    (row,) = out["rows"]
    assert row["trace"] == "fifo-l1900-s0" and row["jobs"] == 20
    assert row["gavel_64"] is None  # Gavel was run on 1,000 and 3,000 jobs only
    assert row["dlsched_64"]["gpus"] == 64
    # the importer sizes whole 8-GPU servers for the offered load at target 0.8; on 20
    # jobs that is less than 64 GPUs but never less than the largest job (8 GPUs)
    assert row["dlsched_importer"]["gpus"] % 8 == 0
    assert 8 <= row["dlsched_importer"]["gpus"] < 64
    assert 0 < row["dlsched_64"]["utilization"] <= 1
    assert _rows(lines, "fifo-l1900-s0")[0][1] == "20"


def test_gavel_replay_reads_gavels_committed_figures():
    from dlsched.benchmarks import gavel_replay

    gavel = gavel_replay.gavel_figures("fifo-l1900-s0", 3000)
    assert gavel["jobs"] == 3000 and gavel["gpus"] == 64 and gavel["policy"] == "fifo"
    frame = gavel_replay.read_trace("fifo-l1900-s0", 3000)
    assert len(frame) == 3000
    # Gavel's scale factors (-m): 1, 2, 4 or 8 GPUs
    assert set(frame["num_gpus"]) <= {1, 2, 4, 8}


def test_gavel_replay_scan_tiny(tmp_path, capsys):
    from dlsched.benchmarks import gavel_replay

    source = Path(__file__).resolve().parent / "data" / "traces" / "gavel_artifact_evaluation.trace"
    (tmp_path / "a.trace").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    assert gavel_replay.main(["--scan", str(tmp_path)]) == 0
    _, out = _lines(capsys)
    (row,) = out["scan"]
    assert row["trace"] == "a.trace" and row["importer_gpus"] % 8 == 0
    assert row["jct_64_s"] > 0 and row["jct_importer_s"] > 0


def test_gavel_replay_scan_names_an_empty_folder(tmp_path):
    import pytest

    from dlsched.benchmarks import gavel_replay
    from dlsched.errors import InputError

    with pytest.raises(InputError, match="--scan"):
        gavel_replay.main(["--scan", str(tmp_path)])


def test_exact_crosschecks_tiny(capsys):
    # the large exact cross-checks moved out of the suite (issue 33): tiny here, every
    # check must agree and the JSON line must say so
    from dlsched.benchmarks import exact_crosschecks

    assert exact_crosschecks.main(["--tight-nodes", "1", "--paper-nodes", "1", "--beta", "3",
                                   "--min-reduction", "0", "--liquid", "liquid-5n-s0",
                                   "--time-limit", "30"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["benchmark"] == "exact_crosschecks" and out["all_ok"]
    assert [c["check"] for c in out["checks"]] == ["horus-forms", "horus-reduction",
                                                   "cbc-bound"]
    for check in out["checks"]:
        assert check["a"]["status"] == "optimal" and check["ok"]


def test_interrupt_moments_tiny(capsys):
    # the moment 0 (test_interrupt runs 0.05, 0.2 and the solver's state); the command
    # starts with SIGINT at its default whatever this process ignores (interrupt_after)
    assert interrupt_moments.main(["--moments", "0"]) == 0
    lines, figures = _lines(capsys)
    assert figures["moments"] == [0.0] and figures["failures"] == [] and figures["ok"]
    assert _rows(lines, "0 ")[0][1:] == ["130", "'interrupted'", "0", "yes"]
