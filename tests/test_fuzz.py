"""Property-based fuzzing of the command line (a few hundred mutants per CI run).

Hypothesis drives the mutations of :mod:`dlsched.benchmarks.fuzz` (which value, where,
which kind of damage) on instance, solution and workload files of every problem, a suite
manifest and a file of every raw trace format, and the
properties are the issue's: exit code 0, 1 or 2 only (never the internal-error exit 3,
never an exception out of ``main``), at most one line on stderr, a refusal names the file
and a field, a mutant that breaks a rule of the format is never accepted, and whatever a
method returns on an accepted mutant passes the validator. ``python -m
dlsched.benchmarks.fuzz`` runs the same checks on 10,000 mutants (seed 0), and
``DLSCHED_FULL=1 pytest tests/test_fuzz.py`` these tests at their full counts
(docs/benchmarks.md); the suite runs a sample of them, plus
one mutant of each kind of damage per file kind.
"""

from __future__ import annotations

import random
import tempfile
from functools import cache
from pathlib import Path

import pytest
from full_sweep import sweep
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.benchmarks.fuzz import OPS, Chooser, mutate, run_mutant
from dlsched.benchmarks.fuzz_seeds import make_seeds

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@cache
def _all_seeds() -> tuple:
    """Every seed file, made once per process (0.12-0.17 CPU-s a call once warm)."""
    return tuple(make_seeds())


def seeds(kind: str) -> tuple:
    return tuple(s for s in _all_seeds() if s.kind == kind)


class DrawChooser(Chooser):
    """Choices drawn by Hypothesis, so that failures shrink to a small mutation."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))


@cache
def _suite_folder() -> tempfile.TemporaryDirectory:
    """One folder for the manifest mutants: the suite is built there once."""
    return tempfile.TemporaryDirectory(prefix="dlsched-fuzz-test-")


def _check(data: st.DataObject, kind: str) -> None:
    seed = data.draw(st.sampled_from(seeds(kind)))
    mutant = mutate(seed, DrawChooser(data))
    if kind == "manifest":
        outcome = run_mutant(seed, mutant, Path(_suite_folder().name))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            outcome = run_mutant(seed, mutant, Path(tmp))
    assert outcome.ok, f"{seed.name}: {mutant.description}: {outcome.problems}"


# Hypothesis' draws cover few of the kinds of damage in a dozen mutants (and 40 did not
# cover them all): every kind is run on purpose below, and Hypothesis adds its own
@settings(max_examples=sweep(12, 150), **SETTINGS)
@given(st.data())
def test_instance_mutants(data):
    _check(data, "instance")


@settings(max_examples=sweep(12, 150), **SETTINGS)
@given(st.data())
def test_solution_mutants(data):
    _check(data, "solution")


class OpChooser(Chooser):
    """Seeded choices, except the kind of damage, which is ``op``."""

    def __init__(self, op: str, seed: int) -> None:
        super().__init__(random.Random(seed))
        self.op = op

    def choice(self, options):
        return self.op if options is OPS else super().choice(options)


@pytest.mark.parametrize("kind", ["instance", "solution", "workload"])
def test_every_kind_of_damage(kind):
    """One mutant per kind of damage (13), the seed files taken in turn (so every
    problem's), with the properties of the Hypothesis tests."""
    files = seeds(kind)
    done = set()
    for k, op in enumerate(dict.fromkeys(OPS)):
        seed = files[k % len(files)]
        mutant = mutate(seed, OpChooser(op, k))
        with tempfile.TemporaryDirectory() as tmp:
            outcome = run_mutant(seed, mutant, Path(tmp))
        assert outcome.ok, f"{seed.name}: {op}: {mutant.description}: {outcome.problems}"
        done.add(seed.problem)
    assert done == {s.problem for s in files}


@settings(max_examples=sweep(12, 40), **SETTINGS)
@given(st.data())
def test_workload_mutants(data):
    _check(data, "workload")


@settings(max_examples=sweep(15, 60), **SETTINGS)
@given(st.data())
def test_manifest_mutants(data):
    _check(data, "manifest")


@settings(max_examples=sweep(20, 60), **SETTINGS)
@given(st.data())
def test_trace_mutants(data):
    _check(data, "trace-json" if data.draw(st.booleans()) else "trace-csv")


def test_every_trace_format_is_fuzzed():
    from dlsched.instances.trace_formats import FORMATS

    fuzzed = {s.csv.fmt if s.csv is not None else "philly" for s in seeds("trace-csv")
              + seeds("trace-json")}
    assert "generic" in fuzzed  # and every format (aliases read as one of them):
    assert {FORMATS[f].name for f in fuzzed - {"generic"}} == {f.name for f in FORMATS.values()}


@pytest.mark.parametrize("kind", ["instance", "solution", "workload"])
def test_every_problem_is_fuzzed(kind):
    problems = {s.problem for s in seeds(kind)}
    expected = {"horus", "genie", "liquid", "sched2"} if kind != "workload" else {"sched2",
                                                                                  "genie"}
    assert problems >= expected


def test_the_labels_are_not_vacuous():
    """Most mutants must be refused; the judge sees an exit 0 on a must-refuse mutant."""
    import random

    rng = random.Random(5)
    seed = seeds("instance")[0]
    labels = [mutate(seed, Chooser(rng)).must_reject for _ in range(200)]
    assert 0.3 < sum(labels) / len(labels) < 0.95
