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
  peers, model sensitivities of Fig. 1; a peer is remote when the two GPUs' lowest common
  ancestor in the topology graph is above its ``locality_level``, the server by
  default, so an NVLink-island graph makes cross-island peers remote); ``"gavel"``: the
  same shape with Gavel's measured packed / one-per-server ratio R of the job's model
  and GPU count on a reference GPU type, ``slowdown = 1 + (max(R, 1) - 1) * c``;
  ``"genie"``: GENIE's latency model (work = Lat(t, <1,1>), rate = Lat(t, <1,1>) /
  Lat(t, s), so a job alone finishes after exactly Lat(t, s)); ``"liquid"``: Liquid's
  PS/worker network cost read as a slowdown,
  ``1 + Σ_{PS p, worker w} bw_w · [p, w on different servers]`` with bw_w the worker
  container's bandwidth weight, which ``instances/derive/
  liquid_bandwidth.py`` fits as (seconds one separated pair adds) / (one-server run
  time); the job's ``duration`` is its one-server time, so a job alone on one server
  runs exactly ``duration``. ``"liquid_distance"``: the same with each separated pair
  weighted by the Go implementation's distance (1 within a rack, 4 across racks of a
  domain, 40 across domains; the measurements behind the fit were within one rack, so
  both readings agree there). ``None``: no locality effect.
* **Duration reference** (``reference``): ``"ideal"`` (default) reads ``duration`` as the
  solo time on an ideal placement, so any spread slows it down; ``"packed"`` reads it as
  the time on the *packed* placement (full servers, then the rest: the best placement of
  that GPU count), and the locality slowdown is relative to that placement's, so a job
  placed packed runs exactly ``duration``. A trace records what a job ran with its real
  placement; applying a slowdown on top of it slows it twice, so trace-derived workloads
  use ``"packed"`` by default (:meth:`SpeedModel.for_workload`; docs/traces.md).
* **Interference** (``"horus"``): our reading of the Horus slowdown functions f on the
  cumulative utilization U of a GPU (fractions, f from ``BUILTIN_INTERFERENCE`` or the
  instance's params). f is fitted to the JCT slowdown of co-located jobs, so we take
  ``1 + f(U)`` as a GPU's "time inflation" and normalize by the job's own solo value:
  on GPU g, ``factor_g = (1 + f(u_j)) / (1 + f(U_g))``; a job alone keeps rate 1, and
  the job's factor is the smallest over its GPUs (it waits for its slowest GPU). With
  the GTX 1080 fit, two 50 % jobs slow down by 1.40x and two 80 % jobs by 2.13x, inside
  the 1-1.5x and 1.5-3x ranges the paper reports (Sec. 3.2).
* **Interference** (``"horus-linear"``): the Horus paper's own simulator assumption
  (Sec. 6: "interference overheads scale linearly w.r.t. the sum of the jobs GPU
  utilization"), our reading: a GPU whose summed utilization U_g (percent) is at most 100
  runs every job on it at full speed; above 100 each runs at ``100 / U_g`` (the GPU's
  time is shared in proportion, so the overhead grows linearly with U_g). The job takes
  the smallest factor over its GPUs. Two 80 % jobs: 1.6x slower each; two 40 % jobs: no
  slowdown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..jobs import Job
from ..problems.sched2 import SENSITIVITY, locality_slowdown, remote_peer_share

LOCALITY_MODELS = (None, "sched2", "gavel", "genie", "liquid", "liquid_distance")
INTERFERENCE_MODELS = (None, "horus", "horus-linear")
REFERENCES = ("ideal", "packed")


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
        ``None``, ``"horus"`` (fitted f on summed utilization) or ``"horus-linear"`` (the
        paper's simulator: rate 100 / U above U = 100 %).
    gpu_speed
        Scale by the slowest GPU's ``speed`` attribute.
    gavel_gpu
        Reference GPU type of the Gavel locality ratios (``k80``, ``p100``, ``v100``).
    """

    locality: str | None = None
    interference: str | None = None
    gpu_speed: bool = True
    gavel_gpu: str = "v100"
    reference: str = "ideal"

    def __post_init__(self) -> None:
        if self.locality not in LOCALITY_MODELS:
            raise InputError(f"locality model {self.locality!r}", field="speed.locality",
                             fix=f"use one of {LOCALITY_MODELS}")
        if self.reference not in REFERENCES:
            raise InputError(f"duration reference {self.reference!r}", field="speed.reference",
                             fix=f"use one of {REFERENCES}")
        if self.reference == "packed" and self.locality not in (None, "sched2", "gavel"):
            raise InputError(f"reference 'packed' with locality {self.locality!r}",
                             field="speed.reference",
                             fix="the packed reading applies to the sched2 and gavel models")
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

    @classmethod
    def for_workload(cls, workload: Instance) -> SpeedModel:
        """:meth:`default_for` the workload's problem; trace-derived workloads (provenance
        generator ``instances.traces``) read their recorded durations as the packed
        placement's time (``reference="packed"``), so locality is not applied twice."""
        base = cls.default_for(workload.problem)
        traced = (workload.provenance or {}).get("generator") == "instances.traces"
        if traced and base.locality in ("sched2", "gavel"):
            return replace(base, reference="packed")
        return base

    def bind(self, workload: Instance) -> BoundSpeed:
        """Check the workload has what these models need and precompute per-job data."""
        return BoundSpeed(self, workload)


class BoundSpeed:
    """A :class:`SpeedModel` prepared for one workload (per-job work, sensitivities)."""

    def __init__(self, model: SpeedModel, workload: Instance) -> None:
        self.model = model
        self.cluster = workload.cluster
        self.gpu_speed = self.cluster.gpu_speed if model.gpu_speed else None
        self._speeds = self.gpu_speed.tolist() if self.gpu_speed is not None else None
        self.interference = model.interference is not None
        self.linear = model.interference == "horus-linear"
        if model.locality is not None and model.locality not in ("liquid", "liquid_distance"):
            group = (self.cluster.gpu_node if model.locality == "genie"
                     else self.cluster.gpu_locality_group)
            self._groups = group.tolist()
            self._max_group = int(np.bincount(group).max()) if len(group) else 1
        self._packed: dict[tuple[str, int], float] = {}
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
        if self.interference and not self.linear:
            from ..problems.horus import BUILTIN_INTERFERENCE, parse_horus_params
            functions = (parse_horus_params(workload.params).interference
                         if workload.problem == "horus" else BUILTIN_INTERFERENCE)
            missing = sorted(set(self.cluster.gpu_type) - set(functions))
            if missing:
                raise InputError(f"no interference function for GPU type {missing[0]!r}",
                                 field="params.interference",
                                 fix=f"use GPU types {sorted(functions)}")
            self.functions = tuple(functions[t] for t in self.cluster.gpu_type)
            self._fcoef = [(*f.quadratic, *f.line) for f in self.functions]
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
            from ..problems.genie import task_of
            from ..problems.genie.model import Shape, latency
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
            if len(counts) == 1:  # one server: no remote peer (locality_slowdown gives 1.0)
                return 1.0
            return locality_slowdown(self._sens[job.id], counts)
        if loc == "gavel":
            n = int(counts.sum())
            by_scale = self._gavel[job.model]
            scales = sorted(int(s) for s in by_scale)
            usable = [s for s in scales if s <= n] or scales[:1]
            ratio = max(1.0, by_scale[str(usable[-1])]) if n > 1 else 1.0
            return 1.0 + (ratio - 1.0) * remote_peer_share(counts)
        from ..problems.genie import task_of
        from ..problems.genie.model import Shape, latency
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
            # SCHED² / Gavel: GPUs per locality group of the topology graph (the server
            # unless the graph's locality_level says otherwise); GENIE shapes are per server.
            if self.model.locality is None:
                slow = 1.0
            else:
                groups = self._groups
                per: dict[int, int] = {}
                for g in gpus:
                    k = groups[g]
                    per[k] = per.get(k, 0) + 1
                counts = np.array([per[k] for k in sorted(per)], dtype=np.int64)
                slow = self.locality(job, counts)
                if self.model.reference == "packed":
                    slow /= self._packed_slowdown(job, int(counts.sum()))
        speed = (min(self._speeds[g] for g in gpus) if self._speeds is not None and len(gpus)
                 else 1.0)
        return speed / slow, slow

    def _packed_slowdown(self, job: Job, n: int) -> float:
        """Locality slowdown of ``job``'s packed placement: full servers, then the rest."""
        key = (job.id, n)
        if key not in self._packed:
            m = self._max_group
            counts = np.array([m] * (n // m) + ([n % m] if n % m else []), dtype=np.int64)
            self._packed[key] = self.locality(job, counts)
        return self._packed[key]

    # ------------------------------------------------------------------ dynamic part
    def interference_factor(self, own_util: float, gpus: np.ndarray,
                            cum_util: np.ndarray) -> float:
        """min over the job's GPUs of (1 + f(u_j)) / (1 + f(U_g)); utilizations in percent.

        ``horus-linear``: min over the job's GPUs of min(1, 100 / U_g).
        """
        best = 1.0
        if self.linear:
            for g in gpus:
                x = cum_util[g]
                if x > 100.0:
                    best = min(best, 100.0 / x)
            return best
        u = own_util / 100.0
        coef = self._fcoef
        for g in gpus:
            a2, a1, a0, slope, intercept = coef[g]
            # f on a scalar, the same float operations as InterferenceFunction.__call__
            fu = (a2 * u + a1) * u + a0 if u > 1.0 else slope * u + intercept
            x = cum_util[g] / 100.0
            fx = (a2 * x + a1) * x + a0 if x > 1.0 else slope * x + intercept
            best = min(best, (1.0 + fu) / (1.0 + fx))
        return best


def describe(model: SpeedModel) -> Mapping[str, Any]:
    """The model as plain data (written next to simulation results)."""
    return {"locality": model.locality, "interference": model.interference,
            "gpu_speed": model.gpu_speed, "gavel_gpu": model.gavel_gpu,
            "reference": model.reference}
