"""The independent validator rejects each kind of broken decision."""

from __future__ import annotations

import pytest

from dlsched import Container, Decision, Job, Placement, TaskPlacement, evaluate, validate
from dlsched.validate import validate_decision
from factories import horus_instance, running


@pytest.fixture
def inst():
    """One server, two 8 GB GPUs, 10 CPUs; g0 holds a 5 GB job using 2 CPUs.

    a: 1 GPU, 4 GB, 2 CPUs; b: 2 GPUs, 3.5 GB and 3 CPUs each.
    """
    return horus_instance([("a", 1, 50.0, 4.0, 2.0, 0.0), ("b", 2, 20.0, 3.5, 3.0, 0.0)],
                          [running("r", ["n0/g0"], 30.0, 5.0, 2.0)], cpu=10.0)


def test_a_good_decision_passes(inst):
    good = Decision.of([Placement("a", ("n0/g1",))])
    assert validate(inst, good).ok
    assert evaluate(inst, good) > 0


@pytest.mark.parametrize("placements,kind", [
    ([Placement("a", ("n0/g0",))], "gpu_memory"),  # 5 + 4 > 8 GB on g0
    # g1: 4 + 3.5 = 7.5, g0: 5 + 3.5 = 8.5 > 8
    ([Placement("a", ("n0/g1",)), Placement("b", ("n0/g0", "n0/g1"))], "gpu_memory"),
    ([Placement("b", ("n0/g1",))], "demand"),  # b needs 2 GPUs
    ([Placement("b", ("n0/g1", "n0/g1"))], "demand"),  # the same GPU twice
    ([Placement("a", ("n9/g9",))], "unknown_gpu"),
    ([Placement("zz", ("n0/g1",))], "unknown_job"),
    ([Placement("a", ("n0/g1",)), Placement("a", ("n0/g1",))], "duplicate"),
])
def test_each_kind_of_broken_decision_is_rejected(inst, placements, kind):
    report = validate(inst, Decision.of(placements))
    assert not report.ok
    assert kind in report.kinds


def test_server_cpu_over_capacity(inst):
    # r uses 2 CPUs; a on g1 takes 2, b would take 2 * 3 = 6 more: 10 of 10 is fine ...
    tight = inst.replace(cluster=horus_instance([], cpu=9.0).cluster)
    report = validate(tight, Decision.of([Placement("a", ("n0/g1",)),
                                          Placement("b", ("n0/g0", "n0/g1"))]))
    # ... but with 9 CPUs: 2 + 2 + 6 = 10 > 9
    assert "node_cpu" in report.kinds


def test_evaluate_refuses_an_infeasible_decision(inst):
    with pytest.raises(ValueError, match="infeasible"):
        evaluate(inst, Decision.of([Placement("a", ("n0/g0",))]))


def test_container_placements_are_checked():
    base = horus_instance([])
    job = Job(id="L", containers=(Container("ps0", "ps", 0, 0.0, 1.0, 1.0),
                                  Container("w0", "worker", 1, 2.0, 1.0, 1.0)))
    # the generic container rules, on an instance no problem accepts (Horus jobs have no
    # containers): validate_decision checks the decision alone, not the instance
    inst = base.replace(jobs=(job,), problem="horus")
    ok = Placement("L", ("n0/g0",), (TaskPlacement("ps0", "n0"),
                                     TaskPlacement("w0", "n0", ("n0/g0",))))
    assert validate_decision(inst, Decision.of([ok])).kinds == set()
    missing = Placement("L", ("n0/g0",), (TaskPlacement("w0", "n0", ("n0/g0",)),))
    assert "demand" in validate_decision(inst, Decision.of([missing])).kinds
    wrong_node = Placement("L", ("n0/g0",), (TaskPlacement("ps0", "n7"),
                                             TaskPlacement("w0", "n0", ("n0/g0",))))
    assert "unknown_node" in validate_decision(inst, Decision.of([wrong_node])).kinds
    too_many = Placement("L", ("n0/g0", "n0/g1"), (
        TaskPlacement("ps0", "n0"), TaskPlacement("w0", "n0", ("n0/g0", "n0/g1"))))
    assert "demand" in validate_decision(inst, Decision.of([too_many])).kinds
