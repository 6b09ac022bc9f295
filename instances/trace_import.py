"""A raw trace file → a simulator workload (``dlsched import-trace``).

:func:`import_trace` reads the file with its format's reader
(:mod:`dlsched.instances.trace_formats`, read by
:mod:`dlsched.instances.trace_reader`), turns the rows into a workload with
:func:`dlsched.instances.traces.workload_from_frame` (the same seeded fills and cluster
sizing as the committed trace workloads), then keeps the job fields the format carries
(model, batch size, iterations, priority weight) and sets the cluster:

* ``cluster="auto"``: sized from the offered load (``workload_from_frame``'s rule: whole
  8-GPU servers holding max(largest job, load / ``target_load``));
* ``cluster="NxG"``: N servers of G GPUs (same GPU type, CPU and RAM per server as auto);
* ``nodes=FILE``: Alibaba's ``openb_node_list`` (GPU servers only, their GPU count, CPU and
  RAM; GPUs modelled as the GTX 1080 type of the Horus interference fit, see below);
* ``topology=FILE``: a graph file read by ``dlsched.topology_io.load_topology``.

A model name from the trace is kept when the problem knows its locality sensitivity (the
SCHED² table); other names are replaced by the seeded model and counted in the notes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.instance_io import check_instance
from dlsched.problems.sched2 import SENSITIVITY
from dlsched.topology import (
    MAX_GENERATED_GPUS,
    Cluster,
    GpuSpec,
    NodeSpec,
    homogeneous_cluster,
)

from .trace_formats import read_raw_trace
from .trace_reader import TraceTable
from .traces import GPU_MEM_GB, GPU_TYPE, workload_from_frame

PROBLEMS = ("sched2", "horus")
MIN_TARGET_LOAD = 0.01
"""Lowest --target-load (lower sizes the cluster over 100 times the offered load)."""


def import_trace(fmt: str, path: str | Path, *, problem: str = "sched2",
                 cluster: str = "auto", nodes: str | Path | None = None,
                 topology: str | Path | None = None, columns: str | Mapping[str, str] | None
                 = None, skip_bad: bool = False, tz: str | None = None, seed: int = 0,
                 target_load: float = 0.8, name: str | None = None
                 ) -> tuple[Instance, TraceTable, list[str]]:
    """Read a raw trace and build a workload.

    Parameters
    ----------
    fmt
        Format name (``dlsched.instances.trace_formats.FORMAT_NAMES``).
    path
        The trace file.
    problem
        ``sched2`` (default) or ``horus`` (GPU sharing); the traces carry no containers
        (Liquid) or deadlines and task graphs (GENIE).
    cluster
        ``"auto"`` (default) or ``"NxG"``.
    nodes
        Alibaba node list to build the cluster from (instead of ``cluster``).
    topology
        Graph file for ``dlsched.topology_io.load_topology`` (instead of ``cluster``).
    columns
        Column mapping of the generic format.
    skip_bad
        Skip and count malformed rows instead of stopping at the first.
    tz
        Time zone of date-times without one (default: the format's convention).
    seed
        Seed of the filled fields.
    target_load
        Offered load the auto-sized cluster aims at (0 < x ≤ 1).
    name
        Workload name (default ``FORMAT-FILESTEM``).

    Returns
    -------
    (Instance, TraceTable, list of str)
        The checked workload, the reader's table and what the import did (notes).
    """
    if problem not in PROBLEMS:
        raise InputError(f"problem {problem!r} cannot be built from a job trace",
                         field="--problem", fix="use sched2 or horus (traces have no Liquid "
                         "containers or GENIE deadlines)")
    if not MIN_TARGET_LOAD <= target_load <= 1:
        raise InputError(f"target load {target_load:g}", field="--target-load",
                         fix=f"pass a share in [{MIN_TARGET_LOAD:g}, 1]")
    given = [x for x in (cluster != "auto", nodes is not None, topology is not None) if x]
    if len(given) > 1:
        raise InputError("more than one cluster given", field="--cluster",
                         fix="pass one of --cluster NxG, --nodes FILE, --topology FILE")
    table = read_raw_trace(fmt, path, skip_bad=skip_bad, tz=tz, columns=columns)
    frame = table.frame
    label = name or f"{fmt}-{Path(path).stem}"
    work = workload_from_frame(
        frame, name=label, source=f"{fmt} trace file {Path(path).name}", problem=problem,
        seed=seed, target_load=target_load,
        arguments={"format": fmt, "file": Path(path).name, "cluster": cluster,
                   "skip_bad_rows": skip_bad})
    notes = [f"offered load {work.provenance['arguments']['offered_load_gpus']:g} GPUs "
             f"over {_span(frame)}"]
    work = _keep_job_fields(work, frame, notes)
    if cluster != "auto":
        work = work.replace(cluster=_spec_cluster(cluster, work.cluster))
        notes.append(f"cluster given: {cluster}")
    elif nodes is not None:
        work = work.replace(cluster=node_list_cluster(nodes))
        notes.append(f"cluster from node list {Path(nodes).name}")
    elif topology is not None:
        work = work.replace(cluster=_topology_cluster(topology))
        notes.append(f"cluster from topology {Path(topology).name}")
    else:
        notes.append(f"cluster sized from the offered load at target {target_load:g}")
    biggest = max(j.num_gpus or 0 for j in work.jobs)
    if biggest > work.cluster.num_gpus:
        raise InputError(f"a job needs {biggest} GPUs, the cluster has "
                         f"{work.cluster.num_gpus}", field="--cluster",
                         fix="give a larger cluster or use --cluster auto")
    prov = dict(work.provenance)
    prov["import"] = {"format": table.format, "columns": table.columns,
                      "excluded": dict(table.excluded), "skipped_bad_rows": dict(table.skipped),
                      "notes": [*table.notes, *notes]}
    work = check_instance(work.replace(provenance=prov))
    return work, table, [*table.notes, *notes]


def _span(frame: pd.DataFrame) -> str:
    span = float(frame["submit_time_s"].max() - frame["submit_time_s"].min())
    return f"{span / 86400:.2f} days of submissions" if span >= 86400 else \
        f"{span / 3600:.2f} hours of submissions"


def _keep_job_fields(work: Instance, frame: pd.DataFrame, notes: list[str]) -> Instance:
    """Job fields the trace states, over the seeded fills (rows in submit order)."""
    frame = frame.sort_values(["submit_time_s"], kind="stable").set_index("job_id")
    fields = [c for c in ("model", "batch_size", "iterations", "weight") if c in frame]
    if not fields:
        return work
    unknown: Counter = Counter()
    kept = 0
    jobs = []
    for job in work.jobs:
        row = frame.loc[job.id]
        change: dict[str, Any] = {}
        model = row.get("model")
        if isinstance(model, str) and model:
            if model in SENSITIVITY:
                change["model"] = model
                kept += 1
            else:
                unknown[model] += 1
        for key, cast in (("batch_size", int), ("iterations", int), ("weight", float)):
            value = row.get(key)
            if value is not None and not (isinstance(value, float) and np.isnan(value)):
                change[key] = cast(value)
        jobs.append(job.replace(**change) if change else job)
    if "model" in fields:
        notes.append(f"model kept from the trace for {kept} of {len(jobs)} jobs")
        if unknown:
            notes.append("models without a locality sensitivity got the seeded model: "
                         + ", ".join(f"{m} ({n})" for m, n in sorted(unknown.items())))
    return work.replace(jobs=tuple(jobs))


def _spec_cluster(spec: str, auto: Cluster) -> Cluster:
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", spec)
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise InputError(f"cluster {spec!r}", field="--cluster",
                         fix="write auto or SERVERSxGPUS, e.g. 16x8")
    if int(match.group(1)) * int(match.group(2)) > MAX_GENERATED_GPUS:
        raise InputError(f"cluster {spec[:40]!r} has more than {MAX_GENERATED_GPUS} GPUs",
                         field="--cluster", fix="give a smaller cluster or use --cluster auto")
    first = auto.nodes[0]
    return homogeneous_cluster(int(match.group(1)), int(match.group(2)), gpu_type=GPU_TYPE,
                               gpu_mem_gb=GPU_MEM_GB, cpu=first.cpu, ram_gb=first.ram_gb)


def _topology_cluster(path: str | Path) -> Cluster:
    from dlsched.topology_io import load_topology

    return load_topology(path)


def node_list_cluster(path: str | Path) -> Cluster:
    """Alibaba ``openb_node_list`` CSV → cluster of its GPU servers.

    Each server keeps its id (``sn``), GPU count, CPU (``cpu_milli`` / 1000) and RAM
    (``memory_mib`` / 1024); the GPU ``model`` column is not kept: every GPU is the
    GTX 1080 8 GB type the Horus interference fit and the GPU-share mapping use.

    Parameters
    ----------
    path
        The CSV file (``sn,cpu_milli,memory_mib,gpu,model``).

    Returns
    -------
    Cluster
        One server per row with ``gpu`` > 0.

    Raises
    ------
    InputError
        A missing file or column, or no GPU server.
    """
    try:
        df = pd.read_csv(path, dtype={"sn": str, "model": str})
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(path)) from None
    except (OSError, ValueError) as exc:  # a directory, not UTF-8, not CSV
        raise InputError(f"cannot read: {' '.join(str(exc).split())[:160]}", field="(file)",
                         fix="pass an openb_node_list CSV", source=str(path)) from None
    need = {"sn", "cpu_milli", "memory_mib", "gpu"}
    if not need <= set(df.columns):
        raise InputError(f"no column {sorted(need - set(df.columns))[0]!r}", field="(header)",
                         fix="pass an openb_node_list CSV", source=str(path))
    for column in ("cpu_milli", "memory_mib", "gpu"):
        values = pd.to_numeric(df[column], errors="coerce")
        bad = ~(values.between(0, 2**31) & (column != "gpu" or values.between(0, 1024)))
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise InputError(f"line {row + 2}: {str(df[column].iloc[row])[:30]!r} is not a "
                             "count in range", field=column, source=str(path),
                             fix="pass an openb_node_list CSV (non-negative numbers)")
        df[column] = values
    specs = []
    for row in df[df["gpu"] > 0].itertuples(index=False):
        gpus = tuple(GpuSpec(id=f"{row.sn}/g{k}", type=GPU_TYPE, mem_gb=GPU_MEM_GB)
                     for k in range(int(row.gpu)))
        specs.append(NodeSpec(id=str(row.sn), cpu=float(row.cpu_milli) / 1000.0,
                              ram_gb=float(row.memory_mib) / 1024.0, gpus=gpus))
    if not specs:
        raise InputError("no server with a GPU", field="gpu", source=str(path),
                         fix="pass a node list with GPU servers")
    return Cluster(specs)


__all__ = ["PROBLEMS", "import_trace", "node_list_cluster"]
