"""GENIE's instance parameters, platform and tasks: what the problem, its models and its
rate model read from an instance (parsed once, checked with one-line input errors)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InputError
from ..params_cache import kept_per_object
from .coefficients import ModelCoefficients, load_default_coefficients
from .model import Platform, Task

if TYPE_CHECKING:
    from ...instance import Instance
    from ...jobs import Job

DEFAULT_THETA = 0.4


@dataclass(frozen=True)
class GenieParams:
    """Parsed ``params`` of a GENIE instance."""

    theta: float
    coefficients: Mapping[str, ModelCoefficients]


@kept_per_object
def parse_genie_params(params: Mapping[str, Any]) -> GenieParams:
    """Validate the ``params`` object of a GENIE instance (kept per object: a simulator
    and its policies parse the same object at every event)."""
    known = {"theta", "coefficients"}
    for key in params:
        if key not in known:
            raise InputError(f"unknown parameter {key!r}", field=f"params.{key}",
                             fix=f"use only {', '.join(sorted(known))}")
    theta = params.get("theta", DEFAULT_THETA)
    if not isinstance(theta, int | float) or isinstance(theta, bool) or not (
            math.isfinite(theta) and theta >= 0):
        raise InputError(f"theta = {theta!r}", field="params.theta",
                         fix="θ of Eq. 10 is a number >= 0 (the paper uses 0.4)")
    raw = params.get("coefficients")
    if raw is None:
        coefs = load_default_coefficients()
    else:
        if not isinstance(raw, Mapping):
            raise InputError("coefficients is not an object", field="params.coefficients",
                             fix="map each model name to its coefficient fields")
        coefs = {}
        for name, entry in raw.items():
            if not isinstance(entry, Mapping):
                raise InputError("not an object", field=f"params.coefficients.{name}",
                                 fix="give k0, k1, k2, gamma, lam, nu, b_min, b_sat, "
                                     "infer_speedup")
            try:
                coefs[name] = ModelCoefficients.from_dict(entry)
            except (TypeError, ValueError) as exc:
                raise InputError(str(exc), field=f"params.coefficients.{name}",
                                 fix="see docs/genie-model.md for the coefficient fields"
                                 ) from None
    return GenieParams(float(theta), coefs)


_PLATFORMS: dict[tuple[int, float], tuple[Any, Platform]] = {}


def platform_of(instance: Instance, theta: float = DEFAULT_THETA) -> Platform:
    """The platform ⟨N, G, θ⟩ of a homogeneous cluster; InputError when it is not one.

    Kept per cluster object (clusters are immutable): every snapshot of a simulation
    shares its workload's cluster.
    """
    cluster = instance.cluster
    hit = _PLATFORMS.get((id(cluster), theta))
    if hit is not None and hit[0] is cluster:
        return hit[1]
    platform = _platform(cluster, theta)
    if len(_PLATFORMS) >= 64:
        _PLATFORMS.clear()
    _PLATFORMS[(id(cluster), theta)] = (cluster, platform)
    return platform


def _platform(cluster: Any, theta: float) -> Platform:
    counts = cluster.node_gpu_count
    if counts.size == 0 or counts.min() < 1:
        raise InputError("a server has no GPU", field="cluster.nodes",
                         fix="GENIE needs every server to hold the same number (>= 1) of GPUs")
    if counts.min() != counts.max():
        n = int(np.argmax(counts != counts[0]))
        raise InputError(
            f"server {cluster.node_ids[n]!r} has {int(counts[n])} GPUs, server "
            f"{cluster.node_ids[0]!r} has {int(counts[0])}",
            field=f"cluster.nodes[{n}].gpus",
            fix="GENIE needs a homogeneous platform: the same GPU count on every server")
    types = set(cluster.gpu_type)
    if len(types) > 1:
        raise InputError(f"GPU types {sorted(types)} are mixed", field="cluster.nodes[].gpus",
                         fix="GENIE's coefficients describe one GPU type: use one type")
    return Platform(cluster.num_nodes, int(counts[0]), theta)


def task_of(job: Job) -> Task:
    """The performance-model task of a GENIE job (fields checked by ``check_instance``)."""
    return Task(job.model, job.kind, float(job.batch_size), float(job.iterations))

