"""Jobs waiting to be scheduled, their containers, and jobs already running."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, ClassVar, TypeVar

import numpy as np

from .instance_numbers import running_fault

T = TypeVar("T")


@dataclass(frozen=True)
class Container:
    """A PS or worker container of a Liquid job; GPU memory is per GPU."""

    id: str
    role: str  # "ps" | "worker"
    gpus: int = 0
    gpu_mem_gb: float = 0.0
    cpu: float = 0.0
    ram_gb: float = 0.0
    bandwidth: float = 0.0


@dataclass(frozen=True)
class Job:
    """A job in the pending queue or in a workload.

    Which fields a problem needs is declared by the problem (``Problem.job_fields``);
    optional fields are ``None`` when unknown. Per-GPU quantities (``gpu_util`` in
    percent, ``gpu_mem_gb``, ``cpu_per_gpu``, ``ram_gb_per_gpu``) apply to every GPU the
    job gets. ``num_gpus`` is ``None`` for elastic jobs whose shape the scheduler chooses.
    """

    id: str
    submit_time: float = 0.0
    num_gpus: int | None = None
    duration: float | None = None
    gpu_util: float | None = None
    gpu_mem_gb: float | None = None
    cpu_per_gpu: float = 0.0
    ram_gb_per_gpu: float = 0.0
    model: str | None = None
    kind: str | None = None  # "train" | "infer"
    batch_size: int | None = None
    iterations: int | None = None
    qos: str | None = None  # GENIE class: "urgent" | "prior" | "normal"
    deadline: float | None = None
    weight: float = 1.0
    containers: tuple[Container, ...] = ()

    def replace(self, **changes: Any) -> Job:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class RunningJob:
    """A job already placed in a snapshot: what it holds on each of its GPUs and servers.

    Its numbers are checked once, here (:func:`~dlsched.instance_numbers.running_fault`):
    a bad one does not raise now (the object does not know its place in a snapshot) but
    is kept as ``_numbers_fault``, and :func:`~dlsched.instance_io.check_instance` then
    refuses the snapshot naming ``running[i].field``.
    """

    job: str
    gpus: tuple[str, ...]
    gpu_util: float = 0.0
    gpu_mem_gb: float = 0.0
    cpu_per_gpu: float = 0.0
    ram_gb_per_gpu: float = 0.0
    remaining_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    _numbers_fault: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if running_fault(self):
            object.__setattr__(self, "_numbers_fault", True)  # frozen: set once, here


def _defaults(cls: type) -> tuple[tuple[str, bool, Any], ...]:
    """(name, has a default, default) per dataclass field, computed once per class."""
    cached = _DEFAULTS.get(cls)
    if cached is None:
        out = []
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out.append((f.name, True, f.default))
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                out.append((f.name, True, f.default_factory()))  # type: ignore[misc]
            else:
                out.append((f.name, False, None))
        cached = _DEFAULTS[cls] = tuple(out)
    return cached


_DEFAULTS: dict[type, tuple[tuple[str, bool, Any], ...]] = {}


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Exact types written as they are: checked before the slower tuple and Mapping tests
(an instance's sha256 converts every job, ~2.5x faster so)."""


def to_plain(obj: Any) -> dict[str, Any]:
    """Dataclass → dict for JSON, leaving out fields equal to their default."""
    out: dict[str, Any] = {}
    for name, has_default, default in _defaults(type(obj)):
        value = getattr(obj, name)
        if not has_default:
            out[name] = list(value) if isinstance(value, tuple) else value
        elif value == default:
            continue
        elif type(value) in _SCALARS:
            out[name] = value
        elif isinstance(value, tuple):
            out[name] = [to_plain(v) if dataclasses.is_dataclass(v) else v for v in value]
        elif isinstance(value, Mapping):
            out[name] = dict(value)
        else:
            out[name] = value
    return out


class JobColumns:
    """Numeric fields of a sequence of jobs as float arrays, each built once when asked.

    ``columns("gpu_mem_gb", fill=0.0)`` is ``[j.gpu_mem_gb, ...]`` with ``fill`` for None
    (default NaN). Heuristics read whole columns in one numpy step instead of a Python
    pass over the queue per call (the simulator shows columns of its pending queue that it
    gathers from the whole workload's, :mod:`dlsched.simulate.pending`).
    """

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._jobs = jobs
        self._built: dict[tuple[str, float], np.ndarray] = {}

    def __call__(self, name: str, fill: float = float("nan")) -> np.ndarray:
        key = (name, fill)
        column = self._built.get(key)
        if column is None:
            if name not in _NUMERIC_FIELDS:
                raise ValueError(f"{name!r} is not a numeric job field "
                                 f"({', '.join(sorted(_NUMERIC_FIELDS))})")
            column = np.fromiter(
                (fill if v is None else v for v in map(attrgetter(name), self._jobs)),
                dtype=float, count=len(self._jobs))
            column.flags.writeable = False  # shared by every reader
            self._built[key] = column
        return column


_NUMERIC_FIELDS = frozenset({"submit_time", "num_gpus", "duration", "gpu_util", "gpu_mem_gb",
                             "cpu_per_gpu", "ram_gb_per_gpu", "batch_size", "iterations",
                             "deadline", "weight"})


def job_from_dict(data: Mapping[str, Any]) -> Job:
    """Job from its instance-file form (already checked against the JSON Schema)."""
    values = dict(data)
    if "containers" in values:
        values["containers"] = tuple(Container(**c) for c in values["containers"])
    return Job(**values)


def running_from_dict(data: Mapping[str, Any]) -> RunningJob:
    """RunningJob from its instance-file form (already checked against the JSON Schema)."""
    values = dict(data)
    values["gpus"] = tuple(values["gpus"])
    return RunningJob(**values)
