"""Instance and solution files: round trips, checksums and bad input."""

from __future__ import annotations

import json

import pytest

from dlsched import Decision, InputError, Placement, load_instance, load_solution, save_instance
from dlsched.decision import save_solution
from dlsched.instances.horus_gen import generate_horus
from dlsched.topology import Level, homogeneous_cluster
from factories import horus_instance, running


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
    (lambda d: d["jobs"][0].update(colour="red"), "jobs[0]", "Additional properties"),
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
