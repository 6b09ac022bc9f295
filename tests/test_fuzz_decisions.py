"""The validator refuses every decision holding a number that is not finite or in range.

For every problem, valid decisions made by real methods (and, where the problem has them,
an offline schedule with start and end times) are corrupted: a start or end of one or
more placements becomes NaN, ±Infinity, a value beyond ±1e12, a huge integer, a boolean or
a string. 300 corruptions per problem (1,000 before), every bad value in both fields
among them (asserted); none may be accepted.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from test_fuzz import _all_seeds

from dlsched.decision import Decision
from dlsched.instance_io import instance_from_dict
from dlsched.solution_io import solution_decision
from dlsched.validate import validate

BAD = [float("nan"), float("inf"), float("-inf"), 1e13, -1e13, 1e308, -1e308, 10**400,
       2**70, True, False, "0", [0.0]]
PER_PROBLEM = 300
"""Each (field, bad value) pair comes up ~18 times in 300 (~60 in the 1,000 once run, each
pair a repeat of the same validator check); that every pair comes up is asserted."""


@pytest.fixture(scope="module")
def decisions():
    """problem -> [(instance, valid decision)], from test_fuzz.py's seed files, made once
    per process for both files (0.15 CPU-s a call once warm; neither changes them)."""
    out: dict[str, list] = {}
    for seed in _all_seeds():
        if seed.kind != "solution":
            continue
        instance = instance_from_dict(seed.instance_doc)
        decision = solution_decision(seed.doc, instance)  # inference: batches
        assert validate(instance, decision).ok, seed.name
        out.setdefault(seed.problem, []).append((instance, decision))
    return out


def test_every_problem_has_seed_decisions(decisions):
    assert set(decisions) >= {"horus", "genie", "liquid", "sched2", "inference"}
    assert all(d.batches for _, d in decisions["inference"])  # corrupted in
    # tests/test_inference_solution_io.py (batches, not placements)
    assert any(p.end is not None for _, d in decisions["sched2"] for p in d.placements)


@pytest.mark.parametrize("problem", ["horus", "genie", "liquid", "sched2"])
def test_corrupted_numbers_are_never_accepted(decisions, problem):
    rng = random.Random(problem)
    accepted = []
    counts = {"start": 0, "end": 0}
    pairs = set()
    for i in range(PER_PROBLEM):
        instance, decision = decisions[problem][i % len(decisions[problem])]
        placements = list(decision.placements)
        if not placements:
            continue
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            k = rng.randrange(len(placements))
            name = rng.choice(["start", "end"])
            bad = rng.randrange(len(BAD))  # the draw rng.choice(BAD) makes
            placements[k] = dataclasses.replace(placements[k], **{name: BAD[bad]})
            counts[name] += 1
            pairs.add((name, bad))
        report = validate(instance, Decision(tuple(placements)))
        if report.ok:
            accepted.append(placements)
        else:
            assert any(v.kind == "number" for v in report.violations)
    assert accepted == []
    assert counts["start"] > 150 and counts["end"] > 150
    assert len(pairs) == 2 * len(BAD)  # every bad value in a start and in an end


def test_a_nan_start_used_to_pass_and_now_fails(decisions):
    """The case of the issue: a GENIE / SCHED² snapshot decision with start NaN."""
    for problem in ("genie", "sched2"):
        instance, decision = decisions[problem][0]
        p = dataclasses.replace(decision.placements[0], start=float("nan"))
        report = validate(instance, Decision((p, *decision.placements[1:])))
        assert not report.ok and "start = nan" in str(report)
