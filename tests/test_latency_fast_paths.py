"""The array forms behind one decision's latency (issue 33) give the loops' answers.

Each fast form is compared with a plain loop written here from its definition: the
running jobs' GPU usage and checks (:class:`dlsched.instance.RunningGpus`), Liquid's
per-server room (``NodeLoads.fits``, ``fits_all``, ``fits_after``, add then remove)
and the Horus paper objective priced in one call.
"""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.heuristics.liquid import NodeLoads
from dlsched.instance_io import check_instance
from dlsched.instances.genie_gen import generate_genie
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.jobs import RunningJob
from dlsched.problems import horus as horus_problem
from dlsched.problems.liquid import liquid_data
from dlsched.solve import solve


def _usage_by_loop(inst):
    """(util, mem, busy, cpu, ram) summed the plain way."""
    c = inst.cluster
    util, mem = np.zeros(c.num_gpus), np.zeros(c.num_gpus)
    cpu, ram = np.zeros(c.num_nodes), np.zeros(c.num_nodes)
    busy = np.zeros(c.num_gpus, dtype=bool)
    for r in inst.running:
        for g in r.gpus:
            k = c.gpu_index[g]
            util[k] += r.gpu_util
            mem[k] += r.gpu_mem_gb
            busy[k] = True
            cpu[c.gpu_node[k]] += r.cpu_per_gpu
            ram[c.gpu_node[k]] += r.ram_gb_per_gpu
        for node, amount in r.extra.get("node_cpu", {}).items():
            cpu[c.node_index[node]] += amount
        for node, amount in r.extra.get("node_ram_gb", {}).items():
            ram[c.node_index[node]] += amount
    return util, mem, busy, cpu, ram


@pytest.mark.parametrize("inst", [
    generate_horus(seed=3, nodes=6, busy=0.6),
    generate_genie(seed=2, snapshot=True, nodes=5, gpus_per_node=4),
    generate_liquid(seed=1, nodes=8, gpus_per_node=2, busy=0.4),
], ids=["horus", "genie", "liquid"])
def test_running_usage_equals_the_loop(inst):
    util, mem, busy, cpu, ram = _usage_by_loop(inst)
    assert np.array_equal(inst.gpu_usage[0], util)
    assert np.array_equal(inst.gpu_usage[1], mem)
    assert np.array_equal(inst.gpu_busy, busy)
    assert np.array_equal(inst.node_usage[0], cpu)
    assert np.array_equal(inst.node_usage[1], ram)
    idle = tuple(tuple(int(g) for g in gpus if not busy[g]) for gpus in inst.cluster.gpus_of_node)
    assert inst.idle_by_server == idle


def test_node_extras_keep_the_loop_order():
    base = generate_horus(seed=1, nodes=3, busy=0.0)
    ids, nodes = base.cluster.gpu_ids, base.cluster.node_ids
    running = (RunningJob("a", (ids[0], ids[9]), cpu_per_gpu=0.1, ram_gb_per_gpu=0.3,
                          extra={"node_cpu": {nodes[0]: 0.2}}),
               RunningJob("b", (ids[1],), cpu_per_gpu=0.7, extra={"node_ram_gb": {nodes[1]: 1.1}}))
    inst = base.replace(running=running)
    _, _, _, cpu, ram = _usage_by_loop(inst)
    assert np.array_equal(inst.node_usage[0], cpu)
    assert np.array_equal(inst.node_usage[1], ram)


@pytest.mark.parametrize("gpus, field", [
    (("nope",), "running[1].gpus[0]"),
    (("G1", "G1"), "running[1].gpus"),
])
def test_bad_running_gpus_name_the_first_fault(gpus, field):
    base = generate_horus(seed=1, nodes=2, busy=0.0)
    ids = base.cluster.gpu_ids
    gpus = tuple(ids[1] if g == "G1" else g for g in gpus)
    inst = base.replace(running=(RunningJob("ok", (ids[0],)), RunningJob("bad", gpus)))
    with pytest.raises(InputError) as err:
        check_instance(inst)
    assert err.value.field == field


def test_a_gpu_two_running_jobs_share_is_no_fault():
    base = generate_horus(seed=1, nodes=2, busy=0.0)
    g = base.cluster.gpu_ids[0]
    check_instance(base.replace(running=(RunningJob("a", (g,)), RunningJob("b", (g,)))))


def test_liquid_room_forms_equal_the_level_by_level_rule():
    inst = generate_liquid(seed=5, nodes=10, gpus_per_node=4, busy=0.3)
    data = liquid_data(inst)
    rng = np.random.default_rng(0)
    loads = NodeLoads.empty(data)

    def by_levels(gpu, cpu, ram, need, c_cpu, c_ram):
        ok = ((gpu + need[None, :]) <= data.level_cap).all(axis=1)
        return ok & (cpu + c_cpu <= data.free_cpu + 1e-9) & (ram + c_ram <= data.free_ram + 1e-9)

    for c in rng.permutation(data.num_containers):
        c = int(c)
        need = np.where(np.arange(data.level_cap.shape[1]) <= data.c_level[c], data.c_gpus[c], 0)
        want = by_levels(loads.gpu, loads.cpu, loads.ram, need, data.c_cpu[c], data.c_ram[c])
        assert np.array_equal(loads.fits(c), want)
        assert np.array_equal(loads.fits_all(need, data.c_cpu[c], data.c_ram[c]), want)
        n = int(rng.integers(data.num_nodes))
        other = int(rng.integers(data.num_containers))
        trial = loads.copy()
        trial.add(other, n)
        assert loads.fits_after(c, n, [other]) == bool(trial.fits(c)[n])
        trial.remove(other, n)  # integer GPU state is back; free and room follow it
        for name in ("gpu", "count", "free", "room"):
            assert np.array_equal(getattr(trial, name), getattr(loads, name))
        ok = np.flatnonzero(loads.fits(c))
        if len(ok):
            loads.add(c, int(rng.choice(ok)))


@pytest.mark.parametrize("gpu_type", ["gtx1080", "rtx2080"])
def test_horus_paper_objective_in_one_call_equals_the_loop(gpu_type, monkeypatch):
    inst = generate_horus(seed=2, nodes=6, busy=0.5, gpu_type=gpu_type)
    job = inst.jobs[0]
    decisions = [solve(inst, m).decision for m in ("greedy", "fifo")] + [
        Decision(()), Decision((Placement(job.id, inst.cluster.gpu_ids[:job.num_gpus]),))]
    fast = [horus_problem.horus_breakdown(inst, d) for d in decisions]
    monkeypatch.setattr(horus_problem, "_PAIRS_AT_ONCE", -1)  # the per-placement loop
    assert [horus_problem.horus_breakdown(inst, d) for d in decisions] == fast
    assert fast[2].placement_cost == 0.0
    assert fast[2].unplaced_gpus == sum(j.num_gpus for j in inst.jobs)
