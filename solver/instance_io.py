"""Instance files: parse, check (references, capacities, the problem's needs) and write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .files import check_plain_values, read_json_as, write_json
from .instance import Instance
from .instance_numbers import check_numbers, running_numbers_ok
from .jobs import job_from_dict, running_from_dict
from .problems import get_problem
from .schema_check import check_against_schema, has_definition
from .topology import Cluster


def instance_from_dict(doc: Any) -> Instance:
    """Build an Instance from its file form, enforcing the file limits on numbers and
    nesting (:func:`dlsched.files.check_plain_values`), the schema and the problem's needs."""
    check_plain_values(doc)
    return _instance_from_checked(doc)


def _instance_from_checked(doc: Any) -> Instance:
    """:func:`instance_from_dict` of a document :func:`dlsched.files.read_json` read (its
    numbers and nesting are already checked)."""
    check_against_schema(doc, "instance")
    if has_definition("params", doc["problem"]):
        check_against_schema(doc["params"], "params", definition=doc["problem"],
                             prefix=("params",))
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
    over capacity, the problem's needs, numbers outside the schema's bounds); returns it
    unchanged. Generators end with this."""
    check_numbers(instance.jobs, ())  # the running jobs' when their sums fail (below)
    _check_references(instance)
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
    # numbers first: the reference checks read extra's per-server mappings
    if not running_numbers_ok(instance.running):  # each checked when it was built
        check_numbers((), instance.running)  # names the running job and field
    if not _running_references_ok(instance):
        _raise_running_reference(instance)
    mem = instance.gpu_mem_used
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


def _running_references_ok(instance: Instance) -> bool:
    """Whether every running job names known GPUs (each once) and known nodes, in a few
    array steps; :func:`_raise_running_reference` finds and reports the first fault."""
    try:
        rg = instance.running_gpus
    except KeyError:
        return False
    if rg.gpu.size:
        pairs = np.sort(rg.owner * instance.cluster.num_gpus + rg.gpu)
        if (pairs[1:] == pairs[:-1]).any():  # (np.unique is ~20x slower here)
            return False
    node_index = instance.cluster.node_index
    return all(node_id in node_index for i in rg.node_extra
               for key in ("node_cpu", "node_ram_gb")
               for node_id in instance.running[i].extra.get(key, {}))


def _raise_running_reference(instance: Instance) -> None:
    """Raise the InputError for the first running job with a bad GPU or node reference."""
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
    raise AssertionError("_running_references_ok found a fault this scan does not")


def load_instance(path: str | Path) -> Instance:
    """Read and check an instance file (schema, references, the problem's needs, sha256).

    Parameters
    ----------
    path
        An instance file: canonical JSON, gzip-compressed when the name ends in ``.gz``
        (format: docs/formats.md).

    Returns
    -------
    Instance
        The checked instance.

    Raises
    ------
    InputError
        The file is missing or unreadable, breaks the schema, references unknown ids,
        lacks a field its problem needs, or its stated sha256 does not match; the
        one-line message names the file, the field and the fix.
    """
    return read_json_as(path, _instance_from_checked)


def save_instance(instance: Instance, path: str | Path) -> str:
    """Write the instance file (gzip-compressed when the name ends in ``.gz``); returns its
    sha256. An instance that :func:`check_instance` refuses is an InputError, and nothing
    is written (a file ``load_instance`` would refuse is never made)."""
    check_instance(instance)
    doc = instance.to_dict()
    write_json(doc, path)
    return doc["sha256"]
