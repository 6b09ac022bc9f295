"""The topology graph is the source of truth: builders make it, files store it, views come
from its lowest common ancestors, and a user's graph changes simulated locality."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from dlsched import Cluster, InputError, Instance, Job, load_instance, save_instance
from dlsched.files import read_json
from dlsched.problems.liquid_network import distance_matrix
from dlsched.problems.sched2 import C_REF
from dlsched.simulate import job_table, simulate
from dlsched.topology import Level, homogeneous_cluster
from dlsched.topology_io import load_topology, save_topology

DATA = Path(__file__).parent / "data" / "topologies"
REPO = Path(__file__).parent.parent
LEVEL = {"gpu": 0, "switch": 1, "socket": 2, "server": 3, "rack": 4, "domain": 5, "cluster": 6}


def lca_level(cluster: Cluster, a: str, b: str) -> int:
    """Level of the lowest common ancestor, straight from networkx (the reference)."""
    return LEVEL[cluster.graph.nodes[nx.lowest_common_ancestor(cluster.graph, a, b)]["kind"]]


@pytest.mark.parametrize("cluster", [
    homogeneous_cluster(4, 2, nodes_per_rack=2, racks_per_domain=1, sockets_per_node=2),
    homogeneous_cluster(5, 3, nodes_per_rack=2),
    load_topology(DATA / "nvlink_islands.json"),
    load_topology(DATA / "two_tier_switch.graphml"),
])
def test_levels_are_lowest_common_ancestors(cluster):
    g = cluster.graph
    assert nx.is_arborescence(g)
    for a, b in itertools.product(range(cluster.num_gpus), repeat=2):
        ga, gb = cluster.gpu_ids[a], cluster.gpu_ids[b]
        assert int(cluster.gpu_level(a, b)) == lca_level(cluster, ga, gb)
        # every GPU hangs below its server
        assert cluster.node_ids[cluster.gpu_node[a]] in nx.ancestors(g, ga)
    for a, b in itertools.product(range(cluster.num_nodes), repeat=2):
        na, nb = cluster.node_ids[a], cluster.node_ids[b]
        assert cluster.node_level_matrix[a, b] == lca_level(cluster, na, nb)
        assert cluster.node_level(a, b) == lca_level(cluster, na, nb)


def test_nodes_form_writes_itself_back_unchanged():
    """Library instances keep their file form, hence their sha256.

    The cluster is built as load_instance builds it (``Cluster.from_dict`` of the file's
    ``cluster``); that each whole file still loads with its manifest's sha256 is
    test_sched2_snapshot.py's verify("quick") (loading every instance here cost 0.3 CPU-s
    of this test's 0.32)."""
    files = sorted((REPO / "instances" / "library" / "quick").rglob("*.json*"))
    docs = {path: read_json(path) for path in files}
    docs = {path: doc for path, doc in docs.items() if "cluster" in doc}
    assert len(docs) >= 10
    for path, doc in docs.items():
        cluster = Cluster.from_dict(doc["cluster"])
        assert cluster.to_dict() == doc["cluster"], path
        assert not cluster.from_graph_form


def test_graph_form_round_trips_through_an_instance(tmp_path):
    cluster = load_topology(DATA / "nvlink_islands.json")
    doc = cluster.to_dict()
    assert set(doc) == {"graph"}
    assert doc["graph"]["graph"] == {"locality_level": "switch"}
    again = Cluster.from_dict(json.loads(json.dumps(doc)))
    assert again.to_dict() == doc
    assert again.gpu_ids == cluster.gpu_ids
    inst = Instance(problem="sched2", cluster=cluster, name="nv",
                    jobs=(Job(id="j0", num_gpus=2, duration=10.0, model="a"),),
                    params={"locality": {"a": 2.0}})
    sha = save_instance(inst, tmp_path / "nv.json")
    loaded = load_instance(tmp_path / "nv.json")
    assert loaded.sha256 == sha == inst.sha256
    assert loaded.cluster.to_dict() == doc
    assert read_json(tmp_path / "nv.json")["cluster"] == doc


def test_graphml_and_node_link_files_give_the_same_cluster(tmp_path):
    a = load_topology(DATA / "two_tier_switch.graphml")
    save_topology(a, tmp_path / "t.json")
    save_topology(a, tmp_path / "t.graphml")
    for b in (load_topology(tmp_path / "t.json"), load_topology(tmp_path / "t.graphml")):
        assert b.node_ids == a.node_ids and b.gpu_ids == a.gpu_ids
        assert np.array_equal(b.node_level_matrix, a.node_level_matrix)
        assert np.array_equal(b.node_bandwidth, a.node_bandwidth)
    assert a.num_nodes == 8 and a.num_gpus == 16
    assert a.gpu_type == ("t4",) * 16 and set(a.node_cpu) == {48.0}


def test_user_graph_forms_undirected_int_ids_level_synonyms():
    g = nx.Graph()
    g.add_node(0, level="cluster")
    g.add_node(1, kind="node", cpu=4, ram_gb=8)  # "node" reads as server
    g.add_node(2, level="GPU", type="k80", mem_gb=12)
    g.add_edges_from([(2, 1), (1, 0)])  # directions do not matter
    c = Cluster.from_graph(g)
    assert c.node_ids == ("1",) and c.gpu_ids == ("2",)
    assert c.graph.nodes["1"]["kind"] == "server"
    assert set(c.graph.edges) == {("1", "2"), ("0", "1")}  # parent -> child
    assert c.gpu_speed.tolist() == [1.0] and c.gpu_mem_gb.tolist() == [12.0]
    assert c.nodes[0].gpus[0].type == "k80"


BROKEN = [
    ("broken_cycle.json", "cycle through vertex"),
    ("broken_cycle.graphml", "cycle through vertex"),
    ("broken_gpu_without_server.json", "GPU 'orphan' has no server above it"),
    ("broken_server_without_cpu.json", "server 'n0' has no 'cpu' attribute"),
    ("broken_gpu_without_mem_gb.json", "GPU 'n0/g1' has no 'mem_gb' attribute"),
    ("broken_unknown_level.json", "vertex 'n0': unknown level 'host'"),
    ("broken_missing_level.json", "vertex 'n0' has no level"),
    ("broken_rack_under_server.json", "vertex 'r1' (rack) sits under 'n0' (server)"),
    ("broken_two_roots.json", "vertex 'cluster2' is a second 'cluster' vertex"),
    ("broken_vertex_not_connected.json", "is not connected to the cluster vertex"),
    ("broken_rack_without_gpus.json", "vertex 'r1' (rack) has no GPU under it"),
    ("broken_negative_bandwidth.json", "vertex 'n0/g1': bandwidth of the link above it"),
    ("broken_unknown_locality_level.json", "locality_level = 'galaxy'"),
    ("broken_link_to_unlisted_vertex.json", "names vertex 'n0/g9', which is not listed"),
]


@pytest.mark.parametrize(("name", "words"), BROKEN)
def test_broken_graph_is_one_line_naming_the_vertex(name, words):
    with pytest.raises(InputError) as err:
        load_topology(DATA / name)
    text = str(err.value)
    assert "\n" not in text
    assert words in text
    assert err.value.source == str(DATA / name)
    assert err.value.fix


def test_every_broken_file_is_tested():
    on_disk = {p.name for p in DATA.glob("broken_*")}
    assert on_disk == {name for name, _ in BROKEN}


def test_broken_graph_in_an_instance_names_the_field(tmp_path):
    doc = homogeneous_cluster(1, 1).to_dict()
    inst = Instance(problem="sched2", cluster=homogeneous_cluster(1, 1), name="x",
                    jobs=(Job(id="j0", num_gpus=1, duration=1.0, model="a"),),
                    params={"locality": {"a": 2.0}}).to_dict()
    inst.pop("sha256", None)
    inst["cluster"] = {"graph": read_json(DATA / "broken_cycle.json")}
    path = tmp_path / "i.json"
    path.write_text(json.dumps(inst))
    with pytest.raises(InputError) as err:
        load_instance(path)
    assert err.value.field == "cluster.graph" and "cycle" in err.value.message
    inst["cluster"] = {**doc, "graph": read_json(DATA / "flat_server.json")}
    path.write_text(json.dumps(inst))
    with pytest.raises(InputError) as err:
        load_instance(path)
    assert err.value.field == "cluster"


def test_nodes_form_switch_under_two_sockets_is_rejected():
    doc = homogeneous_cluster(1, 2, sockets_per_node=2).to_dict()
    for gpu in doc["nodes"][0]["gpus"]:
        gpu["switch"] = "w0"
    with pytest.raises(InputError, match="appears under two sockets"):
        Cluster.from_dict(doc)


def test_link_bandwidth_is_the_path_bottleneck():
    c = load_topology(DATA / "two_tier_switch.graphml")
    i = c.node_index
    # same rack: server uplinks (25); other rack: + ToR uplinks (20); other domain: + 40
    assert c.node_bandwidth[i["s000"], i["s001"]] == 25.0
    assert c.node_bandwidth[i["s000"], i["s010"]] == 20.0
    assert c.node_bandwidth[i["s000"], i["s110"]] == 20.0
    assert c.node_bandwidth[i["s000"], i["s000"]] == np.inf
    nv = load_topology(DATA / "nvlink_islands.json")
    assert nv.gpu_bandwidth(0, 1) == 300.0  # one island
    assert nv.gpu_bandwidth(0, 4) == 32.0  # across islands, through the server
    assert homogeneous_cluster(2, 1).node_bandwidth[0, 1] == np.inf  # no bandwidth given


def test_liquid_distance_follows_the_graph():
    """Eq. 2 / the Go table from the two-tier fabric vs one flat switch, checked against
    networkx's lowest common ancestor."""
    tiers = load_topology(DATA / "two_tier_switch.graphml")
    flat = load_topology(DATA / "flat_switch.graphml")
    g = tiers.graph
    table = {"server": 0.0, "rack": 1.0, "domain": 4.0, "cluster": 40.0}
    paper, impl = distance_matrix(tiers, "paper"), distance_matrix(tiers, "implementation")
    for a, b in itertools.product(range(8), repeat=2):
        top = nx.lowest_common_ancestor(g, tiers.node_ids[a], tiers.node_ids[b])
        under = sum(g.nodes[v]["kind"] == "server" for v in nx.descendants(g, top))
        assert paper[a, b] == (0.0 if a == b else under)
        assert impl[a, b] == table[g.nodes[top]["kind"]]
    assert sorted(set(paper.ravel())) == [0.0, 2.0, 4.0, 8.0]
    # one flat switch: every pair of servers is as far as any other
    assert set(distance_matrix(flat, "paper")[~np.eye(8, dtype=bool)]) == {8.0}
    assert set(distance_matrix(flat, "implementation")[~np.eye(8, dtype=bool)]) == {4.0}


def test_locality_groups():
    nv = load_topology(DATA / "nvlink_islands.json")
    assert nv.locality_level is Level.SWITCH
    assert nv.gpu_locality_group.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert nv.gpu_level(0, 1) is Level.SWITCH and nv.gpu_level(0, 7) is Level.NODE
    flat = load_topology(DATA / "flat_server.json")
    assert flat.locality_level is Level.NODE
    assert flat.gpu_locality_group.tolist() == [0] * 8
    assert flat.gpu_level(0, 7) is Level.NODE
    c = homogeneous_cluster(2, 4, sockets_per_node=2)
    assert np.array_equal(c.gpu_locality_group, c.gpu_node)  # default: the server
    assert c.gpu_group(Level.SOCKET).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert c.gpu_group(Level.GPU).tolist() == list(range(8))


def _expected_sched2(sensitivity: float, gpus: list[str], island: dict[str, str]) -> float:
    """SCHED²'s 1 + (S - 1) c / C_REF with c the share of peers in another group."""
    counts = np.unique([island[g] for g in gpus], return_counts=True)[1]
    n = counts.sum()
    c = 0.0 if n <= 1 else 1.0 - (counts * (counts - 1)).sum() / (n * (n - 1))
    return 1.0 + (sensitivity - 1.0) * c / C_REF


def test_nvlink_islands_change_sched2_slowdowns():
    """The same workload on one 8-GPU server, flat vs two NVLink islands: a job spanning
    both islands slows down by the share of cross-island peers; packed jobs do not."""
    jobs = (Job(id="big", submit_time=0.0, num_gpus=8, duration=100.0, model="a"),
            Job(id="half0", submit_time=1.0, num_gpus=4, duration=40.0, model="a"),
            Job(id="half1", submit_time=1.0, num_gpus=4, duration=40.0, model="a"),
            Job(id="three", submit_time=2.0, num_gpus=3, duration=30.0, model="a"))
    tables = {}
    for name in ("flat_server", "nvlink_islands"):
        cluster = load_topology(DATA / f"{name}.json")
        inst = Instance(problem="sched2", cluster=cluster, jobs=jobs, name=name,
                        params={"locality": {"a": 2.0}})
        tables[name] = job_table(simulate(inst, "fifo")).set_index("job")
    flat, nv = tables["flat_server"], tables["nvlink_islands"]
    assert (flat["locality_slowdown"] == 1.0).all()
    island = {f"dgx/g{k}": f"nv{k // 4}" for k in range(8)}
    for job in nv.index:
        gpus = nv.loc[job, "gpus"].split()
        expected = _expected_sched2(2.0, gpus, island)
        assert nv.loc[job, "locality_slowdown"] == pytest.approx(expected, rel=1e-12)
    # 8 GPUs over two islands of 4: c = 1 - 2·4·3 / (8·7) = 4/7 -> 1 + (4/7) / (2/3) = 13/7
    assert nv.loc["big", "locality_slowdown"] == pytest.approx(13 / 7)
    assert nv.loc["big", "jct"] == pytest.approx(100 * 13 / 7)
    assert flat.loc["big", "jct"] == pytest.approx(100.0)


def test_simulate_cli_runs_a_workload_on_a_topology_file(tmp_path, capsys):
    """``dlsched simulate W --topology FILE``: one 8-GPU job, 100 s, sensitivity 2."""
    from dlsched.cli import main

    w = Instance(problem="sched2", cluster=homogeneous_cluster(1, 8, gpu_type="v100"),
                 jobs=(Job(id="big", num_gpus=8, duration=100.0, model="a"),),
                 params={"locality": {"a": 2.0}}, name="cli")
    save_instance(w, tmp_path / "w.json")
    spans = {}
    for name in ("flat_server", "nvlink_islands"):
        out = tmp_path / name
        assert main(["simulate", str(tmp_path / "w.json"), "--policy", "fifo", "--out",
                     str(out), "--topology", str(DATA / f"{name}.json"), "--no-plots",
                     "--no-progress"]) == 0
        spans[name] = json.loads((out / "summary.json").read_text())["summary"]["makespan"]
    assert spans["flat_server"] == pytest.approx(100.0)
    assert spans["nvlink_islands"] == pytest.approx(100.0 * 13 / 7)
    capsys.readouterr()
    assert main(["simulate", str(tmp_path / "w.json"), "--policy", "fifo", "--out",
                 str(tmp_path / "x"), "--topology", str(DATA / "broken_cycle.json"),
                 "--no-progress"]) == 2
    assert "broken_cycle.json" in capsys.readouterr().err


def test_liquid_network_cost_follows_the_graph():
    """One PS and two workers placed the same way on the two-tier fabric and on one flat
    switch: Σ bw·d with the Go table is 0.5·(1 + 40) vs 0.5·(4 + 4)."""
    from dlsched.jobs import Container
    from dlsched.problems.liquid import decision_from_assignment, liquid_breakdown, liquid_data

    job = Job(id="j", containers=(
        Container("ps", "ps", 0, 0.0, cpu=1.0, ram_gb=1.0, bandwidth=0.5),
        Container("w0", "worker", 1, 8.0, cpu=1.0, ram_gb=1.0, bandwidth=0.5),
        Container("w1", "worker", 1, 8.0, cpu=1.0, ram_gb=1.0, bandwidth=0.5)))
    cost = {}
    for name in ("two_tier_switch", "flat_switch"):
        cluster = load_topology(DATA / f"{name}.graphml")
        inst = Instance(problem="liquid", cluster=cluster, jobs=(job,), name=name,
                        params={"distance": "implementation", "objective": "implementation"})
        data = liquid_data(inst)
        where = [cluster.node_index[s] for s in ("s000", "s001", "s100")]
        decision = decision_from_assignment(data, np.array(where))
        cost[name] = liquid_breakdown(inst, decision).network_distance
    assert cost["two_tier_switch"] == pytest.approx(0.5 * (1 + 40))
    assert cost["flat_switch"] == pytest.approx(0.5 * (4 + 4))
