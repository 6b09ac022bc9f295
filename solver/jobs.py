"""Jobs waiting to be scheduled, their containers, and jobs already running."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

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
    """A job already placed in a snapshot: what it holds on each of its GPUs and servers."""

    job: str
    gpus: tuple[str, ...]
    gpu_util: float = 0.0
    gpu_mem_gb: float = 0.0
    cpu_per_gpu: float = 0.0
    ram_gb_per_gpu: float = 0.0
    remaining_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


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


def to_plain(obj: Any) -> dict[str, Any]:
    """Dataclass → dict for JSON, leaving out fields equal to their default."""
    out: dict[str, Any] = {}
    for name, has_default, default in _defaults(type(obj)):
        value = getattr(obj, name)
        if not has_default:
            out[name] = list(value) if isinstance(value, tuple) else value
            continue
        if value == default:
            continue
        if isinstance(value, tuple):
            value = [to_plain(v) if dataclasses.is_dataclass(v) else v for v in value]
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


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
