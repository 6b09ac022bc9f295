"""The Horus generator: same arguments, same bytes; the paper's job classes."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched import load_instance, save_instance
from dlsched.instances.horus_gen import generate_horus


def test_different_seeds_differ():
    a = generate_horus(seed=1, nodes=4, gpus_per_node=2, beta=5)
    b = generate_horus(seed=2, nodes=4, gpus_per_node=2, beta=5)
    assert a.sha256 != b.sha256


def test_busy_fraction_and_pending_count():
    inst = generate_horus(seed=3, nodes=16, gpus_per_node=8, beta=15, busy=0.5)
    assert inst.gpu_busy.sum() == 64
    assert len(inst.jobs) == 15
    assert all(j.submit_time <= inst.time for j in inst.jobs)


def test_job_classes_follow_the_paper():
    inst = generate_horus(seed=0, nodes=4, gpus_per_node=8, beta=2000, busy=0.0)
    dur = np.array([j.duration for j in inst.jobs])
    util = np.array([j.gpu_util for j in inst.jobs])
    gpus = np.array([j.num_gpus for j in inst.jobs])
    assert 0.45 < (dur > 800).mean() < 0.55 and dur.min() >= 180 and dur.max() <= 7200
    assert 0.45 < (util >= 60).mean() < 0.55 and util.max() <= 100
    assert (gpus == 1).mean() > 0.5 and set(gpus) <= {1, 2, 4, 8}
    assert all(j.gpu_mem_gb <= 8.0 for j in inst.jobs)


def test_generated_file_loads(tmp_path):
    inst = generate_horus(seed=9, nodes=4, gpus_per_node=4, beta=6, busy=0.9, cpu=12.0)
    save_instance(inst, tmp_path / "g.json")
    assert load_instance(tmp_path / "g.json").sha256 == inst.sha256


def test_workload_share_of_long_jobs_can_be_set():
    from dlsched.instances.horus_gen import generate_horus_workload

    short = generate_horus_workload(seed=2, preset="w-large", jobs=30, p_long=0.0)
    assert all(180 <= j.duration <= 800 for j in short.jobs)
    long_ = generate_horus_workload(seed=2, preset="w-large", jobs=30, p_long=1.0)
    assert all(801 <= j.duration <= 7200 for j in long_.jobs)
    assert long_.provenance["arguments"]["p_long"] == 1.0
    with pytest.raises(ValueError, match="p_long"):
        generate_horus_workload(p_long=1.5)
