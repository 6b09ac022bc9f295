"""The exact Liquid model against brute-force enumeration, on every backend."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hints import hint_is_a_solution

from dlsched import Instance, Job, homogeneous_cluster, solve, validate
from dlsched.instance_io import check_instance
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.jobs import Container, RunningJob
from dlsched.problems import get_problem
from dlsched.problems.liquid import decision_from_assignment, liquid_data
from dlsched.result import Status
from dlsched.topology import Cluster
from dlsched.validate import validate_decision

SHAPES = ((1, 2), (1, 1), (2, 1))  # (parameter servers, workers)


def tiny_instance(seed: int) -> Instance:
    """3 servers, two jobs (<= 5 containers), mixed GPU memory, tight CPU on some server,
    sometimes a running job; both objectives and distance tables, several rack layouts."""
    rng = np.random.default_rng(500 + seed)
    per_node = int(rng.integers(1, 3))
    layout = [(1, 1), (2, 1), (3, None), (None, None)][seed % 4]
    base = homogeneous_cluster(3, per_node, gpu_mem_gb=16.0, cpu=8.0, ram_gb=64.0,
                               nodes_per_rack=layout[0], racks_per_domain=layout[1])
    nodes = []
    for i, node in enumerate(base.nodes):
        gpus = tuple(dataclasses.replace(g, mem_gb=float(rng.choice([8.0, 16.0])))
                     for g in node.gpus)
        cpu = float(rng.choice([3.0, 8.0])) if i == 0 else node.cpu
        nodes.append(dataclasses.replace(node, gpus=gpus, cpu=cpu))
    cluster = Cluster(nodes)
    jobs = []
    shapes = [SHAPES[int(k)] for k in rng.choice(len(SHAPES), size=2)]
    if sum(p + w for p, w in shapes) > 5:
        shapes[1] = (1, 1)
    for j, (n_ps, n_w) in enumerate(shapes):
        bw = round(float(rng.uniform(0.05, 1.0)), 2)
        mem = float(rng.choice([6.0, 12.0]))
        cont = [Container(f"ps{k}", "ps", 0, 0.0, cpu=1.0, ram_gb=4.0, bandwidth=bw)
                for k in range(n_ps)]
        cont += [Container(f"w{k}", "worker", 1, mem, cpu=2.0, ram_gb=8.0, bandwidth=bw)
                 for k in range(n_w)]
        jobs.append(Job(id=f"j{j}", containers=tuple(cont)))
    running = ()
    if rng.random() < 0.5:
        running = (RunningJob("r", (cluster.gpu_ids[int(rng.integers(cluster.num_gpus))],),
                              cpu_per_gpu=1.0),)
    params = {"lambda": float(rng.choice([0.3, 0.7])),
              "distance": ["paper", "implementation"][seed % 2],
              "objective": ["paper", "implementation"][(seed // 2) % 2]}
    return Instance("liquid", cluster, tuple(jobs), params=params, running=running)


def brute_force(instance: Instance, ignore: frozenset[str] = frozenset()) -> float | None:
    """Minimum evaluator objective over every container → server map (None: none fits).
    The validator checks the instance once, then each map by its decision rules alone;
    a map breaking only the ``ignore`` kinds of rule counts as fitting (to show they bind)."""
    check_instance(instance)  # what validate() checks first, before the decision
    data = liquid_data(instance)
    problem = get_problem("liquid")
    best = None
    for combo in itertools.product(range(data.num_nodes), repeat=data.num_containers):
        try:
            decision = decision_from_assignment(data, np.array(combo))
        except ValueError:  # a server lacks GPUs for its containers
            continue
        if validate_decision(instance, decision).kinds <= ignore:
            value = problem.evaluate(instance, decision)
            best = value if best is None else min(best, value)
    return best


# 13 seeds (0-23 before): 0-11 run the four rack layouts and the distance x objective
# pairs three times, with infeasible batches (3 6 8), running jobs (0 1 3 8 9) and one of
# four containers (11); 13 is the one seed of 0-23 where server CPU binds (asserted below);
# the others added none of these
SEEDS = (*range(12), 13)


@pytest.fixture(scope="module")
def optima() -> dict[int, float | None]:
    """Brute-force optimum per seed, computed once for all backends."""
    return {seed: brute_force(tiny_instance(seed)) for seed in SEEDS}


def test_instances_cover_infeasible_and_running_cases(optima):
    assert any(v is None for v in optima.values())
    assert sum(v is not None for v in optima.values()) >= 9
    assert any(tiny_instance(s).running for s in SEEDS)
    # the CPU rule binds: without it seed 13's best map is cheaper
    assert brute_force(tiny_instance(13), frozenset({"node_cpu"})) < optima[13] - 1e-9


def test_exact_matches_brute_force(backend, optima):
    for seed in SEEDS:
        inst = tiny_instance(seed)
        result = solve(inst, "exact", backend=backend, time_limit=30)
        if optima[seed] is None:
            assert result.status is Status.INFEASIBLE, seed
            assert result.decision is None
            continue
        assert result.status is Status.OPTIMAL, (seed, result.message)
        assert validate(inst, result.decision).ok
        assert result.objective == pytest.approx(optima[seed], abs=1e-6), seed
        assert result.bound <= result.objective + 1e-6


def test_symmetric_batch_is_proven(backend):
    """Identical servers and identical workers: symmetry breaking keeps the proof short."""
    inst = generate_liquid(seed=3, nodes=5)
    result = solve(inst, "exact", backend=backend, time_limit=60)
    assert result.status is Status.OPTIMAL
    # the batch fills the 10 GPUs with jobs of <= 2 workers, each fitting one server:
    # no network cost, fitness = -(1 - 0.5) * 10 GPUs / 2 per server = -2.5
    if max(len(j.containers) for j in inst.jobs) <= 3:
        assert result.objective == pytest.approx(-2.5)


def test_export_writes_mps_and_lp(tmp_path):
    from dlsched.registry import get_method

    spec = get_method("liquid", "exact")
    inst = tiny_instance(1)
    for fmt in ("mps", "lp"):
        spec.export(inst, tmp_path / f"m.{fmt}", fmt)
        assert (tmp_path / f"m.{fmt}").stat().st_size > 0


@pytest.mark.parametrize("seed", range(3))
def test_warm_start_survives_the_symmetry_family(seed):
    # gga's placements broke family 6's order on every batch tried (CP-SAT found the hint
    # infeasible and dropped it); the relabelled placement is a solution of the model and
    # the evaluator prices it exactly as the original (batches of 5 servers: gga's run on
    # 10 cost twice the CPU, and the relabelling still moves most containers)
    from dlsched.formulations import liquid as exact_liquid
    from dlsched.problems.liquid import assignment_from_decision

    inst = generate_liquid(seed=seed, nodes=5)
    md = exact_liquid.model_data(inst)
    start = solve(inst, "gga").decision
    original = np.asarray(assignment_from_decision(md.data, start), dtype=np.int64)
    relabelled = exact_liquid.symmetric_assignment(md, original)
    assert (relabelled != original).any()  # the symmetry family is in play
    problem = get_problem("liquid")
    again = decision_from_assignment(md.data, relabelled)
    assert validate(inst, again).ok
    assert problem.evaluate(inst, again) == pytest.approx(problem.evaluate(inst, start),
                                                          rel=1e-12, abs=1e-9)
    lm = exact_liquid.build_model(md, "cpsat", None, symmetry=True)
    lm.model.hint(exact_liquid._hint_values(md, lm, start))
    assert hint_is_a_solution(lm.model.cp)
