"""The scripts in examples/ run (tiny instances, short limits) and print what they claim."""

from __future__ import annotations

import functools
import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_here(script: str, *args: str, monkeypatch, capsys) -> str:
    """The script as ``python SCRIPT ARGS`` runs it (``__main__``, its argv; its exit
    status must be 0), in this process: a subprocess would spend most of its CPU importing
    what this process has long imported (dlsched, pandas, matplotlib; torch and
    torch._dynamo)."""
    monkeypatch.setattr(sys, "argv", [str(EXAMPLES / script), *args])
    capsys.readouterr()
    try:
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr()
    return capsys.readouterr().out


def test_compare_methods_writes_profiles(tmp_path, monkeypatch, capsys):
    out = run_here("compare_methods.py", "--instances", "1", "--time-limit", "3", "--out",
                   str(tmp_path), monkeypatch=monkeypatch, capsys=capsys)
    assert "exact/cbc" in out and "exact/highs" in out and "greedy" in out
    for name in ("summary.md", "profile-time-quick-horus-3s.png",
                 "profile-gap-quick-horus-3s.png"):
        assert (tmp_path / "report" / name).stat().st_size > 0


def test_scheduler_loop_states_its_fallback(monkeypatch, capsys):
    # 1 ms is too short for the exact model to return a placement: the loop must fall back
    # (in this process: an interpreter less)
    out = run_here("scheduler_loop.py", "--events", "1", "--time-limit", "0.001", "--nodes",
                   "1", monkeypatch=monkeypatch, capsys=capsys)
    assert "by greedy: fallback" in out and "valid=True" in out
    # with time enough the exact model's placement is applied. In this process too: a
    # process of its own spent ~0.7 CPU-s importing dlsched and the solvers to run the
    # same code; the script is a plain `__main__` (runpy runs it as one) whose import is
    # the installed dlsched, and an example started as `python examples/SCRIPT` in an
    # interpreter of its own stays tested: external_solver.py, an entrant process in
    # test_competition_with_an_external_solver (below) and in test_compete_runner's docs
    # commands
    out = run_here("scheduler_loop.py", "--events", "1", "--time-limit", "20", "--nodes",
                   "1", monkeypatch=monkeypatch, capsys=capsys)
    assert "by exact" in out and "valid=True" in out


def test_competition_with_an_external_solver(tmp_path, monkeypatch, capsys):
    # the page's two profile images not drawn (most of this process's share of the run):
    # compete's drawing is test_compete_runner's; the entrants and the table are the
    # script's own
    from dlsched.benchmarks import compete

    monkeypatch.setattr(compete, "compete", functools.partial(compete.compete, plots=False))
    out = run_here("run_competition.py", "--instances", "1", "--time-limit", "20", "--out",
                   str(tmp_path), monkeypatch=monkeypatch, capsys=capsys)
    assert "external-first-fit" in out and "dlsched-greedy" in out
    row = next(line for line in out.splitlines() if "external-first-fit" in line)
    assert row.split("|")[4].strip() == "1"  # its one answer is valid
    assert (tmp_path / "scores.csv").stat().st_size > 0


@pytest.mark.torch
def test_maskable_ppo_trains_on_the_registered_environment(monkeypatch, capsys):
    pytest.importorskip("sb3_contrib")
    import torch

    # one rollout of 32 steps and one update pass on 20-job episodes: the script's code,
    # in seconds (its defaults, 256-step rollouts of 200 jobs, are for a real run); a
    # subprocess spent ~5 of its ~6.5 CPU-s importing torch and torch._dynamo. One torch
    # thread, as dlsched's own learners use (solver/rl/dqn.py sets it for the process, so
    # a worker that trained DQN first already has one): with two, the tiny network's
    # updates cost 0.4-1.1 CPU-s instead of 0.15-0.3, the threads waiting on each other
    # (the printed lines checked below do not depend on it); restored after
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = run_here("train_maskable_ppo.py", "--steps", "32", "--n-steps", "32", "--jobs",
                       "20", monkeypatch=monkeypatch, capsys=capsys)
    finally:
        torch.set_num_threads(threads)
    assert "MaskablePPO after 32 steps: mean E" in out and "/20 jobs started)" in out
    assert "SPF" in out
