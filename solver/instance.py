"""Instances: a snapshot (or workload) with its problem, parameters and provenance."""

from __future__ import annotations

import dataclasses
import gzip
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .canonical import pretty_json, sha256_of
from .errors import InputError
from .jobs import Job, RunningJob, job_from_dict, running_from_dict, to_plain
from .schema_check import check_against_schema
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
def instance_from_dict(doc: Any) -> Instance:
    """Build an Instance from its file form, enforcing the schema and the problem's needs."""
    check_against_schema(doc, "instance")
    cluster = Cluster.from_dict(doc["cluster"])
    jobs = tuple(job_from_dict(j) for j in doc["jobs"])
    running = tuple(running_from_dict(r) for r in doc.get("running", []))
    instance = Instance(
        problem=doc["problem"],
        cluster=cluster,
        jobs=jobs,
        params=doc["params"],
        running=running,
        time=float(doc.get("time", 0.0)),
        name=doc.get("name", ""),
        provenance=doc.get("provenance", {}),
    )
    check_instance(instance)
    stated = doc.get("sha256")
    if stated is not None and stated != instance.sha256:
        raise InputError(
            f"sha256 {stated[:12]}… does not match the content ({instance.sha256[:12]}…)",
            field="sha256",
            fix="the file was edited: restore it, or delete the sha256 field to accept the edit",
        )
    return instance


def check_instance(instance: Instance) -> Instance:
    """Raise InputError when ``instance`` is inconsistent (ids, references, running jobs
    over capacity, the problem's needs); returns it unchanged. Generators end with this."""
    _check_references(instance)
    from .problems import get_problem

    get_problem(instance.problem, field="problem").check_instance(instance)
    return instance


def _check_references(instance: Instance) -> None:
    seen: set[str] = set()
    for i, job in enumerate(instance.jobs):
        if job.id in seen:
            raise InputError(
                f"job id {job.id!r} appears twice",
                field=f"jobs[{i}].id",
                fix="give every job a unique id",
            )
        seen.add(job.id)
        ids = [c.id for c in job.containers]
        if len(set(ids)) != len(ids):
            raise InputError(
                "container ids repeat",
                field=f"jobs[{i}].containers",
                fix="give every container of a job a unique id",
            )
    gpu_index = instance.cluster.gpu_index
    for i, r in enumerate(instance.running):
        for k, g in enumerate(r.gpus):
            if g not in gpu_index:
                raise InputError(
                    f"unknown GPU id {g!r}",
                    field=f"running[{i}].gpus[{k}]",
                    fix="use a GPU id listed under cluster.nodes[].gpus",
                )
        if len(set(r.gpus)) != len(r.gpus):
            raise InputError(
                "a GPU is listed twice",
                field=f"running[{i}].gpus",
                fix="list each GPU of a running job once",
            )
        for key in ("node_cpu", "node_ram_gb"):
            for node_id in r.extra.get(key, {}):
                if node_id not in instance.cluster.node_index:
                    raise InputError(
                        f"unknown node id {node_id!r}",
                        field=f"running[{i}].extra.{key}",
                        fix="use a node id listed under cluster.nodes",
                    )
    util, mem = instance.gpu_usage
    over = np.flatnonzero(mem > instance.cluster.gpu_mem_gb + 1e-9)
    if over.size:
        g = instance.cluster.gpu_ids[over[0]]
        raise InputError(
            f"running jobs use {mem[over[0]]:g} GB on GPU {g!r}, more than it has",
            field="running",
            fix="fix the running jobs' gpu_mem_gb",
        )
    cpu, ram = instance.node_usage
    for used, cap, name in (
        (cpu, instance.cluster.node_cpu, "cpu"),
        (ram, instance.cluster.node_ram_gb, "ram_gb"),
    ):
        over = np.flatnonzero(used > cap + 1e-9)
        if over.size:
            n = instance.cluster.node_ids[over[0]]
            raise InputError(
                f"running jobs use {used[over[0]]:g} {name} on node {n!r}, more than it has",
                field="running",
                fix=f"fix the running jobs' {name} requests",
            )


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (gzip-compressed when its name ends in ``.gz``); a parse error
    becomes an InputError naming the line."""
    p = Path(path)
    try:
        if p.suffix == ".gz":
            text = gzip.decompress(p.read_bytes()).decode("utf-8")
        else:
            text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(p)) from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read: {exc}", fix="pass a UTF-8 JSON file", source=str(p)
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            field="(file)",
            fix="fix the JSON syntax",
            source=str(p),
        ) from None


def load_instance(path: str | Path) -> Instance:
    """Read and check an instance file (schema, references, the problem's needs, sha256)."""
    doc = read_json(path)
    try:
        return instance_from_dict(doc)
    except InputError as exc:
        raise exc.with_source(str(path)) from None


def save_instance(instance: Instance, path: str | Path) -> str:
    """Write the instance file; returns its sha256."""
    doc = instance.to_dict()
    Path(path).write_text(pretty_json(doc), encoding="utf-8", newline="\n")
    return doc["sha256"]
