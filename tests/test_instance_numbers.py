"""Numbers of jobs and running jobs built in Python: refused as the file schema refuses
them, with the field named (dlsched.instance_numbers, run by check_instance: a running
job's numbers where a check or the problem reads them)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.instance_io import check_instance
from dlsched.instances.horus_gen import generate_horus


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
    ("cpu_per_gpu", math.inf), ("ram_gb_per_gpu", -0.5)])
def test_a_bad_running_number_is_refused_naming_the_field(snapshot, field, value):
    # the sums every problem checks (memory, CPU, RAM) and Horus's utilization
    with pytest.raises(InputError) as err:
        check_instance(_with_running(snapshot, **{field: value}))
    assert err.value.field == f"running[0].{field}"


def test_numpy_numbers_and_none_where_allowed_pass(snapshot):
    job = snapshot.jobs[0]
    check_instance(_with_job(snapshot, gpu_util=np.float64(job.gpu_util),
                             num_gpus=np.int64(job.num_gpus), deadline=None,
                             submit_time=-5, weight=np.float32(2.0)))
    check_instance(_with_running(snapshot, remaining_s=None, gpu_util=np.float32(10)))
