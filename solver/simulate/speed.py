"""Rate models: how fast a running job progresses, in work seconds per second.

A job carries ``work`` seconds of work (its solo run time on its ideal placement, the
``duration`` field). Running, it progresses at

    rate = gpu_speed * (1 / locality slowdown) * interference factor

and its rate changes only at events (a start or completion on a GPU it shares).

* **GPU type speed**: the slowest of its GPUs' ``speed`` (synchronous data-parallel
  training waits for the slowest worker). Gavel's measured type ratios (V100 1,
  P100 0.81, K80 0.25; ``solver/data/gavel_tables.json``) are a sensible source.
* **Locality** (static per placement):
  ``"sched2"``: the SCHED² profile of ``dlsched.problems.sched2`` (share of remote GPU
  peers, model sensitivities of Fig. 1); ``"gavel"``: the same shape with Gavel's
  measured packed / one-per-server ratio R of the job's model and GPU count on a
  reference GPU type, ``slowdown = 1 + (max(R, 1) - 1) * c``; ``"genie"``: GENIE's
  latency model (work = Lat(t, <1,1>), rate = Lat(t, <1,1>) / Lat(t, s), so a job
  alone finishes after exactly Lat(t, s)); ``"liquid"``: Liquid's PS/worker network
  cost read as a slowdown, ``1 + Σ_{PS p, worker w} bw_w · [p, w on different servers]``
  with bw_w the worker container's bandwidth weight, which ``instances/derive/
  liquid_bandwidth.py`` fits as (seconds one separated pair adds) / (one-server run
  time); the job's ``duration`` is its one-server time, so a job alone on one server
  runs exactly ``duration``. ``"liquid_distance"``: the same with each separated pair
  weighted by the Go implementation's distance (1 within a rack, 4 across racks of a
  domain, 40 across domains; the measurements behind the fit were within one rack, so
  both readings agree there). ``None``: no locality effect.
* **Interference** (``"horus"``): our reading of the Horus slowdown functions f on the
  cumulative utilization U of a GPU (fractions, f from ``BUILTIN_INTERFERENCE`` or the
  instance's params). f is fitted to the JCT slowdown of co-located jobs, so we take
  ``1 + f(U)`` as a GPU's "time inflation" and normalize by the job's own solo value:
  on GPU g, ``factor_g = (1 + f(u_j)) / (1 + f(U_g))``; a job alone keeps rate 1, and
  the job's factor is the smallest over its GPUs (it waits for its slowest GPU). With
  the GTX 1080 fit, two 50 % jobs slow down by 1.40x and two 80 % jobs by 2.13x, inside
  the 1-1.5x and 1.5-3x ranges the paper reports (Sec. 3.2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..jobs import Job
from ..problems.sched2 import SENSITIVITY, locality_slowdown, remote_peer_share

LOCALITY_MODELS = (None, "sched2", "gavel", "genie", "liquid", "liquid_distance")
INTERFERENCE_MODELS = (None, "horus")


@cache
def gavel_tables() -> dict[str, Any]:
    """The derived Gavel tables shipped in ``solver/data/gavel_tables.json``."""
    text = resources.files("dlsched").joinpath("data/gavel_tables.json").read_text("utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class SpeedModel:
    """Which rate models a simulation uses (see the module docstring).

    Parameters
    ----------
    locality
        ``None``, ``"sched2"``, ``"gavel"``, ``"genie"``, ``"liquid"`` or
        ``"liquid_distance"``.
    interference
        ``None`` or ``"horus"``.
    gpu_speed
        Scale by the slowest GPU's ``speed`` attribute.
    gavel_gpu
        Reference GPU type of the Gavel locality ratios (``k80``, ``p100``, ``v100``).
    """

    locality: str | None = None
    interference: str | None = None
    gpu_speed: bool = True
    gavel_gpu: str = "v100"

    def __post_init__(self) -> None:
        if self.locality not in LOCALITY_MODELS:
            raise InputError(f"locality model {self.locality!r}", field="speed.locality",
                             fix=f"use one of {LOCALITY_MODELS}")
        if self.interference not in INTERFERENCE_MODELS:
            raise InputError(f"interference model {self.interference!r}",
                             field="speed.interference", fix=f"use one of {INTERFERENCE_MODELS}")

    @classmethod
    def default_for(cls, problem: str) -> SpeedModel:
        """The natural models of each paper's problem."""
        return {
            "sched2": cls(locality="sched2"),
            "horus": cls(interference="horus"),
            "genie": cls(locality="genie"),
            "liquid": cls(locality="liquid"),
        }.get(problem, cls())

    def bind(self, workload: Instance) -> BoundSpeed:
        """Check the workload has what these models need and precompute per-job data."""
        return BoundSpeed(self, workload)


class BoundSpeed:
    """A :class:`SpeedModel` prepared for one workload (per-job work, sensitivities)."""

    def __init__(self, model: SpeedModel, workload: Instance) -> None:
        self.model = model
        self.cluster = workload.cluster
        self.gpu_speed = self.cluster.gpu_speed if model.gpu_speed else None
        self.interference = model.interference is not None
        self._sens: dict[str, float] = {}
        self._genie = None
        if model.locality == "sched2":
            table = dict(SENSITIVITY)
            table.update(workload.params.get("locality", {}) if workload.problem == "sched2"
                         else {})
            for i, job in enumerate(workload.jobs):
                key = job.model if job.model is not None else "insensitive"
                if key not in table:
                    raise InputError(f"job {job.id!r}: no locality sensitivity for model {key!r}",
                                     field=f"jobs[{i}].model",
                                     fix=f"use one of {sorted(table)} or add params.locality")
                self._sens[job.id] = table[key]
        elif model.locality == "gavel":
            ratios = gavel_tables()["locality"][model.gavel_gpu]
            for i, job in enumerate(workload.jobs):
                if job.model not in ratios:
                    raise InputError(f"job {job.id!r}: model {job.model!r} is not in the "
                                     "Gavel table", field=f"jobs[{i}].model",
                                     fix=f"use one of {sorted(ratios)}")
                self._sens[job.id] = 0.0  # filled per scale in slowdown()
            self._gavel = ratios
        elif model.locality == "genie":
            from ..problems.genie import parse_genie_params
            self._genie = parse_genie_params(workload.params)
        elif model.locality in ("liquid", "liquid_distance"):
            self._liquid_dist = self._liquid_distance(model.locality)
            for i, job in enumerate(workload.jobs):
                if not job.containers:
                    raise InputError(f"job {job.id!r} has no containers",
                                     field=f"jobs[{i}].containers",
                                     fix="the liquid locality model needs PS/worker containers")
        if self.interference:
            from ..problems.horus import BUILTIN_INTERFERENCE, parse_horus_params
            functions = (parse_horus_params(workload.params).interference
                         if workload.problem == "horus" else BUILTIN_INTERFERENCE)
            missing = sorted(set(self.cluster.gpu_type) - set(functions))
            if missing:
                raise InputError(f"no interference function for GPU type {missing[0]!r}",
                                 field="params.interference",
                                 fix=f"use GPU types {sorted(functions)}")
            self.functions = tuple(functions[t] for t in self.cluster.gpu_type)
        for i, job in enumerate(workload.jobs):
            if model.locality != "genie" and (job.duration is None or job.duration <= 0):
                raise InputError(f"job {job.id!r} has no duration", field=f"jobs[{i}].duration",
                                 fix="a workload job needs its solo run time in seconds")

    def _liquid_distance(self, locality: str) -> np.ndarray:
        """[N, N] per-pair weight: 1 between any two servers, or the implementation table."""
        n = self.cluster.num_nodes
        if locality == "liquid":
            return 1.0 - np.eye(n)
        from ..problems.liquid import distance_matrix
        return distance_matrix(self.cluster, "implementation")

    # ------------------------------------------------------------------ static part
    def work(self, job: Job) -> float:
        """Work seconds of ``job`` (its solo run time; GENIE: its latency on one GPU)."""
        if self._genie is not None:
            from ..genie_model import Shape, latency
            from ..problems.genie import task_of
            return latency(self._genie.coefficients[job.model], task_of(job), Shape(1, 1))
        return float(job.duration)

    def locality(self, job: Job, counts: np.ndarray) -> float:
        """Locality slowdown (≥ 1) of ``job`` with ``counts`` GPUs on each server it uses."""
        loc = self.model.locality
        if loc is None:
            return 1.0
        if loc in ("liquid", "liquid_distance"):
            raise InputError(f"job {job.id!r}: the {loc} model prices containers, not GPU "
                             "counts", field="speed.locality", fix="call base_rate with task_nodes")
        if loc == "sched2":
            return locality_slowdown(self._sens[job.id], counts)
        if loc == "gavel":
            n = int(counts.sum())
            by_scale = self._gavel[job.model]
            scales = sorted(int(s) for s in by_scale)
            usable = [s for s in scales if s <= n] or scales[:1]
            ratio = max(1.0, by_scale[str(usable[-1])]) if n > 1 else 1.0
            return 1.0 + (ratio - 1.0) * remote_peer_share(counts)
        from ..genie_model import Shape, latency
        from ..problems.genie import task_of
        if len(set(counts.tolist())) != 1:
            raise InputError(f"job {job.id!r} placed asymmetrically ({counts.tolist()})",
                             field="decision", fix="GENIE placements are symmetric shapes")
        coef = self._genie.coefficients[job.model]
        shape = Shape(len(counts), int(counts[0]))
        task = task_of(job)
        return latency(coef, task, shape) / latency(coef, task, Shape(1, 1))

    def liquid_slowdown(self, job: Job, task_nodes: Mapping[str, int]) -> float:
        """``1 + Σ_{PS p, worker w} bw_w · d(n_p, n_w)``; ``task_nodes``: container → server."""
        ps = [task_nodes[c.id] for c in job.containers if c.role == "ps"]
        slow = 1.0
        for c in job.containers:
            if c.role == "worker":
                n = task_nodes[c.id]
                slow += c.bandwidth * float(sum(self._liquid_dist[p, n] for p in ps))
        return slow

    def base_rate(self, job: Job, gpus: np.ndarray,
                  task_nodes: Mapping[str, int] | None = None) -> tuple[float, float]:
        """(rate without interference, locality slowdown) of ``job`` on GPU indices.

        ``task_nodes`` (container id → server index) is required by the Liquid models.
        """
        if self.model.locality in ("liquid", "liquid_distance"):
            if task_nodes is None:
                raise InputError(f"job {job.id!r} placed without containers", field="decision",
                                 fix="Liquid placements list each container's server (tasks)")
            slow = self.liquid_slowdown(job, task_nodes)
        else:
            counts = np.unique(self.cluster.gpu_node[gpus], return_counts=True)[1]
            slow = self.locality(job, counts)
        speed = (float(self.gpu_speed[gpus].min()) if self.gpu_speed is not None and len(gpus)
                 else 1.0)
        return speed / slow, slow

    # ------------------------------------------------------------------ dynamic part
    def interference_factor(self, own_util: float, gpus: np.ndarray,
                            cum_util: np.ndarray) -> float:
        """min over the job's GPUs of (1 + f(u_j)) / (1 + f(U_g)); utilizations in percent."""
        best = 1.0
        u = own_util / 100.0
        for g in gpus:
            f = self.functions[g]
            best = min(best, (1.0 + f(u)) / (1.0 + f(cum_util[g] / 100.0)))
        return best


def describe(model: SpeedModel) -> Mapping[str, Any]:
    """The model as plain data (written next to simulation results)."""
    return {"locality": model.locality, "interference": model.interference,
            "gpu_speed": model.gpu_speed, "gavel_gpu": model.gavel_gpu}
