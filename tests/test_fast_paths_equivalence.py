"""The vectorized/cached hot paths of the greedy methods give the decisions of the plain
versions they replaced (reference copies of those kept here), on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.heuristics import horus as horus_h
from dlsched.heuristics.genie import IdleGpus, best, tetris
from dlsched.heuristics.liquid import NodeLoads
from dlsched.heuristics.liquid_jobwise import _fits, _levels_fit
from dlsched.heuristics.sched2 import _servers, packing, select
from dlsched.instance import Instance
from dlsched.instances.genie_gen import generate_genie
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.jobs import RunningJob
from dlsched.method_support import decision_from_indices, free_gpus_by_server
from dlsched.problems.genie import genie_table
from dlsched.problems.horus import parse_horus_params, share_costs
from dlsched.problems.liquid import liquid_data
from dlsched.problems.sched2 import locality_slowdown, parse_sched2_params
from dlsched.state import ClusterState
from dlsched.topology import homogeneous_cluster


# ----------------------------------------------------------------------------- references
def _ref_take(idle: IdleGpus, shape) -> list[int]:
    g = shape.gpus_per_node
    eligible = sorted((len(f), n) for n, f in enumerate(idle.free) if len(f) >= g)
    out = []
    for _, n in eligible[: shape.nodes]:
        out.extend(idle.free[n][:g])
        idle._taking(n, len(idle.free[n][:g]))
        del idle.free[n][:g]
    return out


def _ref_tetris(instance: Instance, by: str):
    table = genie_table(instance)
    idle = IdleGpus(instance)
    key = (lambda o: o.rate) if by == "pr" else (lambda o: o.cer)
    remaining = sorted(range(len(instance.jobs)),
                       key=lambda j: (instance.jobs[j].submit_time, j))
    placed = []
    while remaining and idle.total() > 0:
        pick = None
        for j in remaining:
            opt = best([o for o in table.options[j] if idle.fits(o.shape)], key)
            if opt is not None and (pick is None or opt.shape.gpus > pick[1].shape.gpus):
                pick = (j, opt)
        if pick is None:
            break
        remaining.remove(pick[0])
        placed.append((pick[0], _ref_take(idle, pick[1].shape)))
    placed.sort()
    return decision_from_indices(instance, placed)


def _ref_packing(free: list[list[int]], demand: int) -> list[int] | None:
    counts = [len(f) for f in free]
    if sum(counts) < demand:
        return None
    chosen: list[int] = []
    need = demand
    taken = [0] * len(free)
    while need > 0:
        left = [c - t for c, t in zip(counts, taken, strict=True)]
        fits = [s for s, n in enumerate(left) if n >= need]
        if fits:
            s = min(fits, key=lambda s: (left[s], s))
            chosen += free[s][taken[s]:taken[s] + need]
            taken[s] += need
            need = 0
        else:
            s = max(range(len(free)), key=lambda s: (left[s], -s))
            chosen += free[s][taken[s]:]
            need -= left[s]
            taken[s] = counts[s]
    return chosen


def _ref_saf(instance: Instance) -> list[tuple[str, list[int]]]:
    params = parse_sched2_params(instance.params)
    node_of = instance.cluster.gpu_node
    free = free_gpus_by_server(instance)
    remaining = dict(enumerate(instance.jobs))
    placed = []
    while remaining:
        best_key, best_pick = None, None
        for i, job in remaining.items():
            gpus = _ref_packing(free, job.num_gpus)
            if gpus is None:
                continue
            counts = np.unique(node_of[gpus], return_counts=True)[1]
            actual = job.duration * locality_slowdown(params.sensitivity(job.model), counts)
            key = (actual, job.submit_time, i)
            if best_key is None or key < best_key:
                best_key, best_pick = key, (i, gpus)
        if best_pick is None:
            break
        i, gpus = best_pick
        for g in gpus:
            free[node_of[g]].remove(g)
        placed.append((remaining.pop(i).id, gpus))
    return placed


def _ref_cheapest(node_of, room, cost_row, candidates, want) -> list[int] | None:
    room = room.copy()
    chosen: list[int] = []
    for g in candidates[np.lexsort((candidates, cost_row[candidates]))]:
        n = node_of[g]
        if room[n] >= 1:
            chosen.append(int(g))
            room[n] -= 1
            if len(chosen) == want:
                return chosen
    return None


# ----------------------------------------------------------------------------- GENIE
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("by", ["pr", "cer"])
def test_tetris_matches_the_plain_scan(seed, by):
    inst = generate_genie(seed=seed, snapshot=True, nodes=6 + 4 * seed, gpus_per_node=4,
                          waiting=8 + 6 * seed)
    assert tetris(inst, by=by) == _ref_tetris(inst, by)


def test_genie_table_option_matches_a_linear_scan():
    inst = generate_genie(seed=3, snapshot=True, nodes=8, gpus_per_node=4)
    table = genie_table(inst)
    assert genie_table(inst) is table  # one table per instance
    for j, row in enumerate(table.options):
        for opt in row:
            assert table.option(j, opt.shape) == next(o for o in row if o.shape == opt.shape)
        assert table.option(j, None) is None


# ----------------------------------------------------------------------------- SCHED²
def test_packing_matches_the_list_version():
    rng = np.random.default_rng(0)
    for _ in range(300):
        servers = int(rng.integers(1, 12))
        free, g = [], 0
        for _s in range(servers):
            k = int(rng.integers(0, 9))
            free.append(list(range(g, g + k)))
            g += 8
        demand = int(rng.integers(0, 40))
        assert packing(free, demand) == _ref_packing(free, demand)


def _sched2_snapshot(seed: int, nodes: int, busy: int, jobs: int) -> Instance:
    w = generate_sched2(seed=seed, jobs=jobs)
    cluster = homogeneous_cluster(nodes, 8)
    ids = cluster.gpu_ids
    rng = np.random.default_rng(seed)
    running = tuple(RunningJob(job=f"r{i}", gpus=tuple(ids[8 * i:8 * i + int(rng.integers(1, 9))]),
                               remaining_s=600.0) for i in range(busy))
    return Instance(problem="sched2", cluster=cluster,
                    jobs=tuple(j.replace(submit_time=0.0) for j in w.jobs), params=w.params,
                    running=running, time=0.0, name="s")


@pytest.mark.parametrize("seed", range(4))
def test_saf_matches_the_uncached_loop(seed):
    inst = _sched2_snapshot(seed, 4 + 3 * seed, 2 + 2 * seed, 12 + 6 * seed)
    decision, _ = select(inst, "saf")
    ids = inst.cluster.gpu_ids
    assert [(p.job, p.gpus) for p in decision.placements] == [
        (j, tuple(ids[g] for g in gpus)) for j, gpus in _ref_saf(inst)]


def test_servers_counts_match_unique():
    node_of = np.repeat(np.arange(10), 4)
    rng = np.random.default_rng(1)
    for _ in range(50):
        gpus = list(rng.choice(40, size=int(rng.integers(0, 40)), replace=False))
        assert list(_servers(gpus, node_of)) == list(
            np.unique(node_of[gpus], return_counts=True)[1])


# ----------------------------------------------------------------------------- Horus
def test_cheapest_gpus_matches_the_full_sort():
    inst = generate_horus(seed=0, nodes=16, gpus_per_node=8)
    state = ClusterState.of(inst)
    node_of = inst.cluster.gpu_node
    rng = np.random.default_rng(2)
    job = inst.jobs[0]
    for _ in range(300):
        want = int(rng.integers(1, 9))
        job = job.replace(num_gpus=want)
        candidates = np.flatnonzero(rng.random(128) < rng.uniform(0.2, 1.0))
        cost = rng.integers(0, 6, 128).astype(float)  # many ties
        if rng.random() < 0.2:
            cost[rng.integers(0, 128, 5)] = np.inf
        room = rng.integers(0, 3, 16)  # full servers force the walk past the sorted head
        got = horus_h._cheapest_gpus(state, job, cost, candidates, room)
        assert got == _ref_cheapest(node_of, room, cost, candidates, want)


def test_share_costs_on_a_subset_are_the_same_numbers():
    inst = generate_horus(seed=1, nodes=8, gpus_per_node=8, busy=0.7)
    p = parse_horus_params(inst.params)
    c = inst.cluster
    util, mem = inst.gpu_usage
    ju = np.array([j.gpu_util for j in inst.jobs])
    jm = np.array([j.gpu_mem_gb for j in inst.jobs])
    full = share_costs(p, c.gpu_type, c.gpu_mem_gb, util, mem, ju, jm)
    cols = np.array([5, 0, 17, 63, 40])
    part = share_costs(p, c.gpu_type, c.gpu_mem_gb, util, mem, ju, jm, gpus=cols)
    assert np.array_equal(part, full[:, cols])


# ----------------------------------------------------------------------------- Liquid
def test_liquid_fits_matches_node_loads():
    inst = generate_liquid(seed=4, nodes=12, gpus_per_node=4, busy=0.3)
    data = liquid_data(inst)
    rng = np.random.default_rng(3)
    loads = NodeLoads.empty(data)
    for c in rng.permutation(data.num_containers):
        assert np.array_equal(_fits(data, loads, int(c)), loads.fits(int(c)))
        ok = np.flatnonzero(loads.fits(int(c)))
        if len(ok):
            loads.add(int(c), int(rng.choice(ok)))
    need = np.array([3, 2, 1, 0][: data.level_cap.shape[1]])
    levels = data.level_cap.shape[1]
    assert np.array_equal(_levels_fit(loads.gpu, need, data.level_cap, levels),
                          ((loads.gpu + need[None, :levels]) <= data.level_cap).all(axis=1))


def _ref_horus_round(instance: Instance, method: str):
    """OBP / greedy (β unset) as a plain loop over every job, each tried on its own: the
    code before ``pack_in_order`` (server room, capacity check, the full cost sort)."""
    state = ClusterState.of(instance)
    c = instance.cluster
    p = parse_horus_params(instance.params)
    per_node = int(c.node_gpu_count.max())
    order = list(range(len(instance.jobs)))
    if method == "greedy":
        waits = [max(0.0, instance.time - j.submit_time) for j in instance.jobs]
        order.sort(key=lambda j: -waits[j])  # stable: ties in queue order
    placed = []
    for j in order:
        job = instance.jobs[j]
        fits = state.gpu_fits(job)
        room = state.node_room(job)
        if method == "obp":
            cost = -state.free_mem
            candidates = np.flatnonzero(fits)
        else:
            node_ok = np.zeros(c.num_nodes, dtype=bool)
            node_ok[c.gpu_node[fits]] = True
            node_ok &= room >= 1
            if node_ok.sum() < -(-job.num_gpus // per_node):
                continue
            candidates = np.flatnonzero(fits & node_ok[c.gpu_node])
            cost = np.full(c.num_gpus, np.nan)
            cost[candidates] = share_costs(
                p, c.gpu_type, c.gpu_mem_gb, state.util, c.gpu_mem_gb - state.free_mem,
                np.array([job.gpu_util]), np.array([job.gpu_mem_gb]), gpus=candidates)[0]
        chosen = _ref_cheapest(c.gpu_node, room, cost, candidates, job.num_gpus)
        if chosen is not None:
            state.place(job, chosen)
            placed.append((j, chosen))
    return decision_from_indices(instance, placed)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["obp", "greedy"])
def test_horus_rounds_match_the_plain_loop(seed, method):
    """Queues mixing jobs with and without CPU/RAM shares, busy clusters, some jobs too
    large: ``pack_in_order`` tries only the jobs that fit and gives the plain loop's
    decision."""
    rng = np.random.default_rng(seed)
    # little CPU per server: the room of the jobs with shares binds
    inst = generate_horus(seed=seed, nodes=4 + seed, gpus_per_node=4, busy=0.6, beta=30,
                          cpu=14.0)
    jobs = []
    for i, job in enumerate(inst.jobs):
        plain = rng.random() < 0.6
        jobs.append(job.replace(
            num_gpus=int(rng.choice([1, 1, 2, 3, 4, 8, 64])),
            cpu_per_gpu=0.0 if plain else job.cpu_per_gpu,
            ram_gb_per_gpu=0.0 if plain else job.ram_gb_per_gpu,
            submit_time=float(rng.integers(0, 3)) if i % 3 else job.submit_time))
    params = {k: v for k, v in inst.params.items() if k != "beta"}  # one buffer
    inst = inst.replace(jobs=tuple(jobs), params=params)
    got = getattr(horus_h, method)(inst)
    assert got == _ref_horus_round(inst, method)
    assert got.placements  # something was placed
