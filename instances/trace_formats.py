"""The raw GPU-cluster trace formats, each declared as a
:class:`~dlsched.instances.trace_reader.TraceFormat`: its columns, their units and the
normalized fields they become, and the rows it leaves out.

:func:`read_raw_trace` reads a file in a format with the shared skeleton
(:func:`dlsched.instances.trace_reader.read_trace_file`) into a
:class:`~dlsched.instances.trace_reader.TraceTable`: a data frame with the columns
:func:`dlsched.instances.traces.workload_from_frame` reads (``job_id``, ``submit_time_s``,
``duration_s``, ``num_gpus``; optionally ``cpu``, ``mem_gb``, ``gpu_milli``) plus the job
fields a format may carry (``model``, ``batch_size``, ``iterations``, ``weight``),
together with what happened to every source column, the rows left out on purpose
(CPU-only jobs, jobs that never ran) and the malformed rows skipped.

Time conventions (every submit time ends up in seconds; the workload re-bases them to 0):

=============  ==================================================================
``philly``     ``cluster_job_log`` JSON list; wall-clock times without a zone, read in
               ``tz`` (default ``America/Los_Angeles``: the trace's utilization logs
               are stamped PDT/PST); run time = sum of the attempts' run times
``dirlab``     DIR-LAB cut (Philly, Helios, ... in one layout); ``interval`` = seconds
               since the previous submission, so submit = running sum
``alibaba``    ``openb_pod_list``: seconds since the trace start; run time =
               ``deletion_time − scheduled_time``
``itp``        ElasticFlow raw ``clusterNN.csv``: seconds
``gavel``      10 tab-separated columns, ``arrival_time`` in seconds; run time =
               ``total_steps`` / Gavel's measured V100 steps per second of the job type
               at its scale (``solver/data/gavel_step_rates.json``)
``tiresias``   Tiresias simulator CSV: ``submit_time`` and ``duration`` in seconds
``generic``    any CSV with a column mapping; numbers are seconds, other values are
               date-times (ISO 8601; without a zone they are read in ``tz``, default UTC)
=============  ==================================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from dlsched.errors import InputError

from .trace_reader import (
    Compute,
    LeaveOut,
    Read,
    ReadContext,
    Refuse,
    Row,
    Step,
    TraceFormat,
    TraceTable,
    read_trace_file,
)
from .trace_values import BadRow, timestamp

GENERIC_KEYS = ("id", "submit", "duration", "start", "end", "gpus", "cpu", "mem_gb",
                "gpu_milli", "model", "iterations", "weight")
"""Keys of ``--columns`` for the generic reader (``submit`` and ``gpus`` are required, and
``duration`` or both ``start`` and ``end``)."""


def _no_gpu(row: Row) -> bool:
    return row["num_gpus"] == 0


def _no_run(row: Row) -> bool:
    return row["duration_s"] == 0


def _end_minus_start(row: Row, record: Mapping[str, Any], context: ReadContext) -> float:
    return row["end"] - row["start"]


DIRLAB = TraceFormat(
    name="dirlab",
    steps=(Read("interval", "submit_time_s", "interval"),
           Read("gpu_num", "num_gpus", "count"),
           Read("run_time", "duration_s"),
           Read("cpu_num", "cpu", absent="zero"),
           LeaveOut("no GPU (CPU-only job)", _no_gpu),
           LeaveOut("run_time 0 (never ran)", _no_run),
           Read("u_id", "job_id", "id")),
    report={"u_id": "kept as job id", "interval": "kept: submit = running sum",
            "run_time": "kept as duration", "gpu_num": "kept as num_gpus",
            "cpu_num": "kept as cpu (per job; per GPU in the workload)",
            "user": "dropped: the problems have no user field",
            "node_num": "dropped: placement is the policy's decision",
            "wall_time": "dropped: requested wall time, not used by the problems",
            "new_status": "dropped: final state (failed/killed jobs keep their run time)"})
"""DIR-LAB/Gen-Parallel-Workloads CSV cut (its Philly and Helios cuts share the layout:
``u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status``)."""

ALIBABA = TraceFormat(
    name="alibaba",
    steps=(Read("num_gpu", "num_gpus", "count"),
           Read("gpu_milli", "gpu_milli"),
           Read("creation_time", "submit_time_s", "time"),
           LeaveOut("no GPU (CPU-only pod)", _no_gpu),
           Read("scheduled_time", "start", "time", blank="leave out",
                reason="never scheduled (no scheduled_time)"),
           Read("deletion_time", "end", "time"),
           Refuse("scheduled_time", "before creation_time",
                  lambda row: row["start"] < row["submit_time_s"]),
           LeaveOut("deleted at or before its start (ran 0 s)",
                    lambda row: row["end"] <= row["start"]),
           Refuse("gpu_milli", "{gpu_milli:g} is not in 1..1000",
                  lambda row: row["gpu_milli"] == 0 or row["gpu_milli"] > 1000),
           Compute("duration_s", _end_minus_start),
           Read("cpu_milli", "cpu", per=1000.0, absent="zero"),
           Read("memory_mib", "mem_gb", per=1024.0, absent="zero"),
           Read("name", "job_id", "id")),
    report={"name": "kept as job id", "creation_time": "kept as submit",
            "scheduled_time": "kept: duration = deletion_time − scheduled_time "
            "(the observed wait is dropped: the simulator makes its own)",
            "deletion_time": "kept (duration)", "num_gpu": "kept as num_gpus",
            "gpu_milli": "kept: GPU share (horus: gpu_util and gpu_mem_gb)",
            "cpu_milli": "kept as cpu (cores = milli / 1000)",
            "memory_mib": "kept as mem_gb (MiB / 1024)",
            "gpu_spec": "dropped: no GPU-type constraint in the problems",
            "qos": "dropped: no QoS class in sched2/horus",
            "pod_phase": "dropped: final state (run time kept as recorded)"})
"""Alibaba ``cluster-trace-gpu-v2023`` ``openb_pod_list_*.csv`` (GPU sharing: ``gpu_milli``
thousandths of one GPU)."""

ITP = TraceFormat(
    name="itp",
    steps=(Read("num_gpu", "num_gpus", "count"),
           Read("duration", "duration_s"),
           Read("submission_time", "submit_time_s", "time"),
           LeaveOut("no GPU (CPU-only job)", _no_gpu),
           LeaveOut("duration 0 (never ran)", _no_run),
           Read("job_id", "job_id", "id")),
    report={"job_id": "kept as job id", "submission_time": "kept as submit",
            "duration": "kept as duration", "num_gpu": "kept as num_gpus"},
    unknown="dropped: not part of the ITP raw layout")
"""Microsoft ITP raw trace of ElasticFlow (``job_id,submission_time,duration,num_gpu``)."""

TIRESIAS = TraceFormat(
    name="tiresias",
    steps=(Read("num_gpu", "num_gpus", "count", minimum=1),
           Read("duration", "duration_s"),
           Read("submit_time", "submit_time_s", "time"),
           Read("model_name", "model", "name", absent="omit", blank="omit"),
           Read("iterations", "iterations", "count", absent="omit", blank="omit"),
           LeaveOut("duration 0 (never ran)", _no_run),
           Read("job_id", "job_id", "id")),
    report={"job_id": "kept as job id", "num_gpu": "kept as num_gpus",
            "submit_time": "kept as submit", "duration": "kept as duration",
            "model_name": "kept as model", "iterations": "kept as iterations",
            "interval": "dropped: the gap to the next submission (submit_time has it)"})
"""Tiresias simulator CSV (``job_id,num_gpu,submit_time,iterations,model_name,duration,
interval``)."""


@cache
def gavel_step_rates() -> dict[str, dict[str, float]]:
    """Gavel's measured V100 steps per second.

    Returns
    -------
    dict
        ``{job_type: {str(scale): steps_per_second}}`` (``solver/data/gavel_step_rates.json``).
    """
    text = resources.files("dlsched").joinpath("data/gavel_step_rates.json").read_text()
    return json.loads(text)["v100"]


def gavel_model(job_type: str) -> str:
    """The model name of a Gavel job type.

    Parameters
    ----------
    job_type
        E.g. ``"ResNet-50 (batch size 64)"``.

    Returns
    -------
    str
        E.g. ``"resnet50"`` (lower case, no punctuation, no batch size).
    """
    name = re.sub(r"\s*\(batch size \d+\)", "", job_type)
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _gavel_job(row: Row, record: Mapping[str, Any], context: ReadContext
               ) -> tuple[float, str, int | None]:
    """(run time at Gavel's measured rate, model, batch size) of a Gavel job."""
    job_type = record["job_type"].strip()
    rate = gavel_step_rates().get(job_type, {}).get(str(row["num_gpus"]))
    if not rate:
        raise BadRow("job_type", f"no measured V100 throughput for {job_type!r} on "
                     f"{row['num_gpus']} GPU(s)")
    size = re.search(r"batch size (\d+)", job_type)
    return (round(row["steps"] / rate, 3), gavel_model(job_type),
            int(size.group(1)) if size else None)


GAVEL = TraceFormat(
    name="gavel",
    source="csv", delimiter="\t",
    names=("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
           "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time"),
    steps=(Read("total_steps", "steps", minimum=1),
           Read("scale_factor", "num_gpus", "count", minimum=1),
           Compute(("duration_s", "model", "batch_size"), _gavel_job),
           Read("arrival_time", "submit_time_s", "time"),
           Compute("iterations", lambda row, record, context: int(row["steps"])),
           Read("priority_weight", "weight"),
           Compute("job_id", lambda row, record, context: f"gavel-{context.position:05d}")),
    report={"job_type": "kept as model and batch_size", "total_steps":
            "kept as iterations; duration = steps / V100 steps per second (Gavel's table)",
            "scale_factor": "kept as num_gpus", "priority_weight": "kept as weight",
            "arrival_time": "kept as submit", "SLO": "dropped: no deadline in sched2/horus",
            "command": "dropped: how to launch the job", "working_directory": "dropped",
            "num_steps_arg": "dropped", "needs_data_dir": "dropped"},
    notes=("job ids are gavel-LINE (the format has none)",))
"""Gavel's tab-separated 10-column trace (no header); run time = ``total_steps`` / Gavel's
measured V100 steps per second of the job type at its scale."""

_NO_TIME = (None, "", "None")
_UNCOUNTED = "attempt without start or end time (not counted)"


def _philly_attempts(row: Row, record: Mapping[str, Any], context: ReadContext
                     ) -> list[dict[str, Any]]:
    attempts = record.get("attempts")
    if not isinstance(attempts, list):
        raise BadRow("attempts", "not a list")
    for k, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            raise BadRow(f"attempts[{k}]", "not a JSON object")
    return attempts


def _philly_run(row: Row, record: Mapping[str, Any], context: ReadContext
                ) -> tuple[float, int]:
    """(sum of the attempts' run times, most GPUs of one attempt)."""
    run, gpus = 0.0, 0
    for k, attempt in enumerate(row["attempts"]):
        detail = attempt.get("detail")
        detail = [] if detail is None else detail  # absent or null: no placement recorded
        if not isinstance(detail, list) or not all(
                isinstance(d, dict) and isinstance(d.get("gpus", []), list | type(None))
                and all(isinstance(g, str) for g in d.get("gpus") or []) for d in detail):
            raise BadRow(f"attempts[{k}].detail", "not a list of {ip, gpus: [GPU names]} "
                         "objects")
        gpus = max(gpus, sum(len(d.get("gpus") or []) for d in detail))
        if attempt.get("start_time") in _NO_TIME or attempt.get("end_time") in _NO_TIME:
            context.counts[_UNCOUNTED] += 1
            continue
        start = timestamp(attempt["start_time"], f"attempts[{k}].start_time", context.tz)
        end = timestamp(attempt["end_time"], f"attempts[{k}].end_time", context.tz)
        if end < start:
            raise BadRow(f"attempts[{k}].end_time", "before start_time")
        run += end - start
    return run, gpus


def _philly_notes(rows: list[Row], context: ReadContext) -> list[str]:
    notes = [f"{sum(len(r['attempts']) for r in rows)} attempts in the kept jobs"]
    if context.counts[_UNCOUNTED]:
        notes.append(f"{context.counts[_UNCOUNTED]} attempts without start or end time "
                     "were not counted")
    return notes


PHILLY = TraceFormat(
    name="philly",
    source="json",
    steps=(Read("jobid", "job_id", "id"),
           Read("submitted_time", "submit_time_s", "time"),
           Compute("attempts", _philly_attempts),
           LeaveOut("no scheduling attempt (never ran)", lambda row: not row["attempts"]),
           LeaveOut("still running when the trace was taken (no end_time)",
                    lambda row: row["attempts"][-1].get("end_time") in _NO_TIME),
           Compute(("duration_s", "num_gpus"), _philly_run),
           LeaveOut("no GPU in any attempt", _no_gpu),
           LeaveOut("no attempt with a run time", _no_run)),
    report={"jobid": "kept as job id", "submitted_time": "kept as submit (read in {tz})",
            "attempts": "kept: duration = sum of attempt run times, num_gpus = most GPUs "
            "of an attempt", "attempts[].detail[].ip": "dropped: placement is the "
            "policy's decision", "vc": "dropped: no virtual cluster in the problems",
            "user": "dropped: no user field", "status": "dropped: final state "
            "(failed/killed jobs keep their run time)"},
    unknown="dropped: not in the documented schema",
    tally=_philly_notes,
    default_tz="America/Los_Angeles")
"""Philly ``cluster_job_log`` (a JSON list of jobs with their scheduling attempts).

submit = ``submitted_time``; run time = the sum of the attempts' ``end_time −
start_time`` (an attempt without both times is not counted); GPUs = the most GPUs any
attempt held (the ``gpus`` lists of its ``detail`` entries). A job with no attempt, or
whose last attempt has no ``end_time`` (still running when the trace was taken), is left
out and counted."""

def parse_columns(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"submit=t,duration=d,gpus=g"`` → ``{"submit": "t", ...}``.

    Parameters
    ----------
    spec
        The ``--columns`` text or a mapping; keys among :data:`GENERIC_KEYS`.

    Returns
    -------
    dict of str to str
        Key → column name.

    Raises
    ------
    InputError
        Missing, malformed, an unknown key, or no submit, GPU or run-time column.
    """
    if spec is None or spec == "":
        raise InputError("the generic reader needs a column mapping", field="--columns",
                         fix="pass --columns submit=COL,duration=COL,gpus=COL[,id=COL,...]")
    if isinstance(spec, Mapping):
        pairs = dict(spec)
    else:
        pairs = {}
        for part in spec.split(","):
            key, sep, value = part.partition("=")
            if not sep or not value.strip():
                raise InputError(f"{part!r} is not key=column", field="--columns",
                                 fix="write key=column pairs separated by commas")
            pairs[key.strip()] = value.strip()
    unknown = sorted(set(pairs) - set(GENERIC_KEYS))
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", field="--columns",
                         fix=f"use keys among: {', '.join(GENERIC_KEYS)}")
    if "submit" not in pairs or "gpus" not in pairs:
        raise InputError("submit and gpus are required", field="--columns",
                         fix="add submit=COL and gpus=COL")
    if "duration" not in pairs and not {"start", "end"} <= set(pairs):
        raise InputError("no run time", field="--columns",
                         fix="add duration=COL, or start=COL and end=COL")
    return pairs


def generic_format(columns: str | Mapping[str, str] | None) -> TraceFormat:
    """The generic format of a column mapping (see :func:`parse_columns`). Run time = the
    ``duration`` column, else ``end − start``; every column of the file is reported as
    kept (with its key) or dropped (not mapped).

    Parameters
    ----------
    columns
        The mapping, ``"submit=COL,duration=COL,gpus=COL,..."`` or a dict.

    Returns
    -------
    TraceFormat
    """
    mapping = parse_columns(columns)
    steps: list[Step] = [Read(mapping["gpus"], "num_gpus", "count"),
                         Read(mapping["submit"], "submit_time_s", "time")]
    if "duration" in mapping:
        steps.append(Read(mapping["duration"], "duration_s"))
    else:
        steps += [Read(mapping["start"], "start", "time"), Read(mapping["end"], "end", "time"),
                  Refuse(mapping["end"], "before the start time",
                         lambda row: row["end"] < row["start"]),
                  Compute("duration_s", _end_minus_start)]
    steps += [LeaveOut("no GPU (CPU-only job)", _no_gpu),
              LeaveOut("run time 0 (never ran)", _no_run),
              Read(mapping["id"], "job_id", "id") if "id" in mapping else
              Compute("job_id", lambda row, record, context: f"job-{context.position}")]
    steps += [Read(mapping[key], key, blank="omit")
              for key in ("cpu", "mem_gb", "gpu_milli", "iterations", "weight")
              if key in mapping]
    if "model" in mapping:
        steps.append(Read(mapping["model"], "model", "name", blank="omit"))
    return TraceFormat(
        name="generic", steps=tuple(steps),
        report={column: f"kept as {key}" for key, column in mapping.items()},
        unknown="dropped: not in --columns",
        notes=() if "id" in mapping else ("job ids are job-LINE (no id column mapped)",))


FORMATS: dict[str, TraceFormat] = {
    "philly": PHILLY, "dirlab": DIRLAB, "helios": DIRLAB, "alibaba": ALIBABA, "itp": ITP,
    "elasticflow": ITP, "gavel": GAVEL, "tiresias": TIRESIAS,
}
"""Format name → format, but ``generic`` (:func:`generic_format` of a column mapping).
``helios`` is the DIR-LAB cut layout of SenseTime Helios (the original HeliosData
``cluster_log.csv`` reads with ``generic`` and ``--columns``); ``elasticflow`` is ``itp``."""

FORMAT_NAMES = tuple(sorted([*FORMATS, "generic"]))
"""Every ``FORMAT`` of ``dlsched import-trace``."""


def read_raw_trace(fmt: str, path: str | Path, *, skip_bad: bool = False,
                   tz: str | None = None, columns: str | Mapping[str, str] | None = None
                   ) -> TraceTable:
    """Read ``path`` in format ``fmt`` (one of :data:`FORMAT_NAMES`).

    Parameters
    ----------
    fmt
        Format name.
    path
        The trace file.
    skip_bad
        Skip and count malformed rows instead of stopping at the first.
    tz
        Time zone of date-times without one (default: the format's convention, else UTC).
    columns
        Column mapping of the ``generic`` reader (see :func:`parse_columns`).

    Returns
    -------
    TraceTable

    Raises
    ------
    InputError
        An unknown format or time zone, ``columns`` with a format other than ``generic``,
        or what :func:`~dlsched.instances.trace_reader.read_trace_file` raises.
    """
    if fmt not in FORMAT_NAMES:
        raise InputError(f"unknown trace format {fmt!r}", field="FORMAT",
                         fix=f"use one of: {', '.join(FORMAT_NAMES)}")
    zone = tz or (FORMATS[fmt].default_tz if fmt in FORMATS else "UTC")
    import pandas as pd  # on first use: `dlsched` commands start faster

    try:
        pd.Timestamp("2020-01-01").tz_localize(zone)
    except Exception:  # noqa: BLE001 - any failure means an unknown zone name
        raise InputError(f"unknown time zone {zone!r}", field="--timezone",
                         fix="use an IANA name such as UTC or Asia/Shanghai") from None
    if fmt == "generic":
        spec = generic_format(columns)
    elif columns:
        raise InputError("--columns is only for the generic format", field="--columns",
                         fix="drop --columns or use FORMAT generic")
    else:
        spec = FORMATS[fmt]
    return read_trace_file(spec, Path(path), skip_bad=skip_bad, tz=zone)
