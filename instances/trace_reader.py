"""The one skeleton every trace reader runs: a format declares its columns, and this reads.

A :class:`TraceFormat` states how its file is laid out (CSV with a header, a headerless
delimited file, or a JSON list of job objects) and, as ordered steps, how a record becomes
a row of the common columns (:data:`FIELDS`):

* :class:`Read`: a source column → a normalized field, with its kind (id, count, number,
  time, ...), its smallest value, its unit (the field is the value divided by ``per``) and
  what to do when the column is absent or the value blank;
* :class:`LeaveOut`: a rule that leaves the row out on purpose (counted by reason);
* :class:`Refuse`: a rule that makes the row malformed (a :class:`BadRow`);
* :class:`Compute`: a field computed from what was read (e.g. ``end − start``).

:func:`read_trace_file` opens the file within the shared limits (JSON through
:func:`dlsched.files.read_json`), runs the steps on every record, and returns a
:class:`TraceTable` with the per-column report (the format's statement for each column the
file has; any other column dropped), the rows left out and the malformed rows. A malformed
row is an :class:`~dlsched.errors.InputError` naming the file, the line (entry for JSON)
and the column, unless ``skip_bad``: then it is skipped and counted.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dlsched.errors import InputError
from dlsched.files import MAX_BYTES, read_json

from .trace_values import BadRow, number, timestamp

if TYPE_CHECKING:  # pandas loads on first read: `dlsched` commands start faster
    import pandas as pd

FIELDS = ("job_id", "submit_time_s", "duration_s", "num_gpus", "cpu", "mem_gb", "gpu_milli",
          "model", "batch_size", "iterations", "weight")
"""The common columns of a :class:`TraceTable` frame, in this order; the first four are in
every row. Other fields the steps set are working values, not kept."""

Row = dict[str, Any]


@dataclass
class TraceTable:
    """What a reader returns.

    Attributes
    ----------
    frame
        One row per kept job, in the common columns (:data:`FIELDS`).
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
        Positions (see ``unit``) of the first skipped rows (at most 5).
    notes
        Further statements about the conversion.
    unit
        What a row's position counts: ``"line"`` of a text file, ``"entry"`` of a JSON list.
    """

    frame: pd.DataFrame
    format: str
    columns: dict[str, str]
    excluded: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    first_skipped: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unit: str = "line"


@dataclass
class ReadContext:
    """State of one read that steps may use: the time zone, the record's position, the
    running clock of ``interval`` columns and counters for the format's notes."""

    tz: str
    position: int = 0
    clock: float = 0.0
    counts: Counter = field(default_factory=Counter)


Kind = Literal["id", "name", "number", "count", "time", "interval"]


@dataclass(frozen=True)
class Read:
    """A source column read as a normalized field.

    Attributes
    ----------
    column
        The source column (JSON: key of the job object).
    field
        The field it sets (one of :data:`FIELDS`, or a working value for later steps).
    kind
        ``id`` (text, required non-blank), ``name`` (text, lower case), ``number``,
        ``count`` (a whole number, as int), ``time`` (seconds, or a date-time read in the
        read's time zone) or ``interval`` (seconds since the previous record: the field is
        the running sum, which records left out or skipped later in their steps still
        advance).
    minimum
        Smallest value of a ``number``, ``count`` or ``interval``.
    per
        Unit conversion of a ``number``: the field is the value divided by ``per``
        (e.g. 1000 for thousandths of a core).
    absent
        When the file lacks the column: ``"required"`` (its header must have it),
        ``"zero"`` (the field is 0) or ``"omit"`` (the field is not set).
    blank
        When the value is blank: ``"refuse"`` (a malformed row), ``"omit"`` (the field is
        not set) or ``"leave out"`` (the row is left out, counted under ``reason``).
    reason
        Why a row with a blank value is left out (``blank="leave out"``).
    """

    column: str
    field: str
    kind: Kind = "number"
    minimum: float | None = 0.0
    per: float = 1.0
    absent: Literal["required", "zero", "omit"] = "required"
    blank: Literal["refuse", "omit", "leave out"] = "refuse"
    reason: str = ""


@dataclass(frozen=True)
class LeaveOut:
    """Leave the row out, counted under ``reason``, when ``when(row)`` holds."""

    reason: str
    when: Callable[[Row], bool]


@dataclass(frozen=True)
class Refuse:
    """The row is malformed (column ``column``, ``message`` formatted with the row's fields)
    when ``when(row)`` holds."""

    column: str
    message: str
    when: Callable[[Row], bool]


@dataclass(frozen=True)
class Compute:
    """Set ``field`` (or several fields, from a tuple) to ``value(row, record, context)``;
    ``value`` may raise :class:`BadRow`."""

    field: str | tuple[str, ...]
    value: Callable[[Row, Mapping[str, Any], ReadContext], Any]


Step = Read | LeaveOut | Refuse | Compute


@dataclass(frozen=True)
class TraceFormat:
    """A trace format: its layout, its steps and what becomes of each of its columns.

    Attributes
    ----------
    name
        The format's name (the ``FORMAT`` of ``dlsched import-trace``).
    steps
        How a record becomes a row, in order (:class:`Read`, :class:`LeaveOut`,
        :class:`Refuse`, :class:`Compute`).
    report
        Source column → what becomes of it, for the per-column report (in this order;
        ``{tz}`` in a statement is replaced by the read's time zone).
    source
        ``"csv"``: a delimited text file; ``"json"``: a JSON list of job objects.
    delimiter
        Field separator of a ``csv`` source.
    names
        The column names of a headerless ``csv`` source (``None``: a header row names them).
    unknown
        The statement for a column (JSON: a key) the format does not know.
    notes
        Statements added to every read.
    tally
        Further notes from the kept rows and the read's counters.
    default_tz
        Zone of date-times without one, unless the caller names another.
    """

    name: str
    steps: tuple[Step, ...]
    report: Mapping[str, str]
    source: Literal["csv", "json"] = "csv"
    delimiter: str = ","
    names: tuple[str, ...] | None = None
    unknown: str = "dropped: not part of this format"
    notes: tuple[str, ...] = ()
    tally: Callable[[list[Row], ReadContext], list[str]] | None = None
    default_tz: str = "UTC"

    @property
    def required(self) -> tuple[str, ...]:
        """Columns a header must have."""
        return tuple(s.column for s in self.steps
                     if isinstance(s, Read) and s.absent == "required")


def read_trace_file(spec: TraceFormat, path: Path, *, skip_bad: bool = False,
                    tz: str | None = None) -> TraceTable:
    """Read ``path`` in the format ``spec``.

    Parameters
    ----------
    spec
        The format.
    path
        The trace file.
    skip_bad
        Skip and count malformed rows instead of raising at the first.
    tz
        Zone of date-times written without one (default: the format's).

    Returns
    -------
    TraceTable
        The kept jobs, what became of each column, the rows left out and skipped.

    Raises
    ------
    InputError
        The file cannot be read, lacks a column, holds no job to keep, repeats a job id,
        or (without ``skip_bad``) has a malformed row: the message names the line (JSON:
        the entry) and the column.
    """
    context = ReadContext(tz=tz or spec.default_tz)
    unit = "entry" if spec.source == "json" else "line"
    out = _Collector(path, skip_bad, unit)
    if spec.source == "json":
        keys: set[str] = set()
        for position, entry in _json_entries(path):
            if isinstance(entry, dict):
                keys.update(k for k in entry if k not in spec.report)
            context.position = position
            out.add(position, lambda e=entry: _row(spec, _object(e), context))
        columns = {**spec.report, **{k: spec.unknown for k in sorted(keys)}}
    else:
        names, rows = _csv_rows(path, spec)
        for position, fields in rows:
            context.position = position
            out.add(position, lambda f=fields: _row(spec, _record(spec, names, f), context))
        columns = {k: v for k, v in spec.report.items() if k in names}
        columns.update({n: spec.unknown for n in names if n not in spec.report})
    columns = {k: v.replace("{tz}", context.tz) for k, v in columns.items()}
    notes = [*spec.notes, *(spec.tally(out.rows, context) if spec.tally else [])]
    return out.table(spec.name, columns, notes)


def _row(spec: TraceFormat, record: Mapping[str, Any], context: ReadContext) -> Row | str:
    """The row of one record, or the reason it is left out; raises :class:`BadRow`."""
    row: Row = {}
    for step in spec.steps:
        if isinstance(step, Read):
            if step.column not in record and step.absent != "required":
                if step.absent == "zero":
                    row[step.field] = 0.0
                continue
            value = record.get(step.column)
            if value is None or (isinstance(value, str) and not value.strip()):
                if step.blank == "omit":
                    continue
                if step.blank == "leave out":
                    return step.reason
            row[step.field] = _value(step, value, context)
        elif isinstance(step, LeaveOut):
            if step.when(row):
                return step.reason
        elif isinstance(step, Refuse):
            if step.when(row):
                raise BadRow(step.column, step.message.format(**row))
        elif isinstance(step.field, tuple):
            row.update(zip(step.field, step.value(row, record, context), strict=True))
        else:
            row[step.field] = step.value(row, record, context)
    return row


def _value(step: Read, value: Any, context: ReadContext) -> Any:
    column, kind = step.column, step.kind
    if isinstance(value, dict | list | bool):  # a JSON trace holds text or numbers here
        raise BadRow(column, f"{type(value).__name__} where "
                     f"{'a date-time' if kind == 'time' else 'text or a number'} belongs")
    if kind == "id":
        text = value.strip() if isinstance(value, str) else "" if value is None else str(value)
        if not text:
            raise BadRow(column, "missing")
        return text
    if kind == "name":
        return str(value).strip().lower()
    if kind == "time":
        return timestamp(value, column, context.tz)
    x = number(value, column, minimum=step.minimum, integer=kind == "count")
    if kind == "count":
        return int(x)
    if kind == "interval":
        context.clock += x
        return context.clock
    return x / step.per if step.per != 1 else x


class _Collector:
    """Collects parsed rows; a bad row raises InputError or is counted (``skip_bad``)."""

    def __init__(self, path: Path, skip_bad: bool, unit: str) -> None:
        self.path, self.skip_bad, self.unit = path, skip_bad, unit
        self.rows: list[Row] = []
        self.excluded: Counter = Counter()
        self.skipped: Counter = Counter()
        self.first_skipped: list[int] = []

    def add(self, position: int, parse: Callable[[], Row | str]) -> None:
        try:
            row = parse()
        except BadRow as bad:
            if not self.skip_bad:
                raise InputError(f"{self.unit} {position}: {bad.message}", field=bad.column,
                                 fix="fix or delete the row, or pass --skip-bad-rows",
                                 source=str(self.path)) from None
            self.skipped[f"{bad.column}: {bad.message}"] += 1
            if len(self.first_skipped) < 5:
                self.first_skipped.append(position)
            return
        if isinstance(row, str):  # a reason to leave the row out
            self.excluded[row] += 1
        else:
            self.rows.append(row)

    def table(self, fmt: str, columns: dict[str, str], notes: list[str]) -> TraceTable:
        if not self.rows:
            raise InputError("no job left to import", field="(rows)",
                             fix="check the format name and the file; excluded: "
                             + (", ".join(f"{k} ({v})" for k, v in self.excluded.items())
                                or "none") + (f"; skipped {sum(self.skipped.values())}"
                                              if self.skipped else ""),
                             source=str(self.path))
        import pandas as pd

        frame = pd.DataFrame([{k: r[k] for k in FIELDS if k in r} for r in self.rows])
        frame["job_id"] = frame["job_id"].astype(str)
        dup = frame["job_id"].duplicated()
        if dup.any():
            raise InputError(f"job id {frame['job_id'][dup].iloc[0]!r} appears twice",
                             field="job_id", fix="job ids must be unique",
                             source=str(self.path))
        return TraceTable(frame=frame, format=fmt, columns=columns, excluded=self.excluded,
                          skipped=self.skipped, first_skipped=self.first_skipped,
                          notes=notes, unit=self.unit)


def _csv_rows(path: Path, spec: TraceFormat
              ) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """(column names, iterator of (line number, fields)) of a delimited text file (at most
    :data:`dlsched.files.MAX_BYTES`, like every input file)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"more than the {MAX_BYTES} bytes dlsched reads", field="(file)",
                             fix="split the file, or check what was written to it",
                             source=str(path))
        handle = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", fix="check the path", source=str(path)) from None
    except OSError as exc:  # a directory, no permission, ...
        raise InputError(f"cannot read: {exc.strerror or exc}", field="(file)",
                         fix="pass a CSV file", source=str(path)) from None
    reader = csv.reader(handle, delimiter=spec.delimiter)
    if spec.names is not None:
        names = list(spec.names)
    else:
        try:
            names = [n.strip() for n in next(reader)]
        except StopIteration:
            raise InputError("empty file", fix="pass a CSV file with a header row",
                             source=str(path)) from None
        except (csv.Error, UnicodeDecodeError) as exc:
            handle.close()
            raise InputError(f"line 1: {exc}", field="(header)", fix="pass a UTF-8 CSV file",
                             source=str(path)) from None
        missing = [c for c in spec.required if c not in names]
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


def _record(spec: TraceFormat, names: list[str], fields: list[str]) -> dict[str, str]:
    if len(fields) != len(names):
        raise BadRow("(row)", f"{len(fields)} fields, the "
                     + ("header" if spec.names is None else "format") + f" has {len(names)}")
    return dict(zip(names, fields, strict=True))


def _json_entries(path: Path) -> Iterator[tuple[int, Any]]:
    """(entry number from 1, entry) of a JSON list, read within the shared file limits."""
    doc = read_json(path)
    if not isinstance(doc, list):
        raise InputError("not a JSON list of jobs", field="(top level)",
                         fix="pass the file in this format (a JSON list)", source=str(path))
    return enumerate(doc, start=1)


def _object(entry: Any) -> Mapping[str, Any]:
    if not isinstance(entry, dict):
        raise BadRow("(entry)", "not a JSON object")
    return entry
