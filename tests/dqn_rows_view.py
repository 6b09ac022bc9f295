"""A random SCHED² workload and ``dqn``'s fast form (:class:`LiveQ`) on a stand-in for the
simulator's live view (the few things it reads), for the row tests."""

from __future__ import annotations

import numpy as np

from dlsched import homogeneous_cluster
from dlsched.heuristics.sched2_dqn_policy import LiveQ, load_network, shipped_weights
from dlsched.instance import Instance
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.jobs import JobColumns


class RowsView:
    """The workload's jobs, their columns, params and cluster, as a live view gives them."""

    def __init__(self, workload) -> None:
        self.workload_jobs = workload.jobs
        self.workload_columns = JobColumns(workload.jobs)
        self.params = workload.params
        self.cluster = workload.cluster


def random_live_rows(seed: int, rng: np.random.Generator, jobs: int, max_servers: int
                     ) -> tuple[Instance, LiveQ, int, int]:
    """(workload, its LiveQ for the shipped agent, servers, GPUs per server): ``jobs`` jobs of
    ``generate_sched2(seed)`` on 2 to ``max_servers - 1`` servers of 4 or 8 GPUs."""
    servers, per = int(rng.integers(2, max_servers)), int(rng.choice([4, 8]))
    w = generate_sched2(seed=seed, jobs=jobs, servers=servers, gpus_per_server=per)
    w = w.replace(cluster=homogeneous_cluster(servers, per))
    return w, LiveQ(RowsView(w), load_network(shipped_weights())[0]), servers, per


def random_moment(rng: np.random.Generator, submit: np.ndarray, servers: int, per: int,
                  low: int, high: int) -> tuple[np.ndarray, float, np.ndarray]:
    """A random call: (records of n distinct jobs, n drawn from [low, high); a time after
    every submission in ``submit``; idle GPUs of each of ``servers`` servers of ``per``)."""
    n = int(rng.integers(low, high))
    records = rng.choice(len(submit), size=n, replace=False)
    now = float(submit.max()) + float(rng.exponential(5000.0))
    return records, now, rng.integers(0, per + 1, size=servers)
