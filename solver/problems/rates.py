"""Rate models: how fast a job progresses on a placement, in work seconds per second.

Simulators (``dlsched.simulate``) and offline schedule models (``dlsched.formulations.
offline``) share them, so they live here, below both. A job carries ``work`` seconds of
work (by default its ``duration``: its solo run time on its ideal placement). Running, it
progresses at

    rate = gpu_speed / locality slowdown * interference factor

and its rate changes only at events (a start or completion on a GPU it shares).

* **GPU type speed** (:attr:`SpeedModel.gpu_speed`): the slowest of its GPUs' ``speed``
  (synchronous data-parallel training waits for the slowest worker).
* **Locality** (static per placement, a :class:`Locality`): the slowdown (≥ 1) of the
  job's placement; it may also define the job's work (GENIE: its latency on one GPU).
* **Interference** (dynamic, an :class:`Interference`): a factor (≤ 1) from what else
  runs on the job's GPUs.
* **Duration reference** (:attr:`SpeedModel.reference`): ``"ideal"`` (default) reads
  ``duration`` as the solo time on an ideal placement, so any spread slows it down;
  ``"packed"`` reads it as the time on the *packed* placement (full locality groups, then
  the rest: the best placement of that GPU count), and the locality slowdown is relative
  to that placement's, so a job placed packed runs exactly ``duration``. A trace records
  what a job ran with its real placement; applying a slowdown on top of it slows it twice,
  so trace-derived workloads use ``"packed"`` by default (:meth:`SpeedModel.for_workload`;
  docs/traces.md). Locality models that count GPUs per group (:class:`GroupLocality`)
  implement it.

**Open set of models.** Locality and interference models are registered by name
(:func:`register_locality`, :func:`register_interference`); each problem module registers
its own (``dlsched.problems.sched2``: ``"sched2"``, ``"gavel"``; ``dlsched.problems.genie.
rate``: ``"genie"``; ``dlsched.problems.liquid_network``: ``"liquid"``,
``"liquid_distance"``; ``dlsched.problems.horus``: ``"horus"``, ``"horus-linear"``) and names
its defaults in :attr:`Problem.default_locality <dlsched.problems.base.Problem.
default_locality>` and ``default_interference``. Nothing here or in the simulator names a
problem: a new paper adds its model by registering it from its own module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..errors import InputError
from .base import get_problem

if TYPE_CHECKING:
    from ..instance import Instance
    from ..jobs import Job

REFERENCES = ("ideal", "packed")


class Locality:
    """A locality model bound to one workload: each job's work and each placement's slowdown.

    Subclass it, check the workload in ``__init__(speed, workload)`` (an
    :class:`InputError` naming the job field a model needs) and register the class with
    :func:`register_locality`.
    """

    work_is_duration: ClassVar[bool] = True
    """A job's work is its ``duration`` (checked > 0 on bind); ``False``: :meth:`work`
    computes it."""
    packable: ClassVar[bool] = False
    """Takes the ``"packed"`` duration reference (:class:`GroupLocality` implements it)."""

    def __init__(self, speed: SpeedModel, workload: Instance) -> None:
        """Check ``workload`` has what the model needs (the base class needs nothing)."""

    def work(self, job: Job) -> float:
        """Work seconds of ``job``: its solo run time (``duration``) by default."""
        return float(job.duration)

    def slowdown(self, job: Job, gpus: np.ndarray,
                 task_nodes: Mapping[str, int] | None) -> float:
        """Locality slowdown (≥ 1) of ``job`` on GPU indices ``gpus``.

        Parameters
        ----------
        job
            The job placed.
        gpus
            Its GPU indices.
        task_nodes
            Container id → server index, for models that price containers (else ``None``).

        Returns
        -------
        float
            The slowdown, relative to the job's reference placement.
        """
        raise NotImplementedError


class GroupLocality(Locality):
    """A locality model on the job's GPU counts per group (servers or topology groups).

    Subclasses set :attr:`group` and implement :meth:`counts_slowdown`; they take the
    ``"packed"`` duration reference unless they set :attr:`packable` to ``False``.
    """

    packable = True

    group: ClassVar[str] = "gpu_locality_group"
    """The cluster's per-GPU group array the counts are taken on (``"gpu_node"``: servers)."""

    def __init__(self, speed: SpeedModel, workload: Instance) -> None:
        super().__init__(speed, workload)
        group = getattr(workload.cluster, self.group)
        self._groups = group.tolist()
        self._max_group = int(np.bincount(group).max()) if len(group) else 1
        self._packed_reference = speed.reference == "packed"
        self._packed: dict[tuple[str, int], float] = {}

    def counts_slowdown(self, job: Job, counts: np.ndarray) -> float:
        """Slowdown (≥ 1) of ``job`` with ``counts`` GPUs in each group it uses."""
        raise NotImplementedError

    def slowdown(self, job: Job, gpus: np.ndarray,
                 task_nodes: Mapping[str, int] | None) -> float:
        """:meth:`counts_slowdown` of the placement's counts, over the packed placement's
        under the ``"packed"`` reference (see :meth:`Locality.slowdown`)."""
        groups = self._groups
        n = len(gpus)
        if n and n <= self._max_group:
            first = groups[gpus[0]]
            for g in gpus:
                if groups[g] != first:
                    break
            else:
                # one group: the counts are [n], the packed placement's own counts, so the
                # packed reading's ratio is exactly 1 (x / x) and the ideal one is its value
                if self._packed_reference:
                    return 1.0
                return self.counts_slowdown(job, np.array([n], dtype=np.int64))
        per: dict[int, int] = {}
        for g in gpus:
            k = groups[g]
            per[k] = per.get(k, 0) + 1
        counts = np.array([per[k] for k in sorted(per)], dtype=np.int64)
        slow = self.counts_slowdown(job, counts)
        if self._packed_reference:
            slow /= self._packed_slowdown(job, len(gpus))  # = counts.sum()
        return slow

    def _packed_slowdown(self, job: Job, n: int) -> float:
        """Slowdown of ``job``'s packed placement: full groups, then the rest."""
        key = (job.id, n)
        if key not in self._packed:
            m = self._max_group
            counts = np.array([m] * (n // m) + ([n % m] if n % m else []), dtype=np.int64)
            self._packed[key] = self.counts_slowdown(job, counts)
        return self._packed[key]


class Interference:
    """An interference model bound to one workload (register it with
    :func:`register_interference`; check the workload in ``__init__(workload)``)."""

    def __init__(self, workload: Instance) -> None:
        """Check ``workload`` has what the model needs (the base class needs nothing)."""

    def factor(self, own_util: float, gpus: np.ndarray, cum_util: np.ndarray) -> float:
        """Rate factor (≤ 1) of a job of utilization ``own_util`` (percent) on ``gpus``,
        whose summed utilizations (percent, the job's own included) are ``cum_util``."""
        raise NotImplementedError


_LOCALITY: dict[str, type[Locality]] = {}
_INTERFERENCE: dict[str, type[Interference]] = {}


def register_locality(name: str, model: type[Locality]) -> type[Locality]:
    """Make ``model`` the locality model called ``name`` (``SpeedModel(locality=name)``)."""
    _LOCALITY[name] = model
    return model


def register_interference(name: str, model: type[Interference]) -> type[Interference]:
    """Make ``model`` the interference model called ``name``."""
    _INTERFERENCE[name] = model
    return model


def locality_names() -> tuple[str, ...]:
    """Names of the registered locality models, sorted."""
    return tuple(sorted(_LOCALITY))


def interference_names() -> tuple[str, ...]:
    """Names of the registered interference models, sorted."""
    return tuple(sorted(_INTERFERENCE))


def supports_packed(locality: str | None) -> bool:
    """Whether the locality model ``locality`` (``None``: none) takes the packed reference."""
    return locality is None or _LOCALITY[locality].packable


@dataclass(frozen=True)
class SpeedModel:
    """Which rate models a simulation or an offline model uses (see the module docstring).

    Parameters
    ----------
    locality
        ``None`` or a registered locality model (:func:`locality_names`).
    interference
        ``None`` or a registered interference model (:func:`interference_names`).
    gpu_speed
        Scale by the slowest GPU's ``speed`` attribute.
    gavel_gpu
        Reference GPU type of the ``"gavel"`` locality ratios (``k80``, ``p100``, ``v100``).
    reference
        ``"ideal"`` or ``"packed"``: what a job's ``duration`` is the time of.
    """

    locality: str | None = None
    interference: str | None = None
    gpu_speed: bool = True
    gavel_gpu: str = "v100"
    reference: str = "ideal"

    def __post_init__(self) -> None:
        if self.locality is not None and self.locality not in _LOCALITY:
            raise InputError(f"locality model {self.locality!r}", field="speed.locality",
                             fix=f"use one of {(None, *locality_names())}")
        if self.reference not in REFERENCES:
            raise InputError(f"duration reference {self.reference!r}", field="speed.reference",
                             fix=f"use one of {REFERENCES}")
        if self.reference == "packed" and not supports_packed(self.locality):
            packable = [n for n in locality_names() if supports_packed(n)]
            raise InputError(f"reference 'packed' with locality {self.locality!r}",
                             field="speed.reference",
                             fix=f"the packed reading applies to the {packable} models")
        if self.interference is not None and self.interference not in _INTERFERENCE:
            raise InputError(f"interference model {self.interference!r}",
                             field="speed.interference",
                             fix=f"use one of {(None, *interference_names())}")

    @classmethod
    def default_for(cls, problem: str) -> SpeedModel:
        """The models problem ``problem`` names (``Problem.default_locality`` and
        ``default_interference``)."""
        p = get_problem(problem)
        return cls(locality=p.default_locality, interference=p.default_interference)

    @classmethod
    def for_workload(cls, workload: Instance) -> SpeedModel:
        """:meth:`default_for` the workload's problem; trace-derived workloads (provenance
        generator ``instances.traces``) read their recorded durations as the packed
        placement's time (``reference="packed"``) where the locality model supports it, so
        locality is not applied twice."""
        base = cls.default_for(workload.problem)
        traced = (workload.provenance or {}).get("generator") == "instances.traces"
        if traced and base.locality is not None and supports_packed(base.locality):
            return replace(base, reference="packed")
        return base

    def bind(self, workload: Instance) -> BoundSpeed:
        """Check the workload has what these models need and precompute per-job data."""
        return BoundSpeed(self, workload)


class BoundSpeed:
    """A :class:`SpeedModel` prepared for one workload (its bound locality and interference
    models)."""

    def __init__(self, model: SpeedModel, workload: Instance) -> None:
        self.model = model
        self._speeds = workload.cluster.gpu_speed.tolist() if model.gpu_speed else None
        self._locality = (None if model.locality is None
                          else _LOCALITY[model.locality](model, workload))
        # the models' bound methods are kept: base_rate and interference_factor run at
        # every start and re-rate, so they save a delegating call there
        self._slowdown = None if self._locality is None else self._locality.slowdown
        interference = (None if model.interference is None
                        else _INTERFERENCE[model.interference](workload))
        self.interference = interference is not None
        self.interference_factor: Callable[[float, np.ndarray, np.ndarray], float] = (
            _no_interference if interference is None else interference.factor)
        """The interference model's rate factor (:meth:`Interference.factor`; 1 without
        one)."""
        if self._locality is None or self._locality.work_is_duration:
            for i, job in enumerate(workload.jobs):
                if job.duration is None or job.duration <= 0:
                    raise InputError(f"job {job.id!r} has no duration",
                                     field=f"jobs[{i}].duration",
                                     fix="a workload job needs its solo run time in seconds")

    def work(self, job: Job) -> float:
        """Work seconds of ``job`` (its solo run time, or what its locality model says)."""
        if self._locality is None:
            return float(job.duration)
        return self._locality.work(job)

    def base_rate(self, job: Job, gpus: np.ndarray,
                  task_nodes: Mapping[str, int] | None = None) -> tuple[float, float]:
        """(rate without interference, locality slowdown) of ``job`` on GPU indices.

        ``task_nodes`` (container id → server index) is required by locality models that
        price containers (Liquid's).
        """
        slow = 1.0 if self._slowdown is None else self._slowdown(job, gpus, task_nodes)
        speeds = self._speeds
        if speeds is None or not len(gpus):
            speed = 1.0
        elif len(gpus) == 1:
            speed = speeds[gpus[0]]
        else:
            speed = min(map(speeds.__getitem__, gpus))
        return speed / slow, slow


def _no_interference(own_util: float, gpus: np.ndarray, cum_util: np.ndarray) -> float:
    """The rate factor without an interference model."""
    return 1.0
