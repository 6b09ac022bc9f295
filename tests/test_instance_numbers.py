"""Numbers of jobs and running jobs built in Python: refused as the file schema refuses
them, with the field named (dlsched.instance_numbers, run by check_instance; a running
job checks its numbers once, when built, and check_instance reads the verdicts)."""

from __future__ import annotations

import math
import pickle
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.instance_io import check_instance
from dlsched.instances.genie_gen import generate_genie, generate_genie_workload
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.jobs import RunningJob
from dlsched.simulate import Policy, simulate
from dlsched.solve import solve


@pytest.fixture(scope="module")
def snapshot():
    inst = generate_horus(seed=0, nodes=4)
    assert inst.jobs and inst.running
    return inst


def _with_job(inst, **changes):
    return inst.replace(jobs=(replace(inst.jobs[0], **changes), *inst.jobs[1:]))


def _with_running(inst, **changes):
    return inst.replace(running=(replace(inst.running[0], **changes), *inst.running[1:]))


@pytest.mark.parametrize(("field", "value"), [
    ("gpu_util", "x"), ("gpu_util", math.nan), ("gpu_util", -1.0), ("gpu_mem_gb", math.inf),
    ("num_gpus", 1.5), ("num_gpus", 0), ("num_gpus", True), ("duration", 0.0),
    ("submit_time", None), ("weight", 0.0), ("deadline", "soon"), ("batch_size", -3),
    ("cpu_per_gpu", "1.5"), ("iterations", 2e12)])
def test_a_bad_job_number_is_refused_naming_the_field(snapshot, field, value):
    with pytest.raises(InputError) as err:
        check_instance(_with_job(snapshot, **{field: value}))
    assert err.value.field == f"jobs[0].{field}"


@pytest.mark.parametrize(("field", "value"), [
    ("gpu_util", "x"), ("gpu_util", math.nan), ("gpu_util", -5.0), ("gpu_mem_gb", None),
    ("cpu_per_gpu", math.inf), ("ram_gb_per_gpu", -0.5),
    # numeric strings (numpy would read "4" as 4.0) and bools (read as 1.0)
    ("gpu_util", "4"), ("gpu_mem_gb", "4"), ("cpu_per_gpu", "2.5"), ("ram_gb_per_gpu", "8"),
    ("remaining_s", "60"), ("gpu_mem_gb", True),
    # remaining_s: no sum reads it, the schema bounds it all the same
    ("remaining_s", math.nan), ("remaining_s", -1.0), ("remaining_s", math.inf),
    ("remaining_s", 2e12)])
def test_a_bad_running_number_is_refused_naming_the_field(snapshot, field, value):
    with pytest.raises(InputError) as err:
        check_instance(_with_running(snapshot, **{field: value}))
    assert err.value.field == f"running[0].{field}"


def test_numpy_numbers_and_none_where_allowed_pass(snapshot):
    job = snapshot.jobs[0]
    check_instance(_with_job(snapshot, gpu_util=np.float64(job.gpu_util),
                             num_gpus=np.int64(job.num_gpus), deadline=None,
                             submit_time=-5, weight=np.float32(2.0)))
    check_instance(_with_running(snapshot, remaining_s=None, gpu_util=np.float32(10)))


@pytest.fixture(scope="module")
def other_snapshots():
    """Snapshots of problems that do not read a running job's utilization."""
    genie = generate_genie(seed=0, snapshot=True)
    liquid = generate_liquid(seed=0, busy=0.25)
    assert genie.running and liquid.running
    return {"genie": (genie, "fifo"), "liquid": (liquid, "bestfit")}


@pytest.mark.parametrize("problem", ["genie", "liquid"])
@pytest.mark.parametrize(("field", "value"), [
    ("gpu_util", -1.0), ("gpu_util", math.nan), ("remaining_s", math.nan), ("gpu_util", "4")])
def test_every_problem_refuses_a_bad_running_number_through_solve(other_snapshots, problem,
                                                                   field, value):
    inst, method = other_snapshots[problem]
    assert solve(inst, method).status.has_solution  # unchanged, it solves
    with pytest.raises(InputError) as err:
        solve(_with_running(inst, **{field: value}), method)
    assert err.value.field == f"running[0].{field}"
    assert "finite number" in err.value.fix


def test_the_field_of_a_later_running_job_is_named(snapshot):
    k = len(snapshot.running) - 1
    bad = replace(snapshot.running[k], remaining_s=math.nan)
    with pytest.raises(InputError) as err:
        check_instance(snapshot.replace(running=(*snapshot.running[:k], bad)))
    assert err.value.field == f"running[{k}].remaining_s"


def test_a_running_job_keeps_its_verdict_through_pickle_and_replace():
    good = RunningJob(job="r", gpus=("g",), gpu_util=50.0, remaining_s=3.0)
    bad = RunningJob(job="r", gpus=("g",), gpu_util=50.0, remaining_s=math.nan)
    assert not good._numbers_fault and bad._numbers_fault
    assert pickle.loads(pickle.dumps(bad))._numbers_fault
    assert not pickle.loads(pickle.dumps(good))._numbers_fault
    assert not replace(bad, remaining_s=1.0)._numbers_fault
    assert replace(good, gpu_mem_gb="4")._numbers_fault


def test_running_jobs_not_built_as_running_job_are_checked_field_by_field(snapshot):
    r = snapshot.running[0]
    duck = SimpleNamespace(job=r.job, gpus=r.gpus, gpu_util=r.gpu_util,
                           gpu_mem_gb=r.gpu_mem_gb, cpu_per_gpu=r.cpu_per_gpu,
                           ram_gb_per_gpu=r.ram_gb_per_gpu, remaining_s="60", extra={})
    with pytest.raises(InputError) as err:
        check_instance(snapshot.replace(running=(duck, *snapshot.running[1:])))
    assert err.value.field == "running[0].remaining_s"
    check_instance(snapshot.replace(running=(SimpleNamespace(**{**vars(duck),
                                                                "remaining_s": 60.0}),
                                             *snapshot.running[1:])))


def test_the_simulator_refuses_a_workload_with_a_bad_running_job():
    # a workload has no running jobs; one built with a bad one is refused for its number
    # first (check_instance), naming it, not with a numpy error
    w = generate_genie_workload(seed=0, duration=1.0)
    ids = w.cluster.gpu_ids
    bad = RunningJob(job="r0", gpus=(ids[0],), gpu_util=-1.0)
    with pytest.raises(InputError) as err:
        simulate(w.replace(running=(bad,)), Policy("fifo"))
    assert err.value.field == "running[0].gpu_util"
