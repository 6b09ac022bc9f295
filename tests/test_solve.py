"""solve(): statuses are honest, answers are checked, gaps use one formula."""

from __future__ import annotations

import pytest

from dlsched import (
    Decision,
    InputError,
    Instance,
    Job,
    Placement,
    RunningJob,
    check_instance,
    homogeneous_cluster,
    registry,
    save_instance,
    solve,
    validate,
)
from dlsched.errors import MethodError
from dlsched.registry import MethodSpec
from dlsched.result import MethodOutput, Status, relative_gap
from factories import horus_instance


def test_relative_gap_formula():
    assert relative_gap(10.0, 8.0) == pytest.approx(0.2)
    assert relative_gap(-8.0, -10.0) == pytest.approx(0.2)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(None, 1.0) is None


@pytest.fixture
def register(monkeypatch):
    """Register a throw-away Horus method for one test only."""
    def add(name, output):
        spec = MethodSpec("horus", name, "heuristic", lambda inst, **kw: output(inst))
        monkeypatch.setitem(registry._METHODS, ("horus", name), spec)

    return add
def test_unproven_optimal_claim_is_downgraded(register):
    inst = horus_instance([("a", 1, 10.0, 1.0)])
    register("claims-optimal", lambda inst: MethodOutput(
        Decision.of([Placement("a", ("n0/g0",))]), Status.OPTIMAL, bound=0.0))
    result = solve(inst, "claims-optimal")
    assert result.status is Status.FEASIBLE
    assert result.gap == pytest.approx(1.0)
    assert "reported as feasible" in result.message
def test_infeasible_decision_is_an_error_not_an_answer(register):
    inst = horus_instance([("a", 1, 10.0, 100.0)])
    register("cheats", lambda inst: MethodOutput(
        Decision.of([Placement("a", ("n0/g0",))]), Status.FEASIBLE))
    with pytest.raises(MethodError, match="gpu_memory"):
        solve(inst, "cheats")
def test_time_limit_must_be_positive():
    from dlsched import InputError

    with pytest.raises(InputError, match="time_limit"):
        solve(horus_instance([("a", 1, 10.0, 1.0)]), "exact", time_limit=0)
def test_heuristic_rejects_a_backend():
    from dlsched import InputError

    with pytest.raises(InputError, match="no solver backend"):
        solve(horus_instance([("a", 1, 10.0, 1.0)]), "greedy", backend="cbc")
def test_time_limited_exact_run_never_claims_optimality_without_proof(backend):
    from dlsched.instances.horus_gen import generate_horus

    inst = generate_horus(seed=3, nodes=64, gpus_per_node=8, beta=15, busy=0.97,
                          cost_model="colocation")
    # 0.1 s (0.5 before: up to 0.5 CPU-s per backend on an idle machine for the same rule)
    result = solve(inst, "exact", backend=backend, time_limit=0.1)
    if result.status is Status.OPTIMAL:
        assert result.gap is not None and result.gap <= 1e-6
    else:
        assert result.status in (Status.FEASIBLE, Status.NO_SOLUTION)


@pytest.mark.parametrize(("instance", "method", "field", "words"), [
    (Instance("hours", homogeneous_cluster(2, 2), (Job(id="a", num_gpus=1, duration=10.0),)),
     "exact", "problem", "use one of: genie, horus, inference, liquid, sched2"),
    (Instance("horus", homogeneous_cluster(2, 2), (Job(id="a", num_gpus=1, duration=10.0),)),
     "exact", "jobs[0].gpu_util", "needs gpu_util on every job"),
    (Instance("sched2", homogeneous_cluster(2, 2), (Job(id="a", num_gpus=1, duration=10.0),),
              running=(RunningJob(job="r", gpus=("nX/g9",)),)),
     "fifo", "running[0].gpus[0]", "unknown GPU id 'nX/g9'"),
])
def test_an_instance_built_in_python_is_checked_like_a_file(tmp_path, instance, method,
                                                             field, words):
    for call in (lambda: solve(instance, method), lambda: check_instance(instance),
                 lambda: validate(instance, Decision()),
                 lambda: save_instance(instance, tmp_path / "x.json")):
        with pytest.raises(InputError) as err:
            call()
        assert err.value.field == field and words in str(err.value)
    assert not (tmp_path / "x.json").exists()  # nothing written that load_instance refuses


def test_validate_names_a_missing_decision_instead_of_crashing():
    instance = Instance("horus", homogeneous_cluster(1, 2),
                        (Job(id="a", num_gpus=1, duration=10.0, gpu_util=0.5, gpu_mem_gb=1.0),))
    with pytest.raises(InputError) as err:
        validate(instance, None)  # type: ignore[arg-type]  # a result without a decision
    assert err.value.field == "decision" and "result.status" in str(err.value)
    assert validate(instance, Decision()).ok
