"""Instances: a snapshot (or workload) with its problem, parameters and provenance."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from operator import attrgetter
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
    def running_gpus(self) -> RunningGpus:
        """The running jobs' GPUs as index arrays (:class:`RunningGpus`), built in one pass.

        Raises ``KeyError`` for a GPU id the cluster lacks (:func:`check_instance` reports
        it as bad input first).
        """
        return RunningGpus(self.running, self.cluster.gpu_index)

    @cached_property
    def gpu_usage(self) -> tuple[np.ndarray, np.ndarray]:
        """(utilization in percent, memory in GB) in use on each GPU by running jobs."""
        # bincount adds the weights in input order, as a loop over running jobs and
        # their GPUs would: the sums are bit-identical to it.
        rg, n = self.running_gpus, self.cluster.num_gpus
        if not rg.gpu.size:
            return np.zeros(n), self.gpu_mem_used
        return np.bincount(rg.gpu, weights=rg.column(1), minlength=n), self.gpu_mem_used

    @cached_property
    def gpu_mem_used(self) -> np.ndarray:
        """``gpu_usage[1]`` (memory in GB in use on each GPU), without reading the running
        jobs' utilization, which the checks and the validator do not need."""
        known = self.__dict__.get("gpu_usage")  # computed, or seeded by the simulator
        if known is not None:
            return known[1]
        rg, n = self.running_gpus, self.cluster.num_gpus
        if not rg.gpu.size:
            return np.zeros(n)
        return np.bincount(rg.gpu, weights=rg.column(2), minlength=n)

    @cached_property
    def gpu_busy(self) -> np.ndarray:
        """True for GPUs that hold at least one running job."""
        busy = np.zeros(self.cluster.num_gpus, dtype=bool)
        busy[self.running_gpus.gpu] = True
        return busy

    @cached_property
    def idle_by_server(self) -> tuple[tuple[int, ...], ...]:
        """Per server (cluster order), its idle GPU indices (no running job) in ascending
        order."""
        flat, ends, _ = self._idle_split
        whole = tuple(flat)  # a tuple's slice is a tuple: one object per server
        return tuple([whole[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)])

    def idle_lists(self) -> list[list[int]]:
        """:attr:`idle_by_server` as new lists, which the caller may change."""
        known = self.__dict__.get("idle_by_server")  # computed, or seeded by the simulator
        if known is not None:
            return list(map(list, known))
        flat, ends, _ = self._idle_split
        return [flat[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]

    @cached_property
    def idle_counts(self) -> np.ndarray:
        """Idle GPUs per server (cluster order), int64; read-only for callers."""
        known = self.__dict__.get("idle_by_server")
        if known is not None:
            return np.fromiter(map(len, known), dtype=np.int64, count=len(known))
        return self._idle_split[2]

    @cached_property
    def _idle_split(self) -> tuple[list[int], list[int], np.ndarray]:
        # GPU indices are contiguous per server (Cluster.gpus_of_node), so the idle ones
        # split by each server's idle count: (idle indices, each server's end in them,
        # the counts)
        idle = np.flatnonzero(~self.gpu_busy)
        counts = np.bincount(self.cluster.gpu_node[idle], minlength=self.cluster.num_nodes)
        return idle.tolist(), np.cumsum(counts).tolist(), counts

    @cached_property
    def node_usage(self) -> tuple[np.ndarray, np.ndarray]:
        """(CPU, RAM in GB) in use on each server by running jobs."""
        n = self.cluster.num_nodes
        rg = self.running_gpus
        if not rg.node_extra:
            if not rg.gpu.size:
                return np.zeros(n), np.zeros(n)
            node = self.cluster.gpu_node[rg.gpu]
            return (np.bincount(node, weights=rg.column(3), minlength=n),
                    np.bincount(node, weights=rg.column(4), minlength=n))
        # node_cpu / node_ram_gb extras interleave with the per-GPU amounts: keep the
        # loop's order of additions
        cpu = np.zeros(n)
        ram = np.zeros(n)
        index, node_of = self.cluster.gpu_index, self.cluster.gpu_node
        for r in self.running:
            for g in r.gpus:
                k = node_of[index[g]]
                cpu[k] += r.cpu_per_gpu
                ram[k] += r.ram_gb_per_gpu
            for node_id, amount in r.extra.get("node_cpu", {}).items():
                cpu[self.cluster.node_index[node_id]] += amount
            for node_id, amount in r.extra.get("node_ram_gb", {}).items():
                ram[self.cluster.node_index[node_id]] += amount
        return cpu, ram


class RunningGpus:
    """The running jobs of a snapshot as arrays, one entry per (running job, GPU) pair.

    Attributes
    ----------
    gpu
        GPU index of each pair, running jobs in order, each job's GPUs in its order.
    owner
        Index into ``running`` of each pair's job.
    counts
        GPUs listed per running job.
    node_extra
        Indices of the running jobs whose ``extra`` names ``node_cpu`` or ``node_ram_gb``.
    """

    _FIELDS = tuple(map(attrgetter, ("gpu_util", "gpu_mem_gb", "cpu_per_gpu",
                                     "ram_gb_per_gpu")))

    def __init__(self, running: tuple[RunningJob, ...], gpu_index: Mapping[str, int]) -> None:
        self._running = running
        # C-level passes (map, chain, fromiter) over the running jobs: at thousands of
        # running GPUs these arrays are most of what checking a snapshot costs
        gpus = list(map(_GPUS, running))
        self.counts = np.fromiter(map(len, gpus), dtype=np.int64, count=len(gpus))
        self.gpu = np.fromiter(map(gpu_index.__getitem__, chain.from_iterable(gpus)),
                               dtype=np.int64, count=int(self.counts.sum()))
        self.owner = np.repeat(np.arange(len(running), dtype=np.int64), self.counts)
        self.node_extra = ([i for i, r in enumerate(running)
                            if r.extra and ("node_cpu" in r.extra or "node_ram_gb" in r.extra)]
                           if any(map(_EXTRA, running)) else [])
        self._per_job: list[np.ndarray | None] = [None] * 4

    def column(self, k: int) -> np.ndarray:
        """Per pair: its job's field ``k`` (0 = the job's index, 1 = gpu_util,
        2 = gpu_mem_gb, 3 = cpu_per_gpu, 4 = ram_gb_per_gpu)."""
        if k == 0:
            return self.owner
        return self.per_job(k)[self.owner]

    def per_job(self, k: int) -> np.ndarray:
        """Per running job: its field ``k`` (1-4, as in :meth:`column`), built on first read
        (a ``TypeError`` or ``ValueError`` for a value that is not a number)."""
        per_job = self._per_job[k - 1]
        if per_job is None:
            per_job = self._per_job[k - 1] = np.fromiter(
                map(self._FIELDS[k - 1], self._running), dtype=float, count=len(self._running))
        return per_job


_GPUS = attrgetter("gpus")
_EXTRA = attrgetter("extra")


# ---------------------------------------------------------------------- reading
