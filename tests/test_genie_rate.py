"""GENIE's rate model answers its simulator-side ``slowdown`` as the generic group form.

``GenieLocality.slowdown`` counts GPUs per server without an array (the simulator asks at
every start); it must give the value, and the error, of ``GroupLocality.slowdown`` with
GENIE's ``counts_slowdown`` on the same placement.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.instances.genie_gen import generate_genie_workload
from dlsched.problems.genie.rate import GenieLocality
from dlsched.problems.rates import GroupLocality, SpeedModel


def _placements(rng: random.Random, nodes: int, per: int, count: int):
    """Random GPU index sets: symmetric shapes and some with unequal servers."""
    for _ in range(count):
        servers = rng.sample(range(nodes), rng.randint(1, nodes))
        if rng.random() < 0.7:
            k = rng.randint(1, per)
            ks = [k] * len(servers)
        else:
            ks = [rng.randint(1, per) for _ in servers]
        gpus = [s * per + i for s, k in zip(servers, ks, strict=True)
                for i in rng.sample(range(per), k)]
        rng.shuffle(gpus)
        yield gpus


def test_genie_slowdown_equals_the_group_form_with_its_counts():
    w = generate_genie_workload(seed=1, nodes=4, gpus_per_node=4, density=10.0, duration=2.0)
    loc = GenieLocality(SpeedModel(locality="genie"), w)
    rng = random.Random(5)
    asymmetric = 0
    for job, gpus in zip(rng.choices(w.jobs, k=300), _placements(rng, 4, 4, 300),
                         strict=True):
        for given in (gpus, np.array(gpus, dtype=np.int64)):
            try:
                want = GroupLocality.slowdown(loc, job, np.array(gpus, dtype=np.int64), None)
            except InputError as exc:
                with pytest.raises(InputError) as got:
                    loc.slowdown(job, given, None)
                assert (got.value.message, got.value.field) == (exc.message, exc.field)
                asymmetric += 1
                continue
            assert loc.slowdown(job, given, None) == want
    assert asymmetric > 0  # the error path ran


def test_genie_slowdown_of_no_gpu_is_the_group_form_error():
    w = generate_genie_workload(seed=1, nodes=2, gpus_per_node=4, density=10.0, duration=2.0)
    loc = GenieLocality(SpeedModel(locality="genie"), w)
    with pytest.raises(InputError, match=r"asymmetrically \(\[\]\)"):
        GroupLocality.slowdown(loc, w.jobs[0], np.array([], dtype=np.int64), None)
    with pytest.raises(InputError, match=r"asymmetrically \(\[\]\)"):
        loc.slowdown(w.jobs[0], [], None)
