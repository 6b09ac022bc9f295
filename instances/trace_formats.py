"""Readers of raw GPU-cluster trace formats → one table in the common trace columns.

Each reader turns a file as its source publishes it into a :class:`TraceTable`: a data
frame with the columns :func:`dlsched.instances.traces.workload_from_frame` reads
(``job_id``, ``submit_time_s``, ``duration_s``, ``num_gpus``; optionally ``cpu``,
``mem_gb``, ``gpu_milli``) plus the job fields a format may carry (``model``,
``batch_size``, ``iterations``, ``weight``), together with what happened to every source
column (kept as which field, or dropped and why), the rows left out on purpose (CPU-only
jobs, jobs that never ran) and the malformed rows skipped.

A malformed row is an :class:`~dlsched.errors.InputError` naming the file, the line and
the column, unless ``skip_bad=True``: then it is skipped and counted.

Time conventions (every submit time ends up in seconds; the workload re-bases them to 0):

=============  ==================================================================
``philly``     ``cluster_job_log`` JSON; wall-clock times without a zone, read in
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

import csv
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

COMMON = ("job_id", "submit_time_s", "duration_s", "num_gpus")
OPTIONAL = ("cpu", "mem_gb", "gpu_milli", "model", "batch_size", "iterations", "weight")
GENERIC_KEYS = ("id", "submit", "duration", "start", "end", "gpus", "cpu", "mem_gb",
                "gpu_milli", "model", "iterations", "weight")
"""Keys of ``--columns`` for the generic reader (``submit`` and ``gpus`` are required, and
``duration`` or both ``start`` and ``end``)."""


@dataclass
class TraceTable:
    """What a reader returns.

    Attributes
    ----------
    frame
        One row per kept job, in the common columns (see the module docstring).
    format
        The reader's name.
    columns
        Source column → what became of it (``"kept as submit_time_s"`` or
        ``"dropped: reason"``).
    excluded
        Reason → number of rows left out on purpose (not errors).
    skipped
        Reason → number of malformed rows skipped (``skip_bad=True`` only).
    first_skipped
        Line numbers of the first skipped rows (at most 5).
    notes
        Further statements about the conversion.
    """

    frame: pd.DataFrame
    format: str
    columns: dict[str, str]
    excluded: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    first_skipped: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class BadRow(Exception):
    """A malformed value: the column and what is wrong with it."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column = column
        self.message = message


class _Collector:
    """Collects parsed rows; a bad row raises InputError or is counted (``skip_bad``)."""

    def __init__(self, path: Path, skip_bad: bool) -> None:
        self.path, self.skip_bad = path, skip_bad
        self.rows: list[dict[str, Any]] = []
        self.excluded: Counter = Counter()
        self.skipped: Counter = Counter()
        self.first_skipped: list[int] = []

    def add(self, line: int, parse: Callable[[], dict[str, Any] | str]) -> None:
        try:
            row = parse()
        except BadRow as bad:
            if not self.skip_bad:
                raise InputError(f"line {line}: {bad.message}", field=bad.column,
                                 fix="fix or delete the row, or pass --skip-bad-rows",
                                 source=str(self.path)) from None
            self.skipped[f"{bad.column}: {bad.message}"] += 1
            if len(self.first_skipped) < 5:
                self.first_skipped.append(line)
            return
        if isinstance(row, str):  # a reason to leave the row out
            self.excluded[row] += 1
        else:
            self.rows.append(row)

    def table(self, fmt: str, columns: dict[str, str], notes: list[str] | None = None
              ) -> TraceTable:
        import pandas as pd

        if not self.rows:
            raise InputError("no job left to import", field="(rows)",
                             fix="check the format name and the file; excluded: "
                             + (", ".join(f"{k} ({v})" for k, v in self.excluded.items())
                                or "none") + (f"; skipped {sum(self.skipped.values())}"
                                              if self.skipped else ""),
                             source=str(self.path))
        frame = pd.DataFrame(self.rows)
        frame["job_id"] = frame["job_id"].astype(str)
        dup = frame["job_id"].duplicated()
        if dup.any():
            raise InputError(f"job id {frame['job_id'][dup].iloc[0]!r} appears twice",
                             field="job_id", fix="job ids must be unique",
                             source=str(self.path))
        return TraceTable(frame=frame, format=fmt, columns=columns, excluded=self.excluded,
                          skipped=self.skipped, first_skipped=self.first_skipped,
                          notes=notes or [])


# --- value parsers -------------------------------------------------------------------------


MAX_VALUE = float(2**53)
"""Largest magnitude of a number in a trace (as in instance files: every integer up to it
is exact as a float)."""


def number(value: Any, column: str, *, minimum: float | None = None,
           integer: bool = False) -> float:
    """``value`` as a finite number.

    Parameters
    ----------
    value
        The field as read.
    column
        Its column (named in the error).
    minimum
        Smallest value allowed.
    integer
        Require a whole number.

    Returns
    -------
    float

    Raises
    ------
    BadRow
        Empty, not a number, not finite, not whole, or below ``minimum``.
    """
    text = str(value).strip() if value is not None else ""
    if text == "":
        raise BadRow(column, "empty value")
    try:
        x = float(text)
    except ValueError:
        raise BadRow(column, f"{text!r} is not a number") from None
    if not math.isfinite(x):
        raise BadRow(column, f"{text!r} is not finite")
    if abs(x) > MAX_VALUE:
        raise BadRow(column, f"{text[:30]!r} is larger in magnitude than 2**53")
    if integer and x != int(x):
        raise BadRow(column, f"{text!r} is not a whole number")
    if minimum is not None and x < minimum:
        raise BadRow(column, f"{text!r} is below {minimum:g}")
    return x


def timestamp(value: Any, column: str, tz: str) -> float:
    """Seconds: a number as is, else a date-time (ISO 8601) read in ``tz`` when it has no
    zone of its own, as seconds since the Unix epoch. Ambiguous wall-clock times (the
    hour repeated when daylight saving time ends) are read as daylight time; times that
    do not exist (skipped at its start) are moved forward.

    Parameters
    ----------
    value
        The field as read.
    column
        Its column (named in the error).
    tz
        IANA zone name for date-times without a zone.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    BadRow
        Empty, or neither a number nor a date-time.
    """
    text = str(value).strip() if value is not None else ""
    if text == "":
        raise BadRow(column, "empty time")
    try:
        seconds = (float(text) if re.fullmatch(r"[-+]?\d+(\.\d*)?", text)
                   else _datetime(text, tz))
    except (ValueError, TypeError, OverflowError):
        raise BadRow(column, f"{text!r} is not seconds or a date-time") from None
    if abs(seconds) > MAX_VALUE:
        raise BadRow(column, f"{text[:30]!r} is larger in magnitude than 2**53 seconds")
    return seconds


def _datetime(text: str, tz: str) -> float:
    import pandas as pd

    stamp = pd.Timestamp(text)
    if stamp is pd.NaT:
        raise ValueError(text)
    if stamp.tzinfo is None:
        stamp = stamp.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
    return stamp.timestamp()


def _csv_rows(path: Path, *, delimiter: str = ",", header: bool = True,
              required: tuple[str, ...] = ()) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """(header, iterator of (line number, fields)) of a CSV file."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(path)) from None
    except OSError as exc:  # a directory, no permission, ...
        raise InputError(f"cannot read: {exc.strerror or exc}", field="(file)",
                         fix="pass a CSV file", source=str(path)) from None
    reader = csv.reader(handle, delimiter=delimiter)
    names: list[str] = []
    if header:
        try:
            names = [n.strip() for n in next(reader)]
        except StopIteration:
            raise InputError("empty file", fix="pass a CSV file with a header row",
                             source=str(path)) from None
        except (csv.Error, UnicodeDecodeError) as exc:
            handle.close()
            raise InputError(f"line 1: {exc}", field="(header)", fix="pass a UTF-8 CSV file",
                             source=str(path)) from None
        missing = [c for c in required if c not in names]
        if missing:
            raise InputError(f"no column {missing[0]!r} (header: {', '.join(names)})",
                             field="(header)", fix="pass the file in this format, or use the "
                             "generic reader with --columns", source=str(path))

    def rows() -> Iterator[tuple[int, list[str]]]:
        with handle:
            try:
                for fields in reader:
                    if fields and any(f.strip() for f in fields):
                        yield reader.line_num, fields
            except (csv.Error, UnicodeDecodeError) as exc:
                raise InputError(f"line {reader.line_num}: {exc}", field="(file)",
                                 fix="pass a UTF-8 CSV file", source=str(path)) from None
    return names, rows()


def _record(names: list[str], fields: list[str]) -> dict[str, str]:
    if len(fields) != len(names):
        raise BadRow("(row)", f"{len(fields)} fields, the header has {len(names)}")
    return dict(zip(names, fields, strict=True))


# --- readers -------------------------------------------------------------------------------


def read_dirlab(path: Path, *, skip_bad: bool = False, tz: str = "UTC") -> TraceTable:
    """DIR-LAB/Gen-Parallel-Workloads CSV cut (its Philly and Helios cuts share the layout:
    ``u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status``).

    Parameters
    ----------
    path
        The file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one (unused: this format's times are
        relative seconds).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        A missing file or column, or (without ``skip_bad``) a malformed row: the message
        names the line and the column.
    """
    names, rows = _csv_rows(path, required=("u_id", "gpu_num", "interval", "run_time"))
    out = _Collector(path, skip_bad)
    clock = [0.0]

    def parse(rec: dict[str, str]) -> dict[str, Any] | str:
        gap = number(rec["interval"], "interval", minimum=0)
        clock[0] += gap  # the gap counts even when the row itself is left out
        gpus = number(rec["gpu_num"], "gpu_num", minimum=0, integer=True)
        run = number(rec["run_time"], "run_time", minimum=0)
        cpu = number(rec["cpu_num"], "cpu_num", minimum=0) if "cpu_num" in rec else 0.0
        if gpus == 0:
            return "no GPU (CPU-only job)"
        if run == 0:
            return "run_time 0 (never ran)"
        return {"job_id": rec["u_id"].strip(), "submit_time_s": clock[0], "duration_s": run,
                "num_gpus": int(gpus), "cpu": cpu}

    for line, fields in rows:
        out.add(line, lambda f=fields: parse(_record(names, f)))
    columns = {"u_id": "kept as job id", "interval": "kept: submit = running sum",
               "run_time": "kept as duration", "gpu_num": "kept as num_gpus",
               "cpu_num": "kept as cpu (per job; per GPU in the workload)",
               "user": "dropped: the problems have no user field",
               "node_num": "dropped: placement is the policy's decision",
               "wall_time": "dropped: requested wall time, not used by the problems",
               "new_status": "dropped: final state (failed/killed jobs keep their run time)"}
    return out.table("dirlab", _only(columns, names))


def read_alibaba(path: Path, *, skip_bad: bool = False, tz: str = "UTC") -> TraceTable:
    """Alibaba ``cluster-trace-gpu-v2023`` ``openb_pod_list_*.csv`` (GPU sharing:
    ``gpu_milli`` thousandths of one GPU).

    Parameters
    ----------
    path
        The file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one (this format's times are seconds
        since the trace start).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        A missing file or column, or (without ``skip_bad``) a malformed row: the message
        names the line and the column.
    """
    names, rows = _csv_rows(path, required=("name", "num_gpu", "gpu_milli", "creation_time",
                                            "deletion_time", "scheduled_time"))
    out = _Collector(path, skip_bad)

    def parse(rec: dict[str, str]) -> dict[str, Any] | str:
        gpus = number(rec["num_gpu"], "num_gpu", minimum=0, integer=True)
        milli = number(rec["gpu_milli"], "gpu_milli", minimum=0)
        created = timestamp(rec["creation_time"], "creation_time", tz)
        if gpus == 0:
            return "no GPU (CPU-only pod)"
        if rec["scheduled_time"].strip() == "":
            return "never scheduled (no scheduled_time)"
        started = timestamp(rec["scheduled_time"], "scheduled_time", tz)
        ended = timestamp(rec["deletion_time"], "deletion_time", tz)
        if started < created:
            raise BadRow("scheduled_time", "before creation_time")
        if ended <= started:
            return "deleted at or before its start (ran 0 s)"
        if milli == 0 or milli > 1000:
            raise BadRow("gpu_milli", f"{milli:g} is not in 1..1000")
        return {"job_id": rec["name"].strip(), "submit_time_s": created,
                "duration_s": ended - started, "num_gpus": int(gpus),
                "cpu": number(rec.get("cpu_milli", "0"), "cpu_milli", minimum=0) / 1000.0,
                "mem_gb": number(rec.get("memory_mib", "0"), "memory_mib", minimum=0) / 1024.0,
                "gpu_milli": milli}

    for line, fields in rows:
        out.add(line, lambda f=fields: parse(_record(names, f)))
    columns = {"name": "kept as job id", "creation_time": "kept as submit",
               "scheduled_time": "kept: duration = deletion_time − scheduled_time "
               "(the observed wait is dropped: the simulator makes its own)",
               "deletion_time": "kept (duration)", "num_gpu": "kept as num_gpus",
               "gpu_milli": "kept: GPU share (horus: gpu_util and gpu_mem_gb)",
               "cpu_milli": "kept as cpu (cores = milli / 1000)",
               "memory_mib": "kept as mem_gb (MiB / 1024)",
               "gpu_spec": "dropped: no GPU-type constraint in the problems",
               "qos": "dropped: no QoS class in sched2/horus",
               "pod_phase": "dropped: final state (run time kept as recorded)"}
    return out.table("alibaba", _only(columns, names))


def read_itp(path: Path, *, skip_bad: bool = False, tz: str = "UTC") -> TraceTable:
    """Microsoft ITP raw trace of ElasticFlow (``job_id,submission_time,duration,num_gpu``).

    Parameters
    ----------
    path
        The file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one (this format's times are seconds).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        A missing file or column, or (without ``skip_bad``) a malformed row: the message
        names the line and the column.
    """
    names, rows = _csv_rows(path, required=("job_id", "submission_time", "duration", "num_gpu"))
    out = _Collector(path, skip_bad)

    def parse(rec: dict[str, str]) -> dict[str, Any] | str:
        gpus = number(rec["num_gpu"], "num_gpu", minimum=0, integer=True)
        run = number(rec["duration"], "duration", minimum=0)
        submit = timestamp(rec["submission_time"], "submission_time", tz)
        if gpus == 0:
            return "no GPU (CPU-only job)"
        if run == 0:
            return "duration 0 (never ran)"
        return {"job_id": rec["job_id"].strip(), "submit_time_s": submit, "duration_s": run,
                "num_gpus": int(gpus)}

    for line, fields in rows:
        out.add(line, lambda f=fields: parse(_record(names, f)))
    columns = {"job_id": "kept as job id", "submission_time": "kept as submit",
               "duration": "kept as duration", "num_gpu": "kept as num_gpus"}
    extra = {n: "dropped: not part of the ITP raw layout" for n in names if n not in columns}
    return out.table("itp", {**columns, **extra})


GAVEL_COLUMNS = ("job_type", "command", "working_directory", "num_steps_arg",
                 "needs_data_dir", "total_steps", "scale_factor", "priority_weight", "SLO",
                 "arrival_time")


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


def read_gavel(path: Path, *, skip_bad: bool = False, tz: str = "UTC") -> TraceTable:
    """Gavel's tab-separated 10-column trace (no header).

    Parameters
    ----------
    path
        The file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one (this format's times are seconds).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        A missing file or column, or (without ``skip_bad``) a malformed row: the message
        names the line and the column.
    """
    _, rows = _csv_rows(path, delimiter="\t", header=False)
    out = _Collector(path, skip_bad)
    rates = gavel_step_rates()

    def parse(line: int, fields: list[str]) -> dict[str, Any]:
        if len(fields) != len(GAVEL_COLUMNS):
            raise BadRow("(row)", f"{len(fields)} tab-separated fields, Gavel traces have 10")
        rec = dict(zip(GAVEL_COLUMNS, fields, strict=True))
        steps = number(rec["total_steps"], "total_steps", minimum=1)
        scale = int(number(rec["scale_factor"], "scale_factor", minimum=1, integer=True))
        job_type = rec["job_type"].strip()
        rate = rates.get(job_type, {}).get(str(scale))
        if not rate:
            raise BadRow("job_type", f"no measured V100 throughput for {job_type!r} on "
                         f"{scale} GPU(s)")
        size = re.search(r"batch size (\d+)", job_type)
        return {"job_id": f"gavel-{line:05d}", "submit_time_s":
                timestamp(rec["arrival_time"], "arrival_time", tz),
                "duration_s": round(steps / rate, 3), "num_gpus": scale,
                "model": gavel_model(job_type),
                "batch_size": int(size.group(1)) if size else None,
                "iterations": int(steps),
                "weight": number(rec["priority_weight"], "priority_weight", minimum=0)}

    for line, fields in rows:
        out.add(line, lambda n=line, f=fields: parse(n, f))
    columns = {"job_type": "kept as model and batch_size", "total_steps":
               "kept as iterations; duration = steps / V100 steps per second (Gavel's table)",
               "scale_factor": "kept as num_gpus", "priority_weight": "kept as weight",
               "arrival_time": "kept as submit", "SLO": "dropped: no deadline in sched2/horus",
               "command": "dropped: how to launch the job", "working_directory": "dropped",
               "num_steps_arg": "dropped", "needs_data_dir": "dropped"}
    return out.table("gavel", columns, ["job ids are gavel-LINE (the format has none)"])


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


def read_tiresias(path: Path, *, skip_bad: bool = False, tz: str = "UTC") -> TraceTable:
    """Tiresias simulator CSV (``job_id,num_gpu,submit_time,iterations,model_name,duration,
    interval``).

    Parameters
    ----------
    path
        The file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one (this format's times are seconds).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        A missing file or column, or (without ``skip_bad``) a malformed row: the message
        names the line and the column.
    """
    names, rows = _csv_rows(path, required=("job_id", "num_gpu", "submit_time", "duration"))
    out = _Collector(path, skip_bad)

    def parse(rec: dict[str, str]) -> dict[str, Any] | str:
        gpus = number(rec["num_gpu"], "num_gpu", minimum=1, integer=True)
        run = number(rec["duration"], "duration", minimum=0)
        row: dict[str, Any] = {
            "job_id": rec["job_id"].strip(),
            "submit_time_s": timestamp(rec["submit_time"], "submit_time", tz),
            "duration_s": run, "num_gpus": int(gpus)}
        if "model_name" in rec and rec["model_name"].strip():
            row["model"] = rec["model_name"].strip().lower()
        if "iterations" in rec and rec["iterations"].strip():
            row["iterations"] = int(number(rec["iterations"], "iterations", minimum=0,
                                           integer=True))
        return row if run > 0 else "duration 0 (never ran)"

    for line, fields in rows:
        out.add(line, lambda f=fields: parse(_record(names, f)))
    columns = {"job_id": "kept as job id", "num_gpu": "kept as num_gpus",
               "submit_time": "kept as submit", "duration": "kept as duration",
               "model_name": "kept as model", "iterations": "kept as iterations",
               "interval": "dropped: the gap to the next submission (submit_time has it)"}
    return out.table("tiresias", _only(columns, names))


def read_philly(path: Path, *, skip_bad: bool = False, tz: str = "America/Los_Angeles"
                ) -> TraceTable:
    """Philly ``cluster_job_log`` (a JSON list of jobs with their scheduling attempts).

    submit = ``submitted_time``; run time = the sum of the attempts' ``end_time −
    start_time`` (an attempt without both times is not counted); GPUs = the most GPUs any
    attempt held (the ``gpus`` lists of its ``detail`` entries). A job with no attempt,
    or whose last attempt has no ``end_time`` (still running when the trace was taken),
    is left out and counted.

    Parameters
    ----------
    path
        The file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of the wall-clock date-times (default America/Los_Angeles).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        A missing file or column, or (without ``skip_bad``) a malformed row: the message
        names the line and the column.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}"[:200], field="(file)",
                         fix="pass a UTF-8 JSON file", source=str(path)) from None
    out = _Collector(path, skip_bad)
    counts: Counter = Counter()
    extra: set[str] = set()

    def parse(job: Any) -> dict[str, Any] | str:
        if not isinstance(job, dict):
            raise BadRow("(entry)", "not a JSON object")
        extra.update(k for k in job if k not in PHILLY_KEYS)
        if not job.get("jobid"):
            raise BadRow("jobid", "missing")
        submit = timestamp(job.get("submitted_time"), "submitted_time", tz)
        attempts = job.get("attempts")
        if not isinstance(attempts, list):
            raise BadRow("attempts", "not a list")
        if not attempts:
            return "no scheduling attempt (never ran)"
        if attempts[-1].get("end_time") in (None, "", "None"):
            return "still running when the trace was taken (no end_time)"
        run, gpus = 0.0, 0
        for k, att in enumerate(attempts):
            detail = att.get("detail") or []
            if not isinstance(detail, list):
                raise BadRow(f"attempts[{k}].detail", "not a list")
            gpus = max(gpus, sum(len(d.get("gpus") or []) for d in detail))
            if att.get("start_time") in (None, "", "None") or att.get("end_time") in (
                    None, "", "None"):
                counts["attempt without start or end time (not counted)"] += 1
                continue
            start = timestamp(att["start_time"], f"attempts[{k}].start_time", tz)
            end = timestamp(att["end_time"], f"attempts[{k}].end_time", tz)
            if end < start:
                raise BadRow(f"attempts[{k}].end_time", "before start_time")
            run += end - start
        if gpus == 0:
            return "no GPU in any attempt"
        if run == 0:
            return "no attempt with a run time"
        counts["attempts"] += len(attempts)
        return {"job_id": str(job["jobid"]), "submit_time_s": submit, "duration_s": run,
                "num_gpus": gpus}

    for line, job in _json_entries(text, path):
        out.add(line, lambda j=job: parse(j))
    columns = {"jobid": "kept as job id", "submitted_time": f"kept as submit (read in {tz})",
               "attempts": "kept: duration = sum of attempt run times, num_gpus = most GPUs "
               "of an attempt", "attempts[].detail[].ip": "dropped: placement is the "
               "policy's decision", "vc": "dropped: no virtual cluster in the problems",
               "user": "dropped: no user field", "status": "dropped: final state "
               "(failed/killed jobs keep their run time)"}
    columns.update({k: "dropped: not in the documented schema" for k in sorted(extra)})
    notes = [f"{counts['attempts']} attempts in the kept jobs"]
    if counts["attempt without start or end time (not counted)"]:
        notes.append(f"{counts['attempt without start or end time (not counted)']} attempts "
                     "without start or end time were not counted")
    return out.table("philly", columns, notes)


PHILLY_KEYS = ("jobid", "submitted_time", "attempts", "vc", "user", "status")


def _json_entries(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """(line, entry) of a JSON list (or of one JSON object per line)."""
    decoder = json.JSONDecoder()
    pos = len(text) - len(text.lstrip())
    array = text.startswith("[", pos)
    pos += 1 if array else 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or (array and text[pos] == "]"):
            return
        line = text.count("\n", 0, pos) + 1
        try:
            entry, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(f"line {exc.lineno}: malformed JSON: {exc.msg}", field="(file)",
                             fix="fix the JSON syntax", source=str(path)) from None
        yield line, entry


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


def read_generic(path: Path, *, columns: str | Mapping[str, str] | None = None,
                 skip_bad: bool = False, tz: str = "UTC", delimiter: str = ",") -> TraceTable:
    """Any CSV, through a column mapping (see :func:`parse_columns`). Run time = the
    ``duration`` column, else ``end − start``.

    Parameters
    ----------
    path
        The CSV file (header row).
    columns
        The mapping, ``"submit=COL,duration=COL,gpus=COL,..."`` or a dict
        (:func:`parse_columns`).
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one.
    delimiter
        Field separator.

    Returns
    -------
    TraceTable
        The kept jobs; every column of the file is listed as kept (with its key) or
        dropped (not mapped).
    """
    mapping = parse_columns(columns)
    names, rows = _csv_rows(path, delimiter=delimiter, required=tuple(mapping.values()))
    out = _Collector(path, skip_bad)
    target = {"cpu": "cpu", "mem_gb": "mem_gb", "gpu_milli": "gpu_milli",
              "iterations": "iterations", "weight": "weight"}

    def parse(line: int, rec: dict[str, str]) -> dict[str, Any] | str:
        col = mapping.get
        gpus = number(rec[mapping["gpus"]], mapping["gpus"], minimum=0, integer=True)
        submit = timestamp(rec[mapping["submit"]], mapping["submit"], tz)
        if "duration" in mapping:
            run = number(rec[mapping["duration"]], mapping["duration"], minimum=0)
        else:
            start = timestamp(rec[mapping["start"]], mapping["start"], tz)
            end = timestamp(rec[mapping["end"]], mapping["end"], tz)
            if end < start:
                raise BadRow(mapping["end"], "before the start time")
            run = end - start
        if gpus == 0:
            return "no GPU (CPU-only job)"
        if run == 0:
            return "run time 0 (never ran)"
        row: dict[str, Any] = {"job_id": rec[col("id")].strip() if col("id") else f"job-{line}",
                               "submit_time_s": submit, "duration_s": run,
                               "num_gpus": int(gpus)}
        for key, name in target.items():
            if col(key) and rec[col(key)].strip():
                row[name] = number(rec[col(key)], col(key), minimum=0)
        if col("model") and rec[col("model")].strip():
            row["model"] = rec[col("model")].strip().lower()
        return row

    for line, fields in rows:
        out.add(line, lambda n=line, f=fields: parse(n, _record(names, f)))
    used = {v: f"kept as {k}" for k, v in mapping.items()}
    columns_out = {n: used.get(n, "dropped: not in --columns") for n in names}
    notes = [] if "id" in mapping else ["job ids are job-LINE (no id column mapped)"]
    return out.table("generic", columns_out, notes)


def _only(columns: dict[str, str], names: list[str]) -> dict[str, str]:
    """The statements for the columns the file has, plus any unknown column as dropped."""
    out = {k: v for k, v in columns.items() if k in names}
    out.update({n: "dropped: not part of this format" for n in names if n not in columns})
    return out


READERS: dict[str, Callable[..., TraceTable]] = {
    "philly": read_philly, "dirlab": read_dirlab, "helios": read_dirlab,
    "alibaba": read_alibaba, "itp": read_itp, "elasticflow": read_itp, "gavel": read_gavel,
    "tiresias": read_tiresias, "generic": read_generic,
}
"""Format name → reader. ``helios`` is the DIR-LAB cut layout of SenseTime Helios (the
original HeliosData ``cluster_log.csv`` reads with ``generic`` and ``--columns``);
``elasticflow`` is ``itp``."""

DEFAULT_TZ = {"philly": "America/Los_Angeles"}


def read_raw_trace(fmt: str, path: str | Path, *, skip_bad: bool = False,
                   tz: str | None = None, columns: str | Mapping[str, str] | None = None
                   ) -> TraceTable:
    """Read ``path`` in format ``fmt`` (a key of :data:`READERS`).

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
    """
    import pandas as pd

    if fmt not in READERS:
        raise InputError(f"unknown trace format {fmt!r}", field="FORMAT",
                         fix=f"use one of: {', '.join(sorted(READERS))}")
    zone = tz or DEFAULT_TZ.get(fmt, "UTC")
    try:
        pd.Timestamp("2020-01-01").tz_localize(zone)
    except Exception:  # noqa: BLE001 - any failure means an unknown zone name
        raise InputError(f"unknown time zone {zone!r}", field="--timezone",
                         fix="use an IANA name such as UTC or Asia/Shanghai") from None
    path = Path(path)
    if fmt == "generic":
        return read_generic(path, columns=columns, skip_bad=skip_bad, tz=zone)
    if columns:
        raise InputError("--columns is only for the generic format", field="--columns",
                         fix="drop --columns or use FORMAT generic")
    return READERS[fmt](path, skip_bad=skip_bad, tz=zone)
