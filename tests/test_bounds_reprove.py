"""A reported bound never passes the proven optimum, and `library verify --reprove`
replaces stale best knowns (issue 32, item 4)."""

from __future__ import annotations

import json
import shutil

import pytest

from dlsched.benchmarks.build import build_suite, reprove_suite
from dlsched.benchmarks.library import Offer, load_manifest, offer_best, verify
from dlsched.cli import main
from dlsched.formulations.pulp_backend import _cbc_bound
from dlsched.solve import solve


@pytest.mark.parametrize("printed, true", [
    ("-62.368", -62.36825),  # what CBC printed for liquid-20n-s1 (bound -62.36825 + constant)
    ("-62.369", -62.3685), ("12", 12.4), ("-1.2345e+06", -1234549.0), ("0.5", 0.45),
])
def test_cbc_bound_lies_below_any_number_it_may_be_the_rounding_of(printed, true):
    bound = _cbc_bound(f"Lower bound:     {printed}\n")
    assert bound is not None and bound <= true


@pytest.mark.parametrize("text", ["1e+30", "-1e+30", "inf", "nan", "x"])
def test_cbc_no_bound_is_none(text):
    assert _cbc_bound(f"Lower bound: {text}\n") is None


# End to end, CBC stopped after its first solution on liquid-20n-s1 (the batch above),
# liquid-20n-s2 and liquid-15n-s0 reports a bound no higher than the optimum HiGHS proves:
# `python -m dlsched.benchmarks.exact_crosschecks` (check cbc-bound; ~1 CPU-s per batch,
# their size, not the rule, which the printed forms above check).


def test_library_liquid_20n_best_knowns_are_the_proven_optima():
    manifest = load_manifest("paper")
    # HiGHS proves these in a fraction of a CPU second (issue 32); stored before as
    # feasible -9.9685 / -9.684875
    for name, optimum in (("liquid-20n-s1", -9.98425), ("liquid-20n-s2", -9.868666667)):
        best = manifest.best(name)
        assert best["status"] == "optimal"
        assert best["objective"] == pytest.approx(optimum, abs=1e-6)


def write_spec(root):
    root.mkdir(parents=True, exist_ok=True)
    spec = {"name": "tiny", "best_known": {"runs": [{"method": "exact", "backend": "highs"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [0],
                           "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    return root


def _make_stale(directory):
    """Replace h-s0's proven best known by a worse heuristic one with a wrong bound (one
    that cuts off the optimum, as CBC's rounded bound did)."""
    manifest = load_manifest(directory)
    optimum = manifest.best("h-s0")["objective"]
    inst = manifest.load("h-s0")
    worse = solve(inst, method="fifo")
    assert worse.objective > optimum + 1e-6  # horus minimizes
    manifest.entries["h-s0"]["best"] = None
    wrong = (optimum + worse.objective) / 2
    notes = offer_best(manifest, [Offer("h-s0", worse.decision, worse.objective, "feasible",
                                        wrong, "fifo")])
    assert load_manifest(directory).best("h-s0")["bound"] == wrong, notes
    return optimum, wrong


@pytest.fixture(scope="module")
def _built(tmp_path_factory):
    """The one-instance suite, built once (its best known proven by HiGHS)."""
    return build_suite(write_spec(tmp_path_factory.mktemp("lib") / "tiny"), jobs=1,
                       progress=False).directory


@pytest.fixture
def built(_built, tmp_path):
    """A fresh copy of the built suite's folder, for a test to make stale and reprove."""
    return shutil.copytree(_built, tmp_path / "tiny")


def test_reprove_replaces_a_stale_best_known_and_drops_its_wrong_bound(built):
    optimum, wrong = _make_stale(built)
    manifest, notes = reprove_suite(built, jobs=1, progress=False)
    best = manifest.best("h-s0")
    assert best["status"] == "optimal" and best["objective"] == pytest.approx(optimum)
    assert best["bound"] != wrong and best["method"] == "exact"
    assert any("it was wrong; dropped" in line for line in notes)
    assert verify(built)[1] == []


def test_verify_reprove_on_the_command_line(built, capsys):
    optimum, _ = _make_stale(built)
    assert main(["library", "verify", "--suite", str(built), "--reprove",
                 "--jobs", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "best known" in out and "all verified" in out
    assert load_manifest(built).best("h-s0")["objective"] == pytest.approx(optimum)
