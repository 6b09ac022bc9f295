"""Trace importers: sizing arithmetic, seeded fills, and the committed derived workloads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from trace_heads import committed_workload

from dlsched.instances.traces import cluster_gpus, fill_fields, offered_load, workload_from_frame
from dlsched.simulate import SpeedModel, job_table, simulate
from dlsched.topology import Cluster


def test_offered_load_and_cluster_size_by_hand():
    # window [0, 100]: job A 2 GPUs from 0 for 50 s -> 100 GPU-s; job B 4 GPUs from 80 for
    # 100 s, clipped at 100 -> 20 s * 4 = 80 GPU-s. Load = 180 / 100 = 1.8 GPUs.
    load = offered_load(np.array([0.0, 80.0]), np.array([50.0, 100.0]), np.array([2, 4]),
                        0.0, 100.0)
    assert load == pytest.approx(1.8)
    assert cluster_gpus(1.8, 4) == 8  # max(4, 1.8 / 0.8 = 2.25) -> one 8-GPU server
    assert cluster_gpus(30.0, 4) == 40  # 30 / 0.8 = 37.5 -> 5 servers
    assert cluster_gpus(1.0, 9) == 16  # the largest job needs two servers


def test_fill_is_seeded():
    a, b = fill_fields(50, 3), fill_fields(50, 3)
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
    assert fill_fields(50, 4)[0] != a[0]
    assert all(5 <= u <= 100 for u in a[1]) and all(0.1 <= m <= 8.0 for m in a[2])


def test_fractional_gpus_map_to_memory_and_utilization():
    df = pd.DataFrame({"job_id": ["x", "y"], "submit_time_s": [10, 20], "duration_s": [5, 7],
                       "num_gpus": [1, 2], "cpu": [4.0, 8.0], "mem_gb": [8.0, 16.0],
                       "gpu_milli": [250, 1000]})
    w = workload_from_frame(df, name="t", source="test", problem="horus")
    x, y = w.jobs
    assert x.submit_time == 0.0 and y.submit_time == 10.0  # re-based to the first submit
    assert x.gpu_util == 25.0 and x.gpu_mem_gb == pytest.approx(2.0)  # 0.25 of 8 GB
    assert y.gpu_util == 100.0 and y.gpu_mem_gb == pytest.approx(8.0)
    assert y.cpu_per_gpu == 4.0 and y.ram_gb_per_gpu == 8.0


@pytest.mark.parametrize("name, problem", [
    ("itp-cluster07-d25-26.json.gz", "sched2"),
    ("philly-tail-d0-7.json.gz", "sched2"),
    ("alibaba-openb-dense.json.gz", "horus"),
])
def test_committed_workloads_load(name, problem):
    w = committed_workload(name)  # checks schema, references and the sha256
    assert w.problem == problem
    assert w.cluster.num_gpus % 8 == 0
    assert max(j.num_gpus for j in w.jobs) <= w.cluster.num_gpus
    assert all(j.model and j.duration > 0 for j in w.jobs)
    assert min(j.submit_time for j in w.jobs) >= 0.0  # re-based to the window start
    assert w.provenance["generator"] == "instances.traces"


def test_itp_day_replays_under_every_rule():
    w = committed_workload("itp-cluster07-d25-26.json.gz")
    for rule in ("fifo", "dsif"):
        table = job_table(simulate(w, rule, record_events=False))
        assert table["end"].notna().all() and (table["wait"] >= 0).all()


def test_alibaba_sharing_replays_with_interference():
    w = committed_workload("alibaba-openb-dense.json.gz")
    # one server of the derived cluster, so that the shares must meet on GPUs
    w = w.replace(jobs=w.jobs[:150], cluster=Cluster([w.cluster.nodes[0]]))
    table = job_table(simulate(w, "obp", SpeedModel(interference="horus"), record_events=False))
    assert table["end"].notna().all()
    assert (table["run"] >= table["ideal"] - 1e-6).all()
    # some GPU hosts two tasks at once (GPU sharing happened)
    spans = [(r.start, r.end, r.gpus) for r in table.itertuples()]
    shared = any(a[2] == b[2] and a[0] < b[1] and b[0] < a[1]
                 for i, a in enumerate(spans) for b in spans[i + 1:])
    assert shared
