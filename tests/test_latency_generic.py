"""The per-call forms behind one ``solve()`` at thousands of GPUs (issue 33 item 2) give
the answers of their definitions.

Each is compared with a plain computation written here: a snapshot's idle GPUs as fresh
lists and counts, the GPU memory in use alone, SCHED²'s GPUs per locality group and
remote-peer share, SCHED²'s packing placement, and the validator's exclusivity and memory
verdicts (which name a GPU's holders only when a GPU is shared or over memory).
"""

from __future__ import annotations

import numpy as np
import pytest

from dlsched import Decision, Instance, Job, Placement
from dlsched.heuristics.sched2 import packing
from dlsched.jobs import RunningJob
from dlsched.problems.sched2 import placement_counts, remote_peer_share
from dlsched.topology import homogeneous_cluster
from dlsched.validate import validate
from factories import horus_instance, running


def _sched2(jobs, running_jobs=(), nodes=3, per_node=4, mem=8.0):
    cluster = homogeneous_cluster(nodes, per_node, gpu_mem_gb=mem)
    return Instance(problem="sched2", cluster=cluster,
                    jobs=tuple(Job(id=j, num_gpus=g, duration=60.0, gpu_mem_gb=m)
                               for j, g, m in jobs),
                    running=tuple(running_jobs), time=0.0)


def test_idle_lists_and_counts_follow_the_running_jobs():
    # 2 servers x 2 GPUs; a running job holds n0/g1 and n1/g0
    inst = horus_instance([("a", 1, 10.0, 1.0)], [running("r", ("n0/g1", "n1/g0"), 20.0, 1.0)],
                          nodes=2)
    lists = inst.idle_lists()
    assert lists == [[0], [3]]
    assert inst.idle_counts.tolist() == [1, 1]
    lists[0].append(99)  # the caller's own lists
    assert inst.idle_lists() == [[0], [3]]
    assert inst.idle_by_server == ((0,), (3,))
    assert horus_instance([], nodes=2).idle_lists() == [[0, 1], [2, 3]]


def test_idle_lists_read_seeded_loads():
    inst = horus_instance([], nodes=2)
    inst.__dict__["idle_by_server"] = [(1,), ()]  # as the simulator seeds a snapshot
    assert inst.idle_lists() == [[1], []]
    assert inst.idle_counts.tolist() == [1, 0]


def test_gpu_memory_in_use_alone_and_seeded():
    inst = horus_instance([], [running("r", ("n0/g1",), 20.0, 3.0),
                               running("s", ("n0/g1", "n0/g0"), 5.0, 1.5)])
    assert inst.gpu_mem_used.tolist() == [1.5, 4.5]
    assert inst.gpu_usage[0].tolist() == [5.0, 25.0]
    assert inst.gpu_usage[1].tolist() == [1.5, 4.5]
    seeded = horus_instance([])
    seeded.__dict__["gpu_usage"] = (np.zeros(2), np.array([2.0, 0.5]))
    assert seeded.gpu_mem_used.tolist() == [2.0, 0.5]


def test_placement_counts_and_remote_peer_share():
    inst = _sched2([("a", 6, 1.0)])
    # GPUs 0-3 on n0, 4-7 on n1, 8-11 on n2: 1 on n2, 3 on n0, 2 on n1
    ids = inst.cluster.gpu_ids
    counts = placement_counts(inst, [ids[9], ids[0], ids[5], ids[1], ids[4], ids[2]])
    assert counts.tolist() == [3, 2, 1]  # per server, in server order
    # peers of 6 GPUs: 30 ordered pairs; local ones 3*2 + 2*1 = 8
    assert remote_peer_share(counts) == 1.0 - 8 / 30
    assert remote_peer_share([2, 2]) == 1.0 - 4 / 12
    assert remote_peer_share([1]) == 0.0 and remote_peer_share([]) == 0.0
    assert remote_peer_share([1, 1, 1]) == 1.0
    assert remote_peer_share(np.array([2.5, 1.5])) == 1.0 - (2.5 * 1.5 + 1.5 * 0.5) / (4 * 3)


def _packing_by_definition(free, demand):
    """Fig. 2's packing read plainly: the server with the fewest free GPUs that holds the
    rest (lowest index on ties), else the one with the most free GPUs (lowest index)."""
    left = [len(f) for f in free]
    if sum(left) < demand:
        return None
    chosen, need = [], demand
    while need > 0:
        fits = [s for s in range(len(free)) if left[s] >= need]
        if fits:
            s = min(fits, key=lambda k: (left[k], k))
            take = need
        else:
            s = max(range(len(free)), key=lambda k: (left[k], -k))
            take = left[s]
        used = len(free[s]) - left[s]
        chosen += free[s][used:used + take]
        left[s] -= take
        need -= take
    return chosen


def test_packing_matches_its_definition():
    rng = np.random.default_rng(5)
    for _ in range(200):
        servers = int(rng.integers(1, 7))
        free, g = [], 0
        for _s in range(servers):
            k = int(rng.integers(0, 5))
            free.append(list(range(g, g + k)))
            g += 8
        for demand in range(0, 13):
            assert packing([list(f) for f in free], demand) == \
                _packing_by_definition(free, demand), (free, demand)


@pytest.fixture
def busy_snapshot():
    # 3 servers x 4 GPUs of 8 GB; r holds n0/g0 with 5 GB
    return _sched2([("a", 2, 4.0), ("b", 2, 4.0), ("c", 1, 4.0)],
                   [RunningJob("r", ("n0/g0",), gpu_mem_gb=5.0)])


def _report(inst, *placements):
    return [(v.kind, v.job) for v in validate(inst, Decision.of(placements)).violations]


def test_validator_names_shared_and_busy_gpus(busy_snapshot):
    inst = busy_snapshot
    assert _report(inst, Placement("a", ("n1/g0", "n1/g1")), Placement("c", ("n2/g0",))) == []
    # b shares n1/g1 with a: one violation naming the GPU's first holder
    assert _report(inst, Placement("a", ("n1/g0", "n1/g1")),
                   Placement("b", ("n1/g1", "n1/g2"))) == [("exclusive", "a")]
    # c on the running job's GPU (5 + 4 GB fits no 8 GB GPU either)
    assert _report(inst, Placement("c", ("n0/g0",))) == [("gpu_memory", "c"), ("exclusive", "c")]
    # the same GPU twice in one job is a demand fault, not sharing
    assert _report(inst, Placement("a", ("n2/g1", "n2/g1"))) == [("demand", "a")]
    # GPU order: n0/g1 (index 1) is reported before n2/g3 (index 11)
    assert _report(inst, Placement("a", ("n2/g3", "n0/g1")), Placement("b", ("n0/g1", "n0/g2")),
                   Placement("c", ("n2/g3",))) == [("exclusive", "a"), ("exclusive", "a")]
    # ... and a GPU over memory names its first holder: r's 5 GB + a's 4 GB on n0/g0
    assert _report(inst, Placement("a", ("n0/g0", "n0/g1")), Placement("b", ("n0/g1", "n0/g2"))
                   ) == [("gpu_memory", "a"), ("exclusive", "a"), ("exclusive", "a")]


def test_validator_unknown_gpus_are_listed(busy_snapshot):
    report = validate(busy_snapshot, Decision.of([Placement("a", ("n1/g0", "zz", "yy"))]))
    assert [(v.kind, v.job) for v in report.violations] == [("unknown_gpu", "a")]
    assert "['zz', 'yy']" in report.violations[0].message


def test_validator_verdicts_on_random_decisions():
    """Every random decision's exclusivity verdict is the plain count per GPU."""
    inst = _sched2([(f"j{k}", 1 + k % 3, 1.0) for k in range(6)],
                   [RunningJob("r", ("n0/g0", "n2/g3"), gpu_mem_gb=1.0)])
    ids = inst.cluster.gpu_ids
    busy = {"n0/g0", "n2/g3"}
    rng = np.random.default_rng(11)
    for _ in range(150):
        placements = []
        for job in inst.jobs:
            if rng.random() < 0.6:
                picks = rng.choice(len(ids), size=job.num_gpus, replace=False)
                placements.append(Placement(job.id, tuple(ids[g] for g in picks)))
        held = [g for p in placements for g in p.gpus]
        shared = sorted({ids.index(g) for g in held if held.count(g) > 1 or g in busy})
        expected = [("exclusive", next(p.job for p in placements if ids[g] in p.gpus))
                    for g in shared]
        got = [(v.kind, v.job) for v in validate(inst, Decision.of(placements)).violations
               if v.kind == "exclusive"]
        assert got == expected


def test_validator_adds_a_wide_jobs_memory_once_per_listing():
    # 2 servers x 4 GPUs of 8 GB; a needs 5 GPUs of 5 GB each
    inst = _sched2([("a", 5, 5.0)], nodes=2)
    spread = ("n0/g0", "n0/g1", "n0/g2", "n1/g0", "n1/g1")
    assert _report(inst, Placement("a", spread)) == []
    # n0/g0 listed twice: a demand fault, and 10 GB on an 8 GB GPU
    assert _report(inst, Placement("a", ("n0/g0", *spread[1:4], "n0/g0"))) == [
        ("demand", "a"), ("gpu_memory", "a")]
