"""GENIE's rate model (``"genie"``): a job's work and slowdown from its latency (Eq. 4).

Work = Lat(t, <1,1>), rate = Lat(t, <1,1>) / Lat(t, s) on the symmetric shape s of the
job's GPUs per server, so a job alone finishes after exactly Lat(t, s).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InputError
from ..rates import GroupLocality, register_locality
from .model import Shape, processing_rate
from .params import parse_genie_params, task_of

if TYPE_CHECKING:
    from ...instance import Instance
    from ...jobs import Job
    from ..rates import SpeedModel


class GenieLocality(GroupLocality):
    """Locality model ``"genie"``: latency ratios of symmetric shapes (module docstring)."""

    group = "gpu_node"
    work_is_duration = False
    packable = False

    def __init__(self, speed: SpeedModel, workload: Instance) -> None:
        super().__init__(speed, workload)
        self._coefficients = parse_genie_params(workload.params).coefficients
        # PR of Eq. 5 per (model, kind, batch, shape): it does not depend on iterations
        self._rates: dict[tuple, float] = {}

    def _latency(self, job: Job, nodes: int, gpn: int) -> float:
        """Lat(t, <nodes, gpn>) of Eq. 4, as :func:`~.model.latency` computes it."""
        key = (job.model, job.kind, job.batch_size, nodes, gpn)
        coef = self._coefficients[job.model]
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = processing_rate(coef, task_of(job), Shape(nodes, gpn))
        return float(job.batch_size) * float(job.iterations) / rate + coef.nu

    def work(self, job: Job) -> float:
        """Lat(t, <1,1>): the job's latency on one GPU."""
        return self._latency(job, 1, 1)

    def counts_slowdown(self, job: Job, counts: np.ndarray) -> float:
        values = counts.tolist()
        if len(set(values)) != 1:
            raise InputError(f"job {job.id!r} placed asymmetrically ({values})",
                             field="decision", fix="GENIE placements are symmetric shapes")
        return self._shape_slowdown(job, len(values), values[0])

    def _shape_slowdown(self, job: Job, nodes: int, gpn: int) -> float:
        # not kept per job: a trace's tasks rarely share their iterations, and the two
        # latencies are a lookup of their PR each
        return self._latency(job, nodes, gpn) / self._latency(job, 1, 1)

    def slowdown(self, job: Job, gpus: Any, task_nodes: Mapping[str, int] | None) -> float:
        """:meth:`GroupLocality.slowdown` without its array of counts (the simulator asks
        at every start): the same counts per server, the same checks and value."""
        groups = self._groups
        per: dict[int, int] = {}
        for g in gpus.tolist() if isinstance(gpus, np.ndarray) else gpus:
            k = groups[g]
            per[k] = per.get(k, 0) + 1
        values = set(per.values())
        if len(values) != 1:
            counts = [per[k] for k in sorted(per)]
            raise InputError(f"job {job.id!r} placed asymmetrically ({counts})",
                             field="decision", fix="GENIE placements are symmetric shapes")
        slow = self._shape_slowdown(job, len(per), values.pop())
        if self._packed_reference:
            slow /= self._packed_slowdown(job, len(gpus))
        return slow


register_locality("genie", GenieLocality)
