"""The numbers of an instance's jobs and running jobs, checked as its file's schema checks
them: an :class:`~dlsched.instance.Instance` built in Python gets the same refusal (an
:class:`~dlsched.errors.InputError` naming ``jobs[i].field``) as a file would, instead of a
numpy error further down. One pass per field over the column; the first bad value is
looked up only when the column fails. :func:`~dlsched.instance_io.check_instance` runs it
on the pending jobs always, and on the running jobs when :func:`running_numbers_ok` finds
a fault in the arrays it builds anyway (a full pass over ~1,000 running jobs at 4,096 GPUs
costs ~1 ms, a fifth of a decision's budget): memory, CPU and RAM per GPU always, the
utilization where the problem reads it (Horus); ``remaining_s`` is not checked there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InputError

LIMIT = 1e12
"""The schema's bound on every number (``instance.schema.json``)."""

# (field, None allowed, least value, least value excluded, integer)
_JOB_FIELDS = (
    ("submit_time", False, -LIMIT, False, False),
    ("num_gpus", True, 1, False, True),
    ("duration", True, 0.0, True, False),
    ("gpu_util", True, 0.0, False, False),
    ("gpu_mem_gb", True, 0.0, False, False),
    ("cpu_per_gpu", False, 0.0, False, False),
    ("ram_gb_per_gpu", False, 0.0, False, False),
    ("batch_size", True, 1, False, True),
    ("iterations", True, 1, False, True),
    ("deadline", True, -LIMIT, False, False),
    ("weight", False, 0.0, True, False),
)
_RUNNING_FIELDS = (
    ("gpu_util", False, 0.0, False, False),
    ("gpu_mem_gb", False, 0.0, False, False),
    ("cpu_per_gpu", False, 0.0, False, False),
    ("ram_gb_per_gpu", False, 0.0, False, False),
    ("remaining_s", True, 0.0, False, False),
)
_INTEGER = (int, np.integer)
_REAL = (int, float, np.integer, np.floating)


def check_numbers(jobs: Sequence[Any], running: Sequence[Any]) -> None:
    """Raise InputError for the first job or running job whose number is not a finite
    number within the schema's bounds (an integer where the schema says so)."""
    for rows, name, fields in ((jobs, "jobs", _JOB_FIELDS),
                               (running, "running", _RUNNING_FIELDS)):
        if rows:
            for spec in fields:
                values = [getattr(row, spec[0]) for row in rows]
                if not _column_ok(values, *spec[1:]):
                    _raise_first(values, name, spec)


def running_numbers_ok(instance: Any, fields: Sequence[int]) -> bool:
    """Whether the running jobs' fields ``fields`` (indices of
    :meth:`~dlsched.instance.RunningGpus.column`) are finite and non-negative, on the
    arrays the checks build anyway (a few array steps; :func:`check_numbers` then names
    the first fault)."""
    if not instance.running:
        return True
    try:
        columns = [instance.running_gpus.per_job(k) for k in fields]
    except (TypeError, ValueError):  # a value that is not a number
        return False
    return all(bool(np.isfinite(c).all()) and c.min() >= 0 and c.max() <= LIMIT
               for c in columns)


def _column_ok(values: list[Any], optional: bool, low: float, strict: bool,
               integer: bool) -> bool:
    present = [v for v in values if v is not None] if optional else values
    if not present:
        return True
    kinds = _INTEGER if integer else _REAL
    if not all(issubclass(t, kinds) and not issubclass(t, (bool, np.bool_))
               for t in set(map(type, present))):
        return False
    if any(v != v for v in present):  # NaN (min and max would skip it)
        return False
    smallest, largest = min(present), max(present)  # ±inf fails the bounds
    return bool(smallest > low if strict else smallest >= low) and bool(largest <= LIMIT)


def _raise_first(values: list[Any], name: str, spec: tuple[str, bool, float, bool, bool]
                 ) -> None:
    field, optional, low, strict, integer = spec
    for i, v in enumerate(values):
        if v is None and optional:
            continue
        if not _column_ok([v], optional, low, strict, integer):
            kind = "an integer" if integer else "a finite number"
            bound = f"> {low:g}" if strict else f">= {low:g}"
            none = ", or None" if optional else ""
            raise InputError(f"{field} = {v!r}", field=f"{name}[{i}].{field}",
                             fix=f"give {kind} {bound} and <= {LIMIT:g}{none}")
