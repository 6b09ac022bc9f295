"""Simulator plots: titles name workload, policy and problem; long spans in hours/days;
the Gantt chart groups GPUs by server with a size key, and aggregates large clusters."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dlsched.instance import Instance  # noqa: E402
from dlsched.jobs import Job  # noqa: E402
from dlsched.simulate import job_table, simulate  # noqa: E402
from dlsched.simulate.results import (  # noqa: E402
    plot_gantt,
    plot_jct_cdf,
    plot_utilization,
    server_busy_matrix,
    time_unit,
)
from dlsched.topology import homogeneous_cluster  # noqa: E402


def workload(servers: int, jobs: list[tuple[float, int, float]], name: str = "w") -> Instance:
    cluster = homogeneous_cluster(servers, 8)
    js = tuple(Job(id=f"j{i}", submit_time=t, num_gpus=g, duration=d, model="resnet50")
               for i, (t, g, d) in enumerate(jobs))
    return Instance(problem="sched2", cluster=cluster, jobs=js, params={}, name=name)


def test_time_units():
    assert time_unit(3600) == (1.0, "s")
    assert time_unit(552_716) == (86400.0, "days")
    assert time_unit(86400) == (3600.0, "h")


def test_titles_units_and_gantt_key():
    w = workload(2, [(0, 1, 40000), (0, 8, 90000), (100, 2, 30000)], name="tiny")
    run = simulate(w, "fifo", record_events=False)
    for plot in (plot_utilization, plot_jct_cdf, plot_gantt):  # the Gantt chart last
        fig, bars = plot(run)
        title = fig.axes[0].get_title()
        assert "workload tiny" in title and "policy fifo" in title and "problem sched2" in title
    ax = fig.axes[0]  # the Gantt chart's (drawn once, not again for these checks)
    assert ax.get_xlabel() == "time (h)"  # 90,000 s span
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["1 GPU", "2 GPUs",
                                                                   "5-8 GPUs"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["n0", "n1"]
    assert len(ax.lines) == 1  # one boundary between the two servers
    assert set(bars["num_gpus"]) == {1, 2, 8}


def test_large_clusters_are_aggregated_per_server():
    # 20 servers (160 GPUs): one 8-GPU job for 100 s, one 1-GPU job for 50 s
    w = workload(20, [(0, 8, 100), (0, 1, 50)])
    run = simulate(w, "fifo", record_events=False)
    fig, data = plot_gantt(run)
    assert "aggregated" in fig.axes[0].get_title()
    assert data.shape == (20, 400)
    # GPU-seconds are conserved: 8 * 100 + 1 * 50 = 850, slice width 100 / 400 s
    width = 100 / 400
    assert data.to_numpy().sum() * width == pytest.approx(850.0)
    table = job_table(run)
    assert np.allclose(server_busy_matrix(run, table.dropna(subset=["end"]), bins=400),
                       data.to_numpy())
