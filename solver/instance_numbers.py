"""The numbers of an instance's jobs and running jobs, checked as its file's schema checks
them: an :class:`~dlsched.instance.Instance` built in Python gets the same refusal (an
:class:`~dlsched.errors.InputError` naming ``jobs[i].field`` or ``running[i].field``) as a
file would, instead of a numpy error or a silently wrong figure further down.

Pending jobs: one pass per field over the column on every check
(:func:`~dlsched.instance_io.check_instance`); the first bad value is looked up only when
the column fails. Running jobs: each :class:`~dlsched.jobs.RunningJob` checks its own
numbers once, when it is built (:func:`running_fault`, from its ``__post_init__``; it is
frozen, so they cannot change after), and keeps the verdict; a check then reads the
verdicts in one C-level pass (:func:`running_numbers_ok`, ~30 µs for ~1,000 running jobs
at 4,096 GPUs where checking every field costs ~1 ms per call) and :func:`check_numbers`
names the first bad field only when one failed. Every field is checked, whatever the
problem reads: the utilization, memory, CPU and RAM per GPU, ``remaining_s``, and the
per-server amounts of ``extra`` (``node_cpu``, ``node_ram_gb``: a mapping of server id to
a number, as the schema's ``per_node``; ``extra`` itself must be a mapping). Other keys of
``extra`` are not checked here (the simulator and policies keep their own there, e.g.
``rate_factor``); which server ids exist is :mod:`~dlsched.instance_io`'s check. The
verdict sees ``extra`` as it was when the job was built: a dict changed in place later is
not checked again (build a new :class:`~dlsched.jobs.RunningJob` instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
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
_NODE_KEYS = ("node_cpu", "node_ram_gb")
"""The keys of ``RunningJob.extra`` whose values are per-server amounts."""
_ABSENT = object()
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
    for i, row in enumerate(running):
        if not _extra_ok(row.extra):
            _raise_extra(row.extra, i)


_PLAIN = frozenset((float, int))
_FAULT = attrgetter("_numbers_fault")


def running_fault(running: Any) -> bool:
    """Whether a running job's numbers fail the schema (a value that is not a real number,
    a bool or a numeric string included; NaN, ±inf, a negative or one over the bound).
    Its ``extra`` fails when it is not a mapping, or its ``node_cpu`` or ``node_ram_gb``
    is not a mapping of such numbers. Run once per :class:`~dlsched.jobs.RunningJob`,
    when it is built."""
    u, m, c = running.gpu_util, running.gpu_mem_gb, running.cpu_per_gpu
    r, s, e = running.ram_gb_per_gpu, running.remaining_s, running.extra
    # the common case in a few comparisons: plain floats and ints in bounds (NaN fails
    # them), and a dict without per-server amounts
    if (type(u) in _PLAIN and type(m) in _PLAIN and type(c) in _PLAIN and type(r) in _PLAIN
            and 0 <= u <= LIMIT and 0 <= m <= LIMIT and 0 <= c <= LIMIT and 0 <= r <= LIMIT
            and (s is None or (type(s) in _PLAIN and 0 <= s <= LIMIT))):
        if type(e) is dict and "node_cpu" not in e and "node_ram_gb" not in e:
            return False
        return not _extra_ok(e)
    return not (all(_column_ok([getattr(running, spec[0])], *spec[1:])
                    for spec in _RUNNING_FIELDS) and _extra_ok(e))


def _extra_ok(extra: Any) -> bool:
    """Whether a running job's ``extra`` is a mapping whose ``node_cpu`` and
    ``node_ram_gb``, where present, map server ids to numbers within the schema's bounds."""
    if type(extra) is not dict and not isinstance(extra, Mapping):  # (the ABC check is slow)
        return False
    for key in _NODE_KEYS:
        amounts = extra.get(key, _ABSENT)
        if amounts is not _ABSENT:
            if type(amounts) is not dict and not isinstance(amounts, Mapping):
                return False
            for v in amounts.values():
                # a plain float or int in bounds (NaN fails the comparison); anything
                # else, the column check (numpy numbers pass it, bools and strings do not)
                if not (type(v) in _PLAIN and 0 <= v <= LIMIT or _column_ok(
                        [v], False, 0.0, False, False)):
                    return False
    return True


def running_numbers_ok(running: Sequence[Any]) -> bool:
    """Whether every running job's numbers passed its check at construction (one C-level
    pass over the verdicts; :func:`check_numbers` then names the first fault). An object
    that is not a :class:`~dlsched.jobs.RunningJob` has no verdict: False, so that
    :func:`check_numbers` checks its fields."""
    try:
        return not any(map(_FAULT, running))
    except AttributeError:
        return False


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


def _raise_extra(extra: Any, i: int) -> None:
    """Raise the InputError for the first fault :func:`_extra_ok` finds in ``extra``."""
    amount = f"a finite number >= 0 and <= {LIMIT:g}"
    if not isinstance(extra, Mapping):
        raise InputError(f"extra = {extra!r} is not a mapping", field=f"running[{i}].extra",
                         fix="give a dict (e.g. {'node_cpu': {server id: amount}}) or "
                             "leave extra out")
    for key in _NODE_KEYS:
        if key not in extra:
            continue
        amounts = extra[key]
        field = f"running[{i}].extra.{key}"
        if not isinstance(amounts, Mapping):
            raise InputError(f"{key} = {amounts!r} is not a mapping", field=field,
                             fix=f"give a dict of server id to {amount}, or leave {key} out")
        for node_id, v in amounts.items():
            if not _column_ok([v], False, 0.0, False, False):
                raise InputError(f"{key}[{node_id!r}] = {v!r}", field=f"{field}.{node_id}",
                                 fix=f"give {amount} for each server")
