"""The simulator's rate models of SCHED² workloads: ``"sched2"`` (the paper's locality
sensitivities per model) and ``"gavel"`` (Gavel's measured packed / spread ratios)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .rates import GroupLocality, register_locality
from .sched2 import SENSITIVITY, Sched2Problem, locality_slowdown, remote_peer_share

if TYPE_CHECKING:
    from ..instance import Instance
    from ..jobs import Job
    from .rates import SpeedModel


class Sched2Locality(GroupLocality):
    """Rate model ``"sched2"``: :func:`locality_slowdown` of the job's GPUs per locality
    group of the topology graph (a peer is remote when the two GPUs' lowest common
    ancestor is above the graph's ``locality_level``, the server by default, so an
    NVLink-island graph makes cross-island peers remote). Sensitivities: ``SENSITIVITY``,
    updated by a SCHED² workload's ``params.locality``."""

    def __init__(self, speed: SpeedModel, workload: Instance) -> None:
        super().__init__(speed, workload)
        table = dict(SENSITIVITY)
        table.update(workload.params.get("locality", {}) if workload.problem == Sched2Problem.name
                     else {})
        self._sens: dict[str, float] = {}
        for i, job in enumerate(workload.jobs):
            key = job.model if job.model is not None else "insensitive"
            if key not in table:
                raise InputError(f"job {job.id!r}: no locality sensitivity for model {key!r}",
                                 field=f"jobs[{i}].model",
                                 fix=f"use one of {sorted(table)} or add params.locality")
            self._sens[job.id] = table[key]

    def counts_slowdown(self, job: Job, counts: np.ndarray) -> float:
        if len(counts) == 1:  # one group: no remote peer (locality_slowdown gives 1.0)
            return 1.0
        return locality_slowdown(self._sens[job.id], counts)


@cache
def gavel_tables() -> dict[str, Any]:
    """The derived Gavel tables shipped in ``solver/data/gavel_tables.json``."""
    text = resources.files("dlsched").joinpath("data/gavel_tables.json").read_text("utf-8")
    return json.loads(text)


class GavelLocality(GroupLocality):
    """Rate model ``"gavel"``: the SCHED² shape with Gavel's measured packed / one-per-server
    ratio R of the job's model and GPU count on the reference GPU type
    (``SpeedModel.gavel_gpu``), ``slowdown = 1 + (max(R, 1) - 1) * c``, c the share of
    remote peers (:func:`remote_peer_share`)."""

    def __init__(self, speed: SpeedModel, workload: Instance) -> None:
        super().__init__(speed, workload)
        ratios = gavel_tables()["locality"][speed.gavel_gpu]
        for i, job in enumerate(workload.jobs):
            if job.model not in ratios:
                raise InputError(f"job {job.id!r}: model {job.model!r} is not in the "
                                 "Gavel table", field=f"jobs[{i}].model",
                                 fix=f"use one of {sorted(ratios)}")
        self._ratios = ratios

    def counts_slowdown(self, job: Job, counts: np.ndarray) -> float:
        n = int(counts.sum())
        by_scale = self._ratios[job.model]
        scales = sorted(int(s) for s in by_scale)
        usable = [s for s in scales if s <= n] or scales[:1]
        ratio = max(1.0, by_scale[str(usable[-1])]) if n > 1 else 1.0
        return 1.0 + (ratio - 1.0) * remote_peer_share(counts)


register_locality("sched2", Sched2Locality)
register_locality("gavel", GavelLocality)
