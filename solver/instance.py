"""Instances: a snapshot (or workload) with its problem, parameters and provenance."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .canonical import sha256_of
from .jobs import Job, JobColumns, RunningJob, to_plain
from .topology import Cluster

FORMAT_VERSION = 1


@dataclass(frozen=True, eq=False)
class Instance:
    """Everything a solver needs: the cluster, running jobs, the ordered pending queue.

    ``jobs`` is the pending queue in submission order (or, for a workload, all jobs with
    their arrival times). ``time`` is the snapshot's clock in seconds.
    """

    problem: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    running: tuple[RunningJob, ...] = ()
    time: float = 0.0
    name: str = ""
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> Instance:
        """A copy with some fields changed (its sha256 changes with it)."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, Any]:
        """The file form, including its ``sha256``."""
        doc: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "problem": self.problem,
            "name": self.name,
            "params": dict(self.params),
            "provenance": dict(self.provenance),
            "time": float(self.time),
            "cluster": self.cluster.to_dict(),
            "running": [to_plain(r) for r in self.running],
            "jobs": [to_plain(j) for j in self.jobs],
        }
        doc["sha256"] = sha256_of(doc)
        return doc

    @cached_property
    def sha256(self) -> str:
        """sha256 of the canonical form (see docs/formats.md)."""
        return self.to_dict()["sha256"]

    # ------------------------------------------------------------------ lookups
    @cached_property
    def job_index(self) -> dict[str, int]:
        return {j.id: i for i, j in enumerate(self.jobs)}

    def job(self, job_id: str) -> Job:
        return self.jobs[self.job_index[job_id]]

    @cached_property
    def job_columns(self) -> JobColumns:
        """Numeric fields of ``jobs`` as arrays (:class:`~dlsched.jobs.JobColumns`)."""
        return JobColumns(self.jobs)

    @cached_property
    def gpu_usage(self) -> tuple[np.ndarray, np.ndarray]:
        """(utilization in percent, memory in GB) in use on each GPU by running jobs."""
        util = np.zeros(self.cluster.num_gpus)
        mem = np.zeros(self.cluster.num_gpus)
        index = self.cluster.gpu_index
        for r in self.running:
            for g in r.gpus:
                util[index[g]] += r.gpu_util
                mem[index[g]] += r.gpu_mem_gb
        return util, mem

    @cached_property
    def gpu_busy(self) -> np.ndarray:
        """True for GPUs that hold at least one running job."""
        busy = np.zeros(self.cluster.num_gpus, dtype=bool)
        index = self.cluster.gpu_index
        for r in self.running:
            busy[[index[g] for g in r.gpus]] = True
        return busy

    @cached_property
    def idle_by_server(self) -> tuple[tuple[int, ...], ...]:
        """Per server (cluster order), its idle GPU indices (no running job) in ascending
        order."""
        busy = self.gpu_busy
        return tuple(tuple(int(g) for g in gpus if not busy[g])
                     for gpus in self.cluster.gpus_of_node)

    @cached_property
    def node_usage(self) -> tuple[np.ndarray, np.ndarray]:
        """(CPU, RAM in GB) in use on each server by running jobs."""
        cpu = np.zeros(self.cluster.num_nodes)
        ram = np.zeros(self.cluster.num_nodes)
        index, node_of = self.cluster.gpu_index, self.cluster.gpu_node
        for r in self.running:
            for g in r.gpus:
                n = node_of[index[g]]
                cpu[n] += r.cpu_per_gpu
                ram[n] += r.ram_gb_per_gpu
            for node_id, amount in r.extra.get("node_cpu", {}).items():
                cpu[self.cluster.node_index[node_id]] += amount
            for node_id, amount in r.extra.get("node_ram_gb", {}).items():
                ram[self.cluster.node_index[node_id]] += amount
        return cpu, ram


# ---------------------------------------------------------------------- reading
