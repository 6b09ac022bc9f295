"""The Liquid generator: same arguments, same bytes; the Fig. 19 mix; calibrated bandwidth."""

from __future__ import annotations

import json
import runpy
from collections import Counter
from pathlib import Path

import pytest

from dlsched import load_instance
from dlsched.cli import main
from dlsched.instances.liquid_gen import BANDWIDTH, generate_liquid


def test_different_seeds_differ():
    assert generate_liquid(seed=1, nodes=10).sha256 != generate_liquid(seed=2, nodes=10).sha256


@pytest.mark.parametrize("nodes", [5, 10, 15, 20])
def test_fig19_mix_and_sizes(nodes):
    inst = generate_liquid(seed=0, nodes=nodes)
    k = nodes // 5
    assert Counter(j.model for j in inst.jobs) == {"resnet50": 4 * k, "inception3": 2 * k,
                                                   "vgg16": 2 * k}
    assert inst.cluster.num_gpus == 2 * nodes
    assert set(inst.cluster.gpu_type) == {"t4"}
    # fill = 1: the workers take every GPU; one PS per job
    workers = [c for j in inst.jobs for c in j.containers if c.role == "worker"]
    assert sum(c.gpus for c in workers) == 2 * nodes
    assert all(sum(c.role == "ps" for c in j.containers) == 1 for j in inst.jobs)
    assert all(c.bandwidth == BANDWIDTH[j.model] for j in inst.jobs for c in j.containers)
    # racks of 5 servers, domains of 2 racks
    assert len(set(inst.cluster.node_rack.tolist())) == k
    assert len(set(inst.cluster.node_domain.tolist())) == (k + 1) // 2


def test_bandwidth_matches_the_derivation(capsys):
    # the derivation is a script of the repository, not a module of the package
    # (run as `python SCRIPT` runs it, in this process: a child spent its CPU on imports)
    script = Path(__file__).resolve().parents[1] / "instances" / "derive" / "liquid_bandwidth.py"
    capsys.readouterr()
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert {m: v["bandwidth"] for m, v in json.loads(out).items()} == BANDWIDTH
    # VGG-16 is the most network-sensitive (Fig. 6), Inception V3 the least
    assert BANDWIDTH["vgg16"] > BANDWIDTH["resnet50"] > BANDWIDTH["inception3"]


def test_busy_gpus_are_excluded_from_the_fill():
    inst = generate_liquid(seed=3, nodes=10, busy=0.2)
    assert inst.gpu_busy.sum() == 4
    assert sum(j.num_gpus for j in inst.jobs) == 16


def test_cli_generate_and_solve(tmp_path, capsys):
    path = tmp_path / "l.json"
    assert main(["generate", "liquid", "--nodes", "5", "--seed", "2", "-o", str(path)]) == 0
    assert load_instance(path).sha256 == generate_liquid(seed=2, nodes=5).sha256
    assert main(["solve", str(path), "--method", "bestfit"]) == 0
