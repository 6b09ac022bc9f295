"""Liquid problem: distance tables on hand-built topologies, Eqs. 4-7, the implementation's
cost, parameters and the placed-whole rule."""

from __future__ import annotations

import pytest

from dlsched import Decision, Instance, Job, homogeneous_cluster, validate
from dlsched.decision import Placement, TaskPlacement
from dlsched.errors import InputError
from dlsched.jobs import Container, RunningJob
from dlsched.problems import get_problem
from dlsched.problems.liquid import liquid_breakdown, parse_liquid_params
from dlsched.problems.liquid_network import distance_matrix


def test_distance_tables_racks_and_domains():
    # 8 servers, racks {0,1} {2,3} {4,5} {6,7}, domains {0-3} {4-7}
    c = homogeneous_cluster(8, 1, nodes_per_rack=2, racks_per_domain=2)
    paper = distance_matrix(c, "paper")
    impl = distance_matrix(c, "implementation")
    # paper: 0 on a server, rack size 2, domain size 4, cluster size 8 across domains
    assert [paper[0, 0], paper[0, 1], paper[0, 2], paper[0, 4]] == [0, 2, 4, 8]
    assert [impl[0, 0], impl[0, 1], impl[0, 2], impl[0, 4]] == [0, 1, 4, 40]
    assert (paper == paper.T).all() and (impl == impl.T).all()


def test_distance_tables_uneven_racks_and_no_domain():
    # racks {0,1,2} and {3,4}, each its own domain: paper values are the group sizes
    c = homogeneous_cluster(5, 1, nodes_per_rack=3, racks_per_domain=1)
    paper = distance_matrix(c, "paper")
    assert [paper[0, 1], paper[3, 4], paper[0, 3]] == [3, 2, 5]
    assert distance_matrix(c, "implementation")[0, 3] == 40
    # no domain level: the cluster is one domain, cross-rack costs 4 (implementation)
    flat = homogeneous_cluster(4, 1, nodes_per_rack=2)
    assert distance_matrix(flat, "implementation")[0, 2] == 4
    assert distance_matrix(flat, "paper")[0, 2] == 4  # 4 servers under the root
    assert distance_matrix(flat, "paper")[0, 1] == 2


def one_job_instance(params, running=True) -> Instance:
    """4 servers × 2 GPUs, racks {0,1} {2,3} in one domain; one GPU of n2 busy;
    one job of 1 PS + 2 one-GPU workers with bandwidth 0.3."""
    cluster = homogeneous_cluster(4, 2, nodes_per_rack=2, racks_per_domain=2, gpu_mem_gb=16)
    job = Job(id="a", containers=(
        Container("ps", "ps", 0, 0.0, cpu=1, ram_gb=1, bandwidth=0.3),
        Container("w0", "worker", 1, 4.0, cpu=1, ram_gb=1, bandwidth=0.3),
        Container("w1", "worker", 1, 4.0, cpu=1, ram_gb=1, bandwidth=0.3)))
    run = (RunningJob("r", ("n2/g0",)),) if running else ()
    return Instance("liquid", cluster, (job,), params=params, running=run)


def place(where: dict[str, tuple[str, tuple[str, ...]]]) -> Decision:
    tasks = tuple(TaskPlacement(t, n, g) for t, (n, g) in where.items())
    return Decision.of([Placement("a", tuple(sorted(g for t in tasks for g in t.gpus)), tasks)])


SAME_RACK = {"ps": ("n0", ()), "w0": ("n0", ("n0/g0",)), "w1": ("n1", ("n1/g0",))}
OTHER_RACK = {"ps": ("n0", ()), "w0": ("n0", ("n0/g0",)), "w1": ("n2", ("n2/g1",))}


def test_paper_score_same_rack():
    inst = one_job_instance({"lambda": 0.5})
    d = place(SAME_RACK)
    assert validate(inst, d).ok
    # Cost = (1/(1*2)) * (0.3*0 + 0.3*2) = 0.3  (rack of 2 servers)
    # Fitness: n0 -(1+0)/2 = -0.5, n1 -(1+0)/2 = -0.5
    # Score = 0.5*0.3 + 0.5*(-1.0) = -0.35
    assert get_problem("liquid").evaluate(inst, d) == pytest.approx(-0.35)
    b = liquid_breakdown(inst, d)
    assert b.network == pytest.approx(0.15) and b.network_distance == pytest.approx(0.6)


def test_paper_score_counts_running_gpus():
    inst = one_job_instance({"lambda": 0.5})
    d = place(OTHER_RACK)
    assert validate(inst, d).ok
    # Cost = 0.5 * (0.3*4) = 0.6  (other rack, same domain of 4 servers)
    # Fitness: n0 -(1+0)/2 = -0.5, n2 -(1+1)/2 = -1.0 (one GPU busy) -> -1.5
    # Score = 0.5*0.6 + 0.5*(-1.5) = -0.45
    b = liquid_breakdown(inst, d)
    assert b.total == pytest.approx(-0.45)
    # parts: requested GPUs -0.5*(1/2 + 1/2) = -0.5; used GPUs -0.5*(1/2) = -0.25 on n2
    assert b.per_container == pytest.approx(-0.5) and b.per_job_node == pytest.approx(-0.25)


def test_implementation_cost():
    inst = one_job_instance({"objective": "implementation", "distance": "implementation"})
    b = liquid_breakdown(inst, place(OTHER_RACK))
    # network: 0.3*0 + 0.3*4 = 1.2 (cross-rack in a domain = 4)
    # load: PS n0 +(1+0+0)/2 = 0.5; w0 n0 -(1+0+1)/2 = -1; w1 n2 -(1+1+1)/2 = -1.5 -> -2
    # job-server pairs: (a,n0), (a,n2) = 2; both divided by 3 tasks
    assert b.network == pytest.approx(1.2)
    assert b.per_container == pytest.approx(-2 / 3)
    assert b.per_job_node == pytest.approx(2 / 3)
    assert b.total == pytest.approx(1.2)


def test_lambda_one_is_pure_network_cost():
    inst = one_job_instance({"lambda": 1.0})
    # Score = 1.0 * (1/2) * (0.3*2) = 0.3; fitness weight 0
    assert get_problem("liquid").evaluate(inst, place(SAME_RACK)) == pytest.approx(0.3)


def test_busy_gpu_and_unplaced_job_are_violations():
    inst = one_job_instance({})
    busy = {"ps": ("n0", ()), "w0": ("n2", ("n2/g0",)), "w1": ("n2", ("n2/g1",))}
    assert "exclusive" in validate(inst, place(busy)).kinds
    assert "unplaced" in validate(inst, Decision()).kinds


@pytest.mark.parametrize("params,field", [({"lambda": 1.5}, "params.lambda"),
                                          ({"distance": "km"}, "params.distance"),
                                          ({"objective": "x"}, "params.objective"),
                                          ({"lam": 0.5}, "params.lam")])
def test_bad_params_name_the_field(params, field):
    with pytest.raises(InputError) as err:
        parse_liquid_params(params)
    assert err.value.field == field


def test_job_without_containers_is_rejected():
    from dlsched.instance_io import check_instance
    inst = one_job_instance({}).replace(jobs=(Job(id="empty"),))
    with pytest.raises(InputError) as err:
        check_instance(inst)
    assert err.value.field == "jobs[0].containers"
