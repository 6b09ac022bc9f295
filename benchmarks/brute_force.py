"""Brute-force oracles and the tiny instances they reach, for the exact Horus and Liquid
models: every decision enumerated, kept when the independent validator accepts it,
scored by the evaluator; nothing shared with a model.

The tests check every backend against them on a few chosen seeds
(tests/test_horus_exact.py, tests/test_horus_patterns.py, tests/test_liquid_exact.py);
``python -m dlsched.benchmarks.exact_crosschecks --sweep`` runs the same checks on the
wider seed ranges the suite once ran.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.instance import Instance
from dlsched.instance_io import check_instance
from dlsched.instances.horus_gen import generate_horus
from dlsched.jobs import Container, Job, RunningJob
from dlsched.problems import get_problem
from dlsched.problems.liquid import decision_from_assignment, liquid_data
from dlsched.topology import Cluster, homogeneous_cluster
from dlsched.validate import validate, validate_decision

SHAPES = ((1, 2), (1, 1), (2, 1))
"""Liquid jobs' (parameter servers, workers)."""


def horus_tiny(seed: int, cost_model: str) -> Instance:
    """2-4 GPUs, 2-4 jobs, tight CPU so that every constraint family can bind.

    Colocation instances use one server with more jobs than GPUs, so that the optimum
    often stacks two new jobs on a GPU, where the two cost models differ.
    """
    if cost_model == "colocation":
        rng = np.random.default_rng(2000 + seed)
        return generate_horus(seed=seed, nodes=1, gpus_per_node=2, beta=int(rng.integers(3, 5)),
                              busy=float(rng.choice([0.0, 0.5])), cpu=64.0, ram_gb=64.0,
                              cost_model=cost_model)
    rng = np.random.default_rng(1000 + seed)
    nodes = int(rng.integers(1, 3))
    return generate_horus(
        seed=seed, nodes=nodes, gpus_per_node=2, beta=int(rng.integers(2, 5)) if nodes == 1
        else int(rng.integers(2, 4)), busy=float(rng.choice([0.0, 0.5, 1.0])),
        p_heavy=0.6, cpu=float(rng.choice([6.0, 8.0, 64.0])), ram_gb=64.0,
        cost_model=cost_model)


def horus_brute_force(instance: Instance,
                      families: bool = True) -> tuple[float, frozenset[str]]:
    """The minimum evaluator objective over every feasible decision (each job: wait or
    any set of exactly its number of GPUs), and the constraint families that bind: a
    family (a validator violation kind) binds when some decision that breaks its rules
    alone scores better than the optimum. Without ``families`` the second item is empty
    (scoring the rule breakers doubles the cost).

    The instance is checked once, by the validator, then each decision by its decision
    rules alone (``validate_decision``): checking the instance again at each of the
    ~10^3 decisions was 3/4 of the cost.
    """
    if not validate(instance, Decision(())).ok:
        raise ValueError("the instance has no feasible decision at all (not even waiting)")
    gpus = instance.cluster.gpu_ids
    options = [[None, *itertools.combinations(gpus, job.num_gpus)] for job in instance.jobs]
    problem = get_problem(instance.problem)
    best = float("inf")
    relaxed: dict[str, float] = {}  # per family: the best decision breaking it alone
    for combo in itertools.product(*options):
        decision = Decision.of(Placement(job.id, choice)
                               for job, choice in zip(instance.jobs, combo, strict=True)
                               if choice is not None)
        kinds = validate_decision(instance, decision).kinds
        if not kinds:
            best = min(best, problem.evaluate(instance, decision))
        elif families and len(kinds) == 1:
            (kind,) = kinds
            relaxed[kind] = min(relaxed.get(kind, float("inf")),
                                problem.evaluate(instance, decision))
    return best, frozenset(k for k, v in relaxed.items() if v < best - 1e-9)


def liquid_tiny(seed: int) -> Instance:
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


def liquid_brute_force(instance: Instance,
                       ignore: frozenset[str] = frozenset()) -> float | None:
    """The minimum evaluator objective over every container → server map (None: none
    fits). The validator checks the instance once, then each map by its decision rules
    alone; a map breaking only the ``ignore`` kinds of rule counts as fitting (to show
    that they bind)."""
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
