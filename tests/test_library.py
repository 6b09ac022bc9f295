"""The instance library: gzip files, manifest, verify catching tampering, best known updates."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from dlsched import InputError, load_instance
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.library import (
    Offer,
    load_manifest,
    offer_best,
    verify,
    write_instance_gz,
)
from dlsched.benchmarks.suites import load_spec
from dlsched.cli import main
from dlsched.decision import Decision, Placement
from dlsched.registry import generators


def write_spec(root, seeds=(0, 1)):
    root.mkdir(parents=True, exist_ok=True)
    spec = {"name": "tiny", "best_known": {"runs": [{"method": "exact", "backend": "cbc"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": list(seeds),
                           "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    return root


@pytest.fixture(scope="module")
def _built(tmp_path_factory):
    """The two-instance suite, built once (its best known runs solve with CBC)."""
    return build_suite(write_spec(tmp_path_factory.mktemp("lib") / "tiny"), jobs=1,
                       progress=False).directory


@pytest.fixture
def suite(_built, tmp_path):
    """A fresh copy of the built suite, for a test to tamper with."""
    return load_manifest(shutil.copytree(_built, tmp_path / "tiny"))


def test_gzip_file_reads_back_with_the_canonical_sha(tmp_path):
    inst = generators()["horus"].build(seed=0, nodes=2, gpus_per_node=4, beta=3)
    sha = write_instance_gz(inst, tmp_path / "a.json.gz")
    write_instance_gz(inst, tmp_path / "b.json.gz")
    assert sha == inst.sha256
    assert load_instance(tmp_path / "a.json.gz").sha256 == inst.sha256
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()


def test_corrupt_gzip_is_an_input_error(tmp_path):
    (tmp_path / "x.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(InputError, match="cannot read"):
        load_instance(tmp_path / "x.json.gz")


def test_build_writes_manifest_and_verifies(suite):
    assert sorted(suite.entries) == ["h-s0", "h-s1"]
    rec = suite.entries["h-s0"]
    assert rec["source"] == {"generator": "horus", "seed": 0,
                             "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                           "busy": 0.5}}
    assert rec["best"]["status"] == "optimal"
    assert (suite.directory / rec["best"]["solution"]).is_file()
    assert verify(suite.directory) == (2, [])
    assert main(["library", "verify", "--suite", str(suite.directory)]) == 0


def test_rebuild_is_deterministic_and_keeps_best(suite):
    before = (suite.directory / "manifest.json").read_text()
    files = {p.name: p.read_bytes() for p in (suite.directory / "instances").iterdir()}
    again = build_suite(suite.directory, jobs=1, progress=False)
    assert (suite.directory / "manifest.json").read_text() == before
    assert {p.name: p.read_bytes() for p in (suite.directory / "instances").iterdir()} == files
    assert again.entries == suite.entries


def test_verify_catches_an_edited_instance_file(suite, capsys):
    path = suite.path_of("h-s0")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["jobs"][0]["gpu_util"] += 1.0
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    checked, failures = verify(suite.directory)
    assert checked == 2 and len(failures) == 1
    assert failures[0].startswith("h-s0") and "sha256" in failures[0]
    assert main(["library", "verify", "--suite", str(suite.directory)]) == 1
    assert "FAIL h-s0" in capsys.readouterr().out


def test_verify_catches_a_swapped_file_with_its_own_sha(suite):
    # a consistent file, but not the one the manifest pinned
    other = generators()["horus"].build(seed=7, nodes=2, gpus_per_node=4, beta=4)
    write_instance_gz(other, suite.path_of("h-s1"))
    _, failures = verify(suite.directory)
    assert len(failures) == 1 and "differs from the manifest" in failures[0]


def test_verify_catches_a_wrong_stored_objective(suite):
    doc = json.loads((suite.directory / "manifest.json").read_text())
    doc["instances"][0]["best"]["objective"] += 0.5
    (suite.directory / "manifest.json").write_text(json.dumps(doc))
    _, failures = verify(suite.directory)
    assert len(failures) == 1 and "evaluates to" in failures[0]


def test_offer_best_refuses_infeasible_and_misreported(suite):
    manifest = load_manifest(suite.directory)
    inst = manifest.load("h-s0")
    job = inst.jobs[0]
    bad = Decision((Placement(job.id, ()),))  # no GPU at all
    notes = offer_best(manifest, [Offer("h-s0", bad, 0.0, "feasible", None, "bad")])
    assert "refused" in notes[0]
    empty = Decision(())  # everybody waits: feasible, but far from the optimum
    notes = offer_best(manifest, [Offer("h-s0", empty, 1.0, "feasible", None, "liar")])
    assert "stated objective" in notes[0]
    notes = offer_best(manifest, [Offer("h-s0", empty, None, "feasible", None, "worse")])
    assert notes == []
    assert load_manifest(suite.directory).entries == suite.entries


def test_spec_errors_are_input_errors(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "suite.json").write_text(json.dumps(
        {"instances": [{"name": "x", "generator": "horus", "file": "y.json"}]}))
    with pytest.raises(InputError, match="exactly one"):
        load_spec(tmp_path / "s")
    with pytest.raises(InputError, match="no suite"):
        load_spec("no-such-suite", tmp_path)
    assert main(["library", "build", "--suite", str(tmp_path / "s")]) == 2


def test_bounds_kept_only_when_consistent(suite):
    manifest = load_manifest(suite.directory)
    rec = manifest.entries["h-s1"]
    value = rec["best"]["objective"]
    rec["best"].update(status="feasible", bound=None)  # pretend nothing proved it
    # a lower bound above the best known objective would cut it off: refused
    notes = offer_best(manifest, [Offer("h-s1", None, None, "no_solution", value + 1.0, "x")],
                       save=False)
    assert "cuts off" in notes[0] and rec["best"]["bound"] is None
    # a lower bound below it is kept; one equal to it proves optimality
    offer_best(manifest, [Offer("h-s1", None, None, "no_solution", value - 1.0, "x")],
               save=False)
    assert rec["best"]["bound"] == value - 1.0 and rec["best"]["status"] == "feasible"
    offer_best(manifest, [Offer("h-s1", None, None, "no_solution", value, "x")], save=False)
    assert rec["best"]["status"] == "optimal"


def test_verify_catches_a_bound_above_the_objective(suite):
    doc = json.loads((suite.directory / "manifest.json").read_text())
    best = doc["instances"][1]["best"]
    best["bound"] = best["objective"] + 1.0
    (suite.directory / "manifest.json").write_text(json.dumps(doc))
    _, failures = verify(suite.directory)
    # the bound cuts off the solution, and no longer proves the stored "optimal"
    assert [f.split(":")[0] for f in failures] == ["h-s1", "h-s1"]
    assert "cuts off" in failures[0] and "without a proving bound" in failures[1]


def test_rebuild_drops_instances_removed_from_the_spec(suite):
    write_spec(suite.directory, seeds=(0,))
    again = build_suite(suite.directory, jobs=1, progress=False)
    assert sorted(again.entries) == ["h-s0"]
    assert sorted(p.name for p in (suite.directory / "instances").iterdir()) == \
        ["h-s0.json.gz"]
    assert sorted(p.name for p in (suite.directory / "best").iterdir()) == ["h-s0.json"]
    assert verify(suite.directory) == (1, [])
