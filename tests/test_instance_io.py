"""Instance and solution files: round trips, checksums and bad input."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from dlsched import Decision, InputError, Placement, load_instance, load_solution, save_instance
from dlsched.cli import main
from dlsched.files import MAX_BYTES, MAX_DEPTH, MAX_INT, MAX_NUMBER, check_plain_values, read_json
from dlsched.instance_io import instance_from_dict
from dlsched.instances.horus_gen import generate_horus
from dlsched.schema_check import checker, schema
from dlsched.solution_io import save_solution, solution_decision
from dlsched.topology import Level, homogeneous_cluster
from dlsched.validate import validate
from factories import horus_instance, running

sys.path.insert(0, str(Path(__file__).parent / "data"))


def test_round_trip_keeps_content_and_checksum(tmp_path):
    inst = generate_horus(seed=4, nodes=3, gpus_per_node=2, beta=4)
    sha = save_instance(inst, tmp_path / "i.json")
    again = load_instance(tmp_path / "i.json")
    assert again.sha256 == sha == inst.sha256
    assert again.jobs == inst.jobs and again.running == inst.running
    assert again.cluster.to_dict() == inst.cluster.to_dict()


def test_checksum_changes_with_content():
    inst = generate_horus(seed=4, nodes=3, gpus_per_node=2, beta=4)
    assert inst.replace(time=1.0).sha256 != inst.sha256


def test_solution_round_trip(tmp_path):
    inst = horus_instance([("a", 1, 10.0, 1.0)])
    save_instance(inst, tmp_path / "i.json")
    decision = Decision.of([Placement("a", ("n0/g1",))])
    save_solution(inst, decision, tmp_path / "s.json", method="manual")
    assert load_solution(tmp_path / "s.json", inst) == decision


def _write(tmp_path, doc):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


def _doc():
    inst = horus_instance([("a", 1, 10.0, 1.0)], [running("r", ["n0/g0"], 10.0, 1.0)])
    doc = inst.to_dict()
    del doc["sha256"]
    return doc


@pytest.mark.parametrize("mutate,field,words", [
    (lambda d: d["cluster"]["nodes"][0].pop("cpu"), "cluster.nodes[0].cpu", "missing"),
    (lambda d: d["cluster"]["nodes"][0].update(cpu=-4), "cluster.nodes[0].cpu", "minimum"),
    (lambda d: d["jobs"][0].update(num_gpus="two"), "jobs[0].num_gpus", "not of type"),
    (lambda d: d["jobs"][0].pop("gpu_util"), "jobs[0].gpu_util", "has no gpu_util"),
    (lambda d: d["running"][0].update(gpus=["n0/g7"]), "running[0].gpus[0]", "unknown GPU"),
    (lambda d: d.update(problem="tetris"), "problem", "unknown problem"),
    (lambda d: d.update(sha256="0" * 64), "sha256", "does not match"),
    (lambda d: d["jobs"].append(dict(d["jobs"][0])), "jobs[1].id", "twice"),
    (lambda d: d["jobs"][0].update(colour="red"), "jobs[0].colour", "Additional properties"),
])
def test_bad_instance_names_file_field_and_fix(tmp_path, mutate, field, words):
    doc = _doc()
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as err:
        load_instance(path)
    assert err.value.source == str(path)
    assert err.value.field == field
    assert words in err.value.message
    assert err.value.fix


def test_malformed_json(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"format_version": 1,\n "problem": }')
    with pytest.raises(InputError, match="line 2"):
        load_instance(path)


def test_solution_for_another_instance(tmp_path):
    a = horus_instance([("a", 1, 10.0, 1.0)])
    b = horus_instance([("a", 1, 20.0, 1.0)])
    save_solution(a, Decision(), tmp_path / "s.json")
    with pytest.raises(InputError) as err:
        load_solution(tmp_path / "s.json", b)
    assert err.value.field == "instance_sha256"


def test_topology_levels_and_graph():
    c = homogeneous_cluster(4, 2, nodes_per_rack=2, racks_per_domain=1, sockets_per_node=2)
    gi = c.gpu_index
    assert c.gpu_level(gi["n0/g0"], gi["n0/g0"]) is Level.GPU
    assert c.gpu_level(gi["n0/g0"], gi["n0/g1"]) is Level.NODE  # one GPU per socket
    assert c.gpu_level(gi["n0/g0"], gi["n1/g0"]) is Level.RACK
    assert c.gpu_level(gi["n0/g0"], gi["n2/g0"]) is Level.CLUSTER  # racks in two domains
    assert c.node_level_matrix[0, 1] == Level.RACK
    g = c.graph
    assert g.nodes["n0/g0"]["kind"] == "gpu"
    assert g.nodes["r0"]["kind"] == "rack"
    assert list(g.predecessors("n0")) == ["r0"]
    assert c.nodes_per_rack() == {0: 2, 1: 2}


def test_duplicate_ids_in_cluster():
    doc = homogeneous_cluster(2, 1).to_dict()
    doc["nodes"][1]["gpus"][0]["id"] = "n0/g0"
    from dlsched import Cluster

    with pytest.raises(InputError, match="used twice"):
        Cluster.from_dict(doc)


# ---------------------------------------------------------------- broken files, limits, gzip
BROKEN = Path(__file__).parent / "data" / "broken"
EXPECTED = json.loads((BROKEN / "expected.json").read_text())


def test_the_broken_files_are_the_ones_the_script_writes():
    from make_broken import cases

    made = cases()
    assert set(made) == set(EXPECTED)
    for name, (data, field) in made.items():
        assert (BROKEN / name).read_bytes() == data, name
        assert EXPECTED[name] == field


def test_the_base_files_are_valid():
    base = load_instance(BROKEN / "base-instance.json")
    decision = load_solution(BROKEN / "base-solution.json", base)
    assert validate(base, decision).ok


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_broken_file_is_one_line_naming_file_and_field(name, capsys):
    path = BROKEN / name
    with pytest.raises(InputError) as err:
        if name.startswith("instance"):
            load_instance(path)
        else:
            load_solution(path, load_instance(BROKEN / "base-instance.json"))
    assert err.value.source == str(path)
    assert err.value.field == EXPECTED[name]
    assert err.value.fix
    line = err.value.one_line()
    assert "\n" not in line and len(line) < 600
    argv = (["solve", str(path), "--method", "greedy"] if name.startswith("instance")
            else ["validate", str(BROKEN / "base-instance.json"), str(path)])
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: {EXPECTED[name]}: ")


def test_save_instance_and_solution_honour_gz(tmp_path):
    inst = horus_instance([("a", 1, 10.0, 1.0)])
    sha = save_instance(inst, tmp_path / "i.json.gz")
    assert (tmp_path / "i.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert load_instance(tmp_path / "i.json.gz").sha256 == sha
    decision = Decision.of([Placement("a", ("n0/g1",))])
    save_solution(inst, decision, tmp_path / "s.json.gz", method="manual")
    assert (tmp_path / "s.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert load_solution(tmp_path / "s.json.gz", inst) == decision


def test_limits_at_the_edge(tmp_path):
    doc = {"a": 1}
    for _ in range(MAX_DEPTH - 1):
        doc = {"a": doc}
    check_plain_values(doc)  # 64 levels: fine
    with pytest.raises(InputError, match="nested more than 64"):
        check_plain_values({"a": doc})
    check_plain_values([MAX_NUMBER, -MAX_NUMBER, MAX_INT, 5e-300, 0.0])
    for bad in (MAX_NUMBER * 1.01, MAX_INT + 1, 1e-310, float("nan"), float("-inf")):
        with pytest.raises(InputError) as err:
            check_plain_values({"x": [0, {"y": bad}]})
        assert err.value.field == "x[1].y"
    path = tmp_path / "big.json.gz"
    # MAX_BYTES + 1 MiB of spaces as concatenated gzip members (one read as their
    # concatenation), not one 256-MiB compression (1.6 CPU-s)
    member = gzip.compress(b" " * (1 << 20))
    path.write_bytes(member * (MAX_BYTES // (1 << 20) + 1))
    with pytest.raises(InputError, match="decompresses to more than"):
        read_json(path)
    for what in (tmp_path, tmp_path / "nul\0.json"):
        with pytest.raises(InputError):
            read_json(what)


def test_every_bundled_schema_compiles():
    for name in ("instance", "solution", "params"):
        checker(name)
        for definition in schema(name).get("definitions", {}):
            checker(name, definition)


@pytest.mark.parametrize("mutate,field,message,fix", [
    # draft-04 integers: a number with a fraction part is not one, even 2.0
    (lambda d: d["jobs"][0].update(num_gpus=2.0), "jobs[0].num_gpus",
     "2.0 is not of type 'integer'", "type"),
    (lambda d: d.update(format_version=True), "format_version",
     "True is not of type 'integer'", "type"),
    (lambda d: d["cluster"]["nodes"][0].update(cpu=-4), "cluster.nodes[0].cpu",
     "-4 is less than the minimum of 0", ">= 0"),
    (lambda d: d["jobs"][0].update(weight=0), "jobs[0].weight",
     "0 is less than or equal to the minimum of 0", "greater than"),
    (lambda d: d["jobs"][0].update(colour="red"), "jobs[0].colour",
     "Additional properties are not allowed ('colour' was unexpected)", "unknown field"),
    (lambda d: d["cluster"]["nodes"][0].pop("cpu"), "cluster.nodes[0].cpu", "missing field",
     "add the missing field"),
    (lambda d: d.update(sha256="xyz"), "sha256", "'xyz' does not match '^[0-9a-f]{64}$'",
     "hex"),
    (lambda d: d["params"].update(cost_model="best"), "params.cost_model",
     "'best' is not one of ['paper', 'colocation']", "listed values"),
    (lambda d: d["jobs"][0].update(id=""), "jobs[0].id", "'' should be non-empty",
     "must not be empty"),
])
def test_schema_errors_name_the_path_the_rule_and_the_fix(mutate, field, message, fix):
    doc = _doc()
    mutate(doc)
    with pytest.raises(InputError) as err:
        instance_from_dict(doc)
    assert (err.value.field, err.value.message) == (field, message)
    assert fix in err.value.fix


def test_documents_built_in_python_are_held_to_the_file_limits(tmp_path):
    doc = _doc()
    doc["jobs"][0]["duration"] = float("nan")
    with pytest.raises(InputError) as err:
        instance_from_dict(doc)
    assert err.value.field == "jobs[0].duration" and "not a finite number" in err.value.message
    inst = horus_instance([("a", 1, 10.0, 1.0)])
    sol = {"format_version": 1, "instance_sha256": inst.sha256,
           "placements": [{"job": "a", "gpus": ["n0/g1"], "start": float("inf")}]}
    with pytest.raises(InputError) as err:
        solution_decision(sol, inst)
    assert err.value.field == "placements[0].start"
